#include "cli/predict_command.h"

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/diagnostics.h"
#include "cli/exit_codes.h"
#include "cli/run_common.h"
#include "cli/run_io.h"
#include "runtime/base/output_file.h"
#include "runtime/base/printable.h"
#include "runtime/data/npy.h"

namespace ipu::cli {
namespace {

// Creates --output-dir if needed (not its parent: check_outputs made sure that exists), and
// checks the files it will receive, one per output named, before the model runs.
int prepare_output_dir(const RunFlags& f, const std::vector<std::string>& output_names) {
  if (f.output_dir.empty()) return kExitOk;
  std::error_code ec;
  std::filesystem::create_directory(f.output_dir, ec);
  if (ec)
    return fail(ipurun_tool(), io_error(f.output_dir + ": cannot create directory: " + ec.message()),
                kExitIoError);
  for (const auto& [name, path] : output_dir_paths(f.output_dir, output_names)) {
    Status writable = check_output_file(path);
    if (!writable.ok()) return fail(ipurun_tool(), writable, kExitIoError);
  }
  return kExitOk;
}

// Predictions nobody asked to keep are computed and dropped: say so, so that a user who left out
// --output does not look for a file.
void note_unwritten_predictions(const RunFlags& f) {
  if (f.output.empty() && f.output_dir.empty())
    print_note(ipurun_tool(),
               "the predictions were not written: give --output FILE or --output-dir DIR to keep them");
}

// predict --input: every model input from a file, every output to --output or --output-dir.
int run_predict_inputs(const RunFlags& f, Loaded& loaded) {
  const format::Executable& exe = loaded.session->executable();
  if (!f.output.empty() && exe.outputs_size() != 1) {
    return fail(ipurun_tool(),
                invalid_argument("--output takes one array, the model has " +
                                 std::to_string(exe.outputs_size()) + " outputs; use --output-dir"),
                kExitUsage);
  }
  std::vector<std::string> output_names;
  for (const auto& io : exe.outputs())
    output_names.push_back(io.name());
  if (int code = prepare_output_dir(f, output_names)) return code;
  auto inputs = read_inputs(f.inputs, exe);
  if (!inputs.ok()) return fail(ipurun_tool(), inputs.status(), input_exit_code(inputs.status()));
  auto result = loaded.session->infer(*inputs);
  if (!result.ok())
    return fail(ipurun_tool(), with_origin(result.status(), loaded.origin), input_exit_code(result.status()));
  nlohmann::json outputs = nlohmann::json::array();
  const std::map<std::string, std::string> dir_paths = output_dir_paths(f.output_dir, output_names);
  for (int j = 0; j < exe.outputs_size(); ++j) {
    const std::string& name = exe.outputs(j).name();
    const data::NpyArray& array = result->outputs[static_cast<size_t>(j)];
    const std::string path = !f.output_dir.empty() ? dir_paths.at(name) : f.output;
    if (!path.empty()) {
      Status written = write_output(path, array, name);
      if (!written.ok()) return fail(ipurun_tool(), written, kExitIoError);
    }
    outputs.push_back({{"name", name},
                       {"dtype", array.dtype},
                       {"shape", array.shape},
                       {"file", path.empty() ? nlohmann::json() : nlohmann::json(path)}});
  }
  note_unwritten_predictions(f);
  if (f.json) {
    nlohmann::json out = run_json("predict", loaded);
    out["inputs"] = f.inputs;
    out["samples"] = result->samples;
    out["outputs"] = outputs;
    out["seconds"] = result->seconds;
    out["samples_per_second"] = static_cast<double>(result->samples) / result->seconds;
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    // Names come from models: a NUL or an escape sequence prints as \xNN (runtime/base/printable.h).
    for (const auto& o : outputs) {
      std::printf("%s: shape %s%s%s\n", printable(o["name"].get<std::string>()).c_str(),
                  o["shape"].dump().c_str(), o["file"].is_null() ? "" : " -> ",
                  o["file"].is_null() ? "" : printable(o["file"].get<std::string>()).c_str());
    }
  }
  return kExitOk;
}

} // namespace

CLI::App* add_predict_command(CLI::App& app, RunFlags& flags) {
  CLI::App* predict = app.add_subcommand("predict", "Predict (Keras predict)");
  add_run_flags(predict, flags);
  auto* input =
      predict->add_option("--input", flags.inputs,
                          "A model input as [NAME=]FILE (.npy, or an ONNX TensorProto .pb); repeat for each "
                          "input (bare files fill the inputs in order); replaces --data");
  auto* data_option = predict->get_option("--data");
  input->excludes(data_option);
  auto* output =
      predict->add_option("--output", flags.output, "Write the predictions to FILE (.npy, or .pb)");
  predict->add_option("--output-dir", flags.output_dir, "Write the predictions to DIR/<output name>.npy")
      ->excludes(output);
  return predict;
}

int run_predict(const RunFlags& f, collectives::Collectives* job) {
  if (int code = check_outputs(f)) return code;
  Loaded loaded;
  if (int code = load(f, loaded, job)) return code;
  if (f.inputs.empty() && f.data.empty()) {
    const format::Executable& exe = loaded.session->executable();
    if (exe.inputs_size() > 0) {
      print_error(ipurun_tool(),
                  "predict needs --data or --input: the samples to predict (the model's inputs: " +
                      input_names(exe) + ")");
      return kExitUsage;
    }
  }
  if (!f.inputs.empty() || f.data.empty()) return run_predict_inputs(f, loaded);
  const format::Executable& exe = loaded.session->executable();
  const std::string output_name = exe.outputs_size() > 0 ? exe.outputs(0).name() : "predictions";
  if (int code = prepare_output_dir(f, {output_name})) return code;
  auto result = loaded.session->predict(loaded.data);
  if (!result.ok()) return fail(ipurun_tool(), with_origin(result.status(), loaded.origin));
  const std::string output =
      f.output_dir.empty() ? f.output : output_dir_paths(f.output_dir, {output_name}).at(output_name);
  if (!output.empty()) {
    // Predictions of a FLOAT16 output are binary16 values: written as float16 (format::ModelIo).
    const bool half = exe.outputs_size() > 0 && exe.outputs(0).dtype() == "f2";
    Status written = write_output(output,
                                  half ? data::make_npy_f16(result->shape, result->values.data())
                                       : data::make_npy_f32(result->shape, result->values.data()),
                                  output_name);
    if (!written.ok()) return fail(ipurun_tool(), written, kExitIoError);
  }
  note_unwritten_predictions(f);
  if (f.json) {
    nlohmann::json out = run_json("predict", loaded);
    out["data"] = loaded.data.source;
    out["samples"] = result->samples;
    out["shape"] = result->shape;
    out["output"] = output.empty() ? nlohmann::json() : nlohmann::json(output);
    out["seconds"] = result->seconds;
    out["samples_per_second"] = static_cast<double>(result->samples) / result->seconds;
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::printf("predicted %lld samples%s%s\n", static_cast<long long>(result->samples),
                output.empty() ? "" : " into ", output.c_str());
  }
  return kExitOk;
}

} // namespace ipu::cli
