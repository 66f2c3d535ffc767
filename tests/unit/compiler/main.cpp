#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "compiler/ops/op_table.h"
#include "runtime/kernels/blas_core.h"

// The tests build graphs directly, not only through compile_model, so they install the op table
// first as the driver does; folded constants come from the kernels the tools run.
int main(int argc, char** argv) {
  ipu::kernels::rerun_with_best_blas_kernels(argv);
  ipu::ir::install_op_table(ipu::ops::op_definitions());
  return doctest::Context(argc, argv).run();
}
