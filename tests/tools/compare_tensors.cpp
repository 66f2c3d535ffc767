// compare_tensors GOT WANT [--rtol R] [--atol A]: compares two arrays (.npy or ONNX TensorProto
// .pb) the way ONNX's backend tests do (numpy.testing.assert_allclose: |got - want| <= atol +
// rtol * |want| for every element, NaN matching NaN). float16 arrays compare by their values with
// the same defaults: rtol 1e-3 is about one binary16 step (2^-10 relative at most), the tolerance
// ONNX's runner applies to its float16 tests too. Prints one JSON object {ok, reason,
// max_abs, max_rel, elements} and exits 0 if the arrays match, 1 if not, 2 on bad usage or files.
// compare_tensors --run RUN_JSON DATA_DIR compares every output of an `ipurun predict --json` run
// with an ONNX test data set's output_I.pb, in one process. Used by scripts/conformance.sh.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/base/half.h"
#include "runtime/data/npy.h"
#include "runtime/data/tensor_proto.h"

namespace {

struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-7;
};

ipu::StatusOr<ipu::data::NpyArray> read_array(const std::string& path) {
  const bool pb = path.size() >= 3 && path.compare(path.size() - 3, 3, ".pb") == 0;
  return pb ? ipu::data::read_tensor_proto_file(path) : ipu::data::read_npy(path);
}

// Element values as doubles; NaN and infinities kept (to_floats rejects them for inputs).
std::vector<double> values_of(const ipu::data::NpyArray& a) {
  std::vector<double> out(a.element_count());
  for (size_t i = 0; i < out.size(); ++i) {
    const char* p = a.data.data() + i * ipu::data::npy_itemsize(a.dtype);
    auto load = [&](auto zero) {
      decltype(zero) v;
      std::memcpy(&v, p, sizeof v);
      return static_cast<double>(v);
    };
    if (a.dtype == "f4")
      out[i] = load(float{});
    else if (a.dtype == "f8")
      out[i] = load(double{});
    else if (a.dtype == "i8")
      out[i] = load(int64_t{});
    else if (a.dtype == "i4")
      out[i] = load(int32_t{});
    else if (a.dtype == "i2")
      out[i] = load(int16_t{});
    else if (a.dtype == "i1")
      out[i] = load(int8_t{});
    else if (a.dtype == "u8")
      out[i] = load(uint64_t{});
    else if (a.dtype == "u4")
      out[i] = load(uint32_t{});
    else if (a.dtype == "u2")
      out[i] = load(uint16_t{});
    else if (a.dtype == "f2")
      out[i] = ipu::half_bits_to_float(static_cast<uint16_t>(load(uint16_t{})));
    else
      out[i] = load(uint8_t{}); // u1, b1
  }
  return out;
}

// The comparison of one pair as a JSON object; nullopt (after a message) if a file cannot be read.
std::optional<nlohmann::json> compare_files(const std::string& got_path, const std::string& want_path,
                                            const Tolerance& tolerance) {
  auto got = read_array(got_path);
  auto want = read_array(want_path);
  for (const auto* a : {&got, &want}) {
    if (!a->ok()) {
      std::fprintf(stderr, "compare_tensors: %s\n", a->status().message().c_str());
      return std::nullopt;
    }
  }
  nlohmann::json out = {
      {"ok", false}, {"reason", ""}, {"max_abs", 0.0}, {"max_rel", 0.0}, {"elements", want->element_count()}};
  if (got->shape != want->shape) {
    out["reason"] =
        "shape " + nlohmann::json(got->shape).dump() + " != " + nlohmann::json(want->shape).dump();
    return out;
  }
  const std::vector<double> g = values_of(*got), w = values_of(*want);
  bool ok = true;
  double max_abs = 0, max_rel = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(g[i]) && std::isnan(w[i])) continue;
    if (std::isinf(w[i]) && g[i] == w[i]) continue;
    const double err = std::abs(g[i] - w[i]);
    if (!(err <= tolerance.atol + tolerance.rtol * std::abs(w[i]))) ok = false;
    if (!std::isnan(err)) {
      max_abs = std::max(max_abs, err);
      max_rel = std::max(max_rel, err / std::max(std::abs(w[i]), 1e-30));
    } else {
      max_abs = INFINITY;
    }
  }
  out["ok"] = ok;
  out["max_abs"] = max_abs;
  out["max_rel"] = max_rel;
  if (!ok) out["reason"] = "values differ";
  return out;
}

// --run RUN_JSON DATA_DIR: the outputs `ipurun predict --json` listed, in model order, against
// DATA_DIR/output_0.pb, output_1.pb, ... One line "output I: {...}" per output, up to the first
// that differs.
int compare_run(const std::string& run_json, const std::string& data_dir, const Tolerance& tolerance) {
  std::ifstream in(run_json);
  const nlohmann::json run = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (run.is_discarded() || !run.contains("outputs") || !run["outputs"].is_array()) {
    std::fprintf(stderr, "compare_tensors: %s: not ipurun's --json output with an \"outputs\" list\n",
                 run_json.c_str());
    return 2;
  }
  for (size_t i = 0; i < run["outputs"].size(); ++i) {
    const auto& file = run["outputs"][i]["file"];
    if (!file.is_string()) {
      std::fprintf(stderr, "compare_tensors: %s: output %zu has no \"file\"\n", run_json.c_str(), i);
      return 2;
    }
    auto result =
        compare_files(file.get<std::string>(), data_dir + "/output_" + std::to_string(i) + ".pb", tolerance);
    if (!result) return 2;
    std::printf("output %zu: %s\n", i, result->dump().c_str());
    if (!(*result)["ok"].get<bool>()) return 1;
  }
  return 0;
}

} // namespace

// NOLINTNEXTLINE(bugprone-exception-escape): a test tool; an escaping exception aborts, which fails the test.
int main(int argc, char** argv) {
  const bool run = argc > 1 && std::strcmp(argv[1], "--run") == 0;
  const int first_flag = run ? 4 : 3; // two flags with their values may follow the operands
  if (argc < first_flag || argc > first_flag + 4 || (argc - first_flag) % 2 != 0) {
    std::fprintf(stderr, "usage: compare_tensors GOT WANT [--rtol R] [--atol A]\n"
                         "       compare_tensors --run RUN_JSON DATA_DIR [--rtol R] [--atol A]\n");
    return 2;
  }
  Tolerance tolerance;
  for (int i = first_flag; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--rtol")
      tolerance.rtol = std::atof(argv[i + 1]);
    else if (flag == "--atol")
      tolerance.atol = std::atof(argv[i + 1]);
    else {
      std::fprintf(stderr, "compare_tensors: unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  if (run) return compare_run(argv[2], argv[3], tolerance);
  auto result = compare_files(argv[1], argv[2], tolerance);
  if (!result) return 2;
  std::printf("%s\n", result->dump().c_str());
  return (*result)["ok"].get<bool>() ? 0 : 1;
}
