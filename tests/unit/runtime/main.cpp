#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "runtime/kernels/blas_core.h"

// The kernels the tools run (runtime/kernels/blas_core.h): the golden executables' outputs are
// theirs.
int main(int argc, char** argv) {
  ipu::kernels::rerun_with_best_blas_kernels(argv);
  return doctest::Context(argc, argv).run();
}
