// What the fusion pass tests share: an ONNX model compiled for inference at batch 2, and a count
// of the executable's vertices of one codelet.
#pragma once

#include <doctest/doctest.h>

#include <string>

#include "compiler/driver/compile.h"
#include "tests/unit/compiler/test_support.h"

namespace ipu::testing {

inline compiler::CompileResult compile_for_inference(const std::string& onnx_model) {
  auto options = small_target_options(2);
  options.model_path = "test.onnx";
  options.mode = compiler::Mode::kInfer;
  auto compiled = compiler::compile_model(onnx_model, options);
  REQUIRE_MESSAGE(compiled.ok(), compiled.status().message());
  return std::move(*compiled);
}

inline int vertices_of(const format::Executable& exe, format::Codelet codelet) {
  int count = 0;
  for (const auto& cs : exe.compute_sets()) {
    for (const auto& v : cs.vertices())
      count += v.codelet() == static_cast<uint32_t>(codelet);
  }
  return count;
}

} // namespace ipu::testing
