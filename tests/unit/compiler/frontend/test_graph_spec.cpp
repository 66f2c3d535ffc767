// The JSON graph spec front end (compiler/frontend/graph_spec.{h,cpp}): valid Sequential and
// Functional specs parse into the expected ModelSpec, every validation error is reported with the
// file and (where there is one) the layer, several problems are reported together, the pipeline
// stage rules hold, and build_forward_graph turns a spec into the forward IR graph.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <functional>
#include <string>
#include <vector>

#include "compiler/frontend/graph_spec.h"

namespace {

using ipu::StatusCode;
using ipu::frontend::apply_stage_assignment;
using ipu::frontend::build_forward_graph;
using ipu::frontend::ModelSpec;
using ipu::frontend::parse_graph_spec;

const std::string kPath = "specs/model.json";

ipu::StatusOr<ModelSpec> parse(const std::string& text) {
  return parse_graph_spec(text, kPath);
}

ModelSpec parse_ok(const std::string& text) {
  auto spec = parse(text);
  INFO(spec.status().message());
  REQUIRE(spec.ok());
  return *spec;
}

std::vector<std::string> lines(const std::string& message) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= message.size()) {
    size_t end = message.find('\n', start);
    if (end == std::string::npos) end = message.size();
    out.push_back(message.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// The spec is rejected with `code` (InvalidArgument unless given); every line of the message
// starts with the file; each fragment appears on some line.
std::string expect_problems(const std::string& text, std::initializer_list<std::string> fragments,
                            StatusCode code = StatusCode::kInvalidArgument) {
  auto spec = parse(text);
  INFO("spec: " << text);
  REQUIRE_FALSE(spec.ok());
  std::string message = spec.status().message();
  INFO("message: " << message);
  CHECK(spec.status().code() == code);
  // Every line starts with the file: "PATH: ..." or, for JSON syntax, "PATH:LINE:COLUMN: ...".
  for (const std::string& line : lines(message))
    CHECK(line.rfind(kPath + ":", 0) == 0);
  for (const std::string& fragment : fragments) {
    CAPTURE(fragment);
    CHECK(message.find(fragment) != std::string::npos);
  }
  return message;
}

// A sequential spec around `layers` (a JSON array body) with extra top-level members.
std::string seq(const std::string& layers, const std::string& extra = "") {
  return R"({"name": "m", "type": "sequential", "input": {"name": "image", "shape": [2, 3]}, "layers": [)" +
         layers + "]" + (extra.empty() ? "" : ", " + extra) + "}";
}

// A functional spec around `nodes` with the given outputs and extra members.
std::string func(const std::string& nodes, const std::string& outputs = R"(["out"])",
                 const std::string& extra = "") {
  return R"({"name": "f", "type": "functional", "inputs": [{"name": "image", "shape": [2, 3]}], "nodes": [)" +
         nodes + "], \"outputs\": " + outputs + (extra.empty() ? "" : ", " + extra) + "}";
}

const std::string kFlatten = R"({"name": "flat", "type": "Flatten"})";
std::string dense(const std::string& name, int units = 4, const std::string& more = "") {
  return R"({"name": ")" + name + R"(", "type": "Dense", "units": )" + std::to_string(units) +
         (more.empty() ? "" : ", " + more) + "}";
}
std::string fnode(const std::string& name, const std::string& input, const std::string& more = "") {
  return R"({"name": ")" + name + R"(", "type": "Dense", "inputs": [")" + input + R"("], "units": 4)" +
         (more.empty() ? "" : ", " + more) + "}";
}
const std::string kFflatten = R"({"name": "flat", "type": "Flatten", "inputs": ["image"]})";

// Runs `body` in a child process and describes how it ended, so that a test of a crash (stack
// overflow, or an allocation that a sanitizer turns into an abort) fails the test, not the
// binary. "exit 0" means `body` returned true; an escaping exception is "exit 2".
std::string run_in_child(const std::function<bool()>& body) {
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // doctest's crash handlers would report from the child too: die plainly instead.
    for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE})
      signal(sig, SIG_DFL);
    int code = 2;
    try {
      code = body() ? 0 : 1;
    } catch (...) {
    }
    _exit(code);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  return WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                             : "exit " + std::to_string(WEXITSTATUS(status));
}

// ---------------------------------------------------------------------------------------------
// Valid specs

TEST_CASE("graph spec: a sequential spec parses with every attribute") {
  const ModelSpec spec = parse_ok(R"({
    "name": "mlp", "type": "sequential",
    "input": {"name": "image", "shape": [28, 28, 1], "dtype": "float32"},
    "layers": [
      {"name": "flatten", "type": "Flatten"},
      {"name": "d1", "type": "Dense", "units": 16, "activation": "relu"},
      {"name": "d2", "type": "Dense", "units": 8, "activation": "tanh", "use_bias": false,
       "kernel_initializer": {"type": "glorot_uniform", "seed": 42}},
      {"name": "d3", "type": "Dense", "units": 4, "activation": "linear",
       "kernel_initializer": "zeros", "bias_initializer": {"type": "glorot_uniform", "seed": 3}},
      {"name": "out", "type": "Dense", "units": 10, "activation": "softmax"}
    ],
    "loss": {"type": "sparse_categorical_crossentropy", "from_logits": false},
    "optimizer": {"type": "sgd", "learning_rate": 0.05, "momentum": 0.9}
  })");
  CHECK(spec.path == kPath);
  CHECK(spec.name == "mlp");
  CHECK(spec.input.name == "image");
  CHECK(spec.input.shape == std::vector<int64_t>{28, 28, 1});
  REQUIRE(spec.layers.size() == 5);
  CHECK(spec.layers[0].type == "Flatten");
  CHECK(spec.layers[0].inputs == std::vector<std::string>{"image"});
  CHECK(spec.layers[1].inputs == std::vector<std::string>{"flatten"});
  CHECK(spec.layers[4].inputs == std::vector<std::string>{"d3"});
  CHECK(spec.layers[1].units == 16);
  CHECK(spec.layers[1].activation == "relu");
  CHECK(spec.layers[1].use_bias);
  CHECK(spec.layers[1].kernel_initializer.type == "glorot_uniform");
  CHECK(spec.layers[1].kernel_initializer.seed == 0);
  CHECK(spec.layers[1].bias_initializer.type == "zeros");
  CHECK_FALSE(spec.layers[2].use_bias);
  CHECK(spec.layers[2].kernel_initializer.seed == 42);
  CHECK(spec.layers[3].activation == "none"); // "linear" is an alias
  CHECK(spec.layers[3].kernel_initializer.type == "zeros");
  CHECK(spec.layers[3].bias_initializer.type == "glorot_uniform");
  CHECK(spec.layers[3].bias_initializer.seed == 3);
  CHECK(spec.output == "out");
  CHECK_FALSE(spec.loss.from_logits);
  CHECK(spec.optimizer.learning_rate == doctest::Approx(0.05));
  CHECK(spec.optimizer.momentum == doctest::Approx(0.9));
  CHECK(spec.num_stages == 1);
  CHECK(spec.stages == std::vector<int>(5, 0));
}

TEST_CASE("graph spec: a learning rate may be a Keras schedule as Keras serialises it") {
  const std::string layers = kFlatten + ", " + dense("out");
  const ModelSpec spec = parse_ok(seq(layers, R"("optimizer": {"type": "adam", "learning_rate":
      {"module": "keras.optimizers.schedules", "class_name": "CosineDecay", "registered_name": null,
       "config": {"initial_learning_rate": 0.0, "decay_steps": 1000, "alpha": 0.0, "name": "CosineDecay",
                  "warmup_target": 0.001, "warmup_steps": 100}}})"));
  CHECK(spec.optimizer.learning_rate == 0.0f);
  CHECK(spec.optimizer.learning_rate_schedule ==
        "cosine:initial_learning_rate=0,decay_steps=1000,alpha=0,warmup_target=0.001,warmup_steps=100");
  CHECK(parse_ok(seq(layers, R"("optimizer": {"type": "sgd", "learning_rate": {"class_name":
      "PiecewiseConstantDecay", "config": {"boundaries": [10, 20], "values": [0.1, 0.01, 0.001]}}})"))
            .optimizer.learning_rate_schedule ==
        "piecewise:boundaries=10/20,values=0.10000000000000001/0.01/0.001");
  expect_problems(
      seq(layers, R"("optimizer": {"type": "sgd", "learning_rate": {"class_name": "InverseTimeDecay",
      "config": {"initial_learning_rate": 0.1}}})"),
      {"specs/model.json: optimizer: learning_rate: unsupported schedule \"InverseTimeDecay\""},
      StatusCode::kUnsupported);
  expect_problems(
      seq(layers, R"("optimizer": {"type": "sgd", "learning_rate": {"class_name": "ExponentialDecay",
      "config": {"initial_learning_rate": 0.1, "decay_steps": 10}}})"),
      {"optimizer: learning_rate: learning-rate schedule", "exponential needs decay_rate="});
  expect_problems(
      seq(layers, R"("optimizer": {"type": "sgd", "learning_rate": {"class_name": "PolynomialDecay",
      "config": {"decay_steps": 10}}})"),
      {"PolynomialDecay needs 'initial_learning_rate'"});
}

TEST_CASE("graph spec: a functional spec parses") {
  const ModelSpec spec = parse_ok(func(kFflatten + ", " + fnode("h", "flat", R"("activation": "sigmoid")") +
                                       ", " + fnode("out", "h", R"("activation": "none")")));
  CHECK(spec.name == "f");
  CHECK(spec.input.name == "image");
  REQUIRE(spec.layers.size() == 3);
  CHECK(spec.layers[0].inputs == std::vector<std::string>{"image"});
  CHECK(spec.layers[2].inputs == std::vector<std::string>{"h"});
  CHECK(spec.layers[1].activation == "sigmoid");
  CHECK(spec.output == "out");
  // No loss or optimizer: the defaults.
  CHECK(spec.loss.from_logits);
  CHECK(spec.optimizer.learning_rate == doctest::Approx(0.01));
  CHECK(spec.optimizer.momentum == 0.0f);
  CHECK(spec.stages == std::vector<int>(3, 0));
}

TEST_CASE("graph spec: defaults for names and a loss given as a string") {
  const ModelSpec spec = parse_ok(R"({"type": "sequential", "input": {"shape": [4]},
    "layers": [{"type": "Dense", "units": 2}, {"type": "Dense", "units": 3}],
    "loss": "sparse_categorical_crossentropy"})");
  CHECK(spec.name == "model");
  CHECK(spec.input.name == "input");
  CHECK(spec.layers[0].name == "layer0");
  CHECK(spec.layers[1].name == "layer1");
  CHECK(spec.layers[1].inputs == std::vector<std::string>{"layer0"});
  CHECK(spec.output == "layer1");
  CHECK_FALSE(spec.loss.from_logits); // Keras's default for the string form
}

TEST_CASE("graph spec: a functional output may be any layer, and layers may branch") {
  const ModelSpec spec = parse_ok(
      func(kFflatten + ", " + fnode("a", "flat") + ", " + fnode("b", "flat") + ", " + fnode("out", "a"),
           R"(["b"])"));
  CHECK(spec.output == "b");
  CHECK(spec.layers[2].inputs == std::vector<std::string>{"flat"});
}

// ---------------------------------------------------------------------------------------------
// Errors that stop parsing at once

TEST_CASE("graph spec: malformed documents") {
  // Where the text stops being JSON, as PATH:LINE:COLUMN of the last character read (1-based, as
  // nlohmann's own messages count), and what the parser expected.
  expect_problems("{not json", {"specs/model.json:1:3: not valid JSON: ", "invalid literal"});
  expect_problems("", {"specs/model.json:1:1: not valid JSON: ", "unexpected end of input"});
  expect_problems("{\n  \"type\": \"sequential\",\n  \"layers\": [1,,2]\n}",
                  {"specs/model.json:3:16: not valid JSON: "});
  expect_problems("{\"type\": \"sequential\"",
                  {"specs/model.json:1:22: not valid JSON: ", "unexpected end of input"});
  // A number no double holds is reported where it ends, like any other error (the fuzzer found that
  // json::parse throws it as out_of_range, without a position).
  expect_problems("{\n  \"layers\": [4.9e1300]}",
                  {"specs/model.json:2:21: not valid JSON: ", "number overflow parsing '4.9e1300'"});
  expect_problems("[1, 2]", {"specs/model.json: the spec must be a JSON object"});
  expect_problems("\"sequential\"", {"must be a JSON object"});
  expect_problems(R"({"layers": []})", {"specs/model.json: 'type' must be \"sequential\" or \"functional\""});
  expect_problems(R"({"type": "graph", "layers": []})", {"'type' must be"});
  expect_problems(R"({"type": 3})", {"'type' must be"});
  expect_problems(R"({"type": "sequential", "input": {"shape": [2]}})",
                  {"specs/model.json: missing 'layers' list"});
  // A misspelt top-level key is reported, with the others, rather than silently ignored.
  expect_problems(
      R"({"type": "sequential", "input": {"shape": [2]}, "layers": [], "optimiser": {}, "Loss": 1})",
      {"specs/model.json: unknown top-level key 'Loss' (expected input, inputs, layers, loss, metrics, name, "
       "nodes, "
       "optimizer, outputs, stage_assignment, type)",
       "unknown top-level key 'optimiser'"});
  expect_problems(R"({"type": "sequential", "input": {"shape": [2]}, "layers": {}})",
                  {"missing 'layers' list"});
  expect_problems(R"({"type": "functional", "inputs": [{"shape": [2]}], "outputs": ["x"]})",
                  {"missing 'nodes' list"});
}

// ---------------------------------------------------------------------------------------------
// Every validation problem, with the file and the layer

TEST_CASE("graph spec: input problems") {
  expect_problems(R"({"type": "sequential", "layers": [{"type": "Dense", "units": 1}]})",
                  {"specs/model.json: missing 'input'"});
  expect_problems(
      R"({"type": "sequential", "input": {"name": "x"}, "layers": [{"type": "Dense", "units": 1}]})",
      {"specs/model.json: input: needs a non-empty 'shape'"});
  expect_problems(
      R"({"type": "sequential", "input": {"shape": []}, "layers": [{"type": "Dense", "units": 1}]})",
      {"input: needs a non-empty 'shape'"});
  expect_problems(R"({"type": "sequential", "input": [2, 3], "layers": [{"type": "Dense", "units": 1}]})",
                  {"input: needs a non-empty 'shape'"});
  expect_problems(
      R"({"type": "sequential", "input": {"name": "x", "shape": [2, 0]}, "layers": [{"type": "Dense", "units": 1}]})",
      {"specs/model.json: input 'x': shape dimensions must be positive integers"});
  expect_problems(
      R"({"type": "sequential", "input": {"name": "x", "shape": [2, -1]}, "layers": [{"type": "Dense", "units": 1}]})",
      {"input 'x': shape dimensions must be positive integers"});
  expect_problems(
      R"({"type": "sequential", "input": {"name": "x", "shape": [2.5]}, "layers": [{"type": "Dense", "units": 1}]})",
      {"input 'x': shape dimensions must be positive integers"});
  expect_problems(
      R"({"type": "sequential", "input": {"name": "x", "shape": ["2"]}, "layers": [{"type": "Dense", "units": 1}]})",
      {"input 'x': shape dimensions must be positive integers"});
  // A dtype Keras has but ipucc does not run is unsupported (exit 4), like an ONNX type; one that
  // is not a dtype at all is invalid.
  expect_problems(
      R"({"type": "sequential", "input": {"name": "x", "shape": [2], "dtype": "int8"}, "layers": [{"type": "Dense", "units": 1}]})",
      {"specs/model.json: input 'x': dtype \"int8\" is not supported (float32 only)"},
      StatusCode::kUnsupported);
  expect_problems(
      R"({"type": "sequential", "input": {"name": "x", "shape": [2], "dtype": 4}, "layers": [{"type": "Dense", "units": 1}]})",
      {"specs/model.json: input 'x': 'dtype' must be a string such as \"float32\""});
  expect_problems(R"({"type": "functional", "nodes": [], "outputs": []})",
                  {"specs/model.json: 'inputs' must list exactly one input"});
  expect_problems(
      R"({"type": "functional", "inputs": [{"shape": [1]}, {"shape": [2]}], "nodes": [], "outputs": []})",
      {"'inputs' must list exactly one input"});
  expect_problems(R"({"type": "functional", "inputs": {"shape": [1]}, "nodes": [], "outputs": []})",
                  {"'inputs' must list exactly one input"});
}

TEST_CASE("graph spec: layer problems name the file and the layer") {
  struct Case {
    std::string layers;
    std::string message;
  };
  const Case cases[] = {
      {R"(42)", "specs/model.json: layer 0: must be an object"},
      {R"({"name": "d1"})", "specs/model.json: layer 'd1': missing 'type'"},
      {R"({"name": "d1", "type": 7})", "layer 'd1': missing 'type'"},
      {R"({"type": 7})", "layer 'layer0': missing 'type'"},
      {R"({"name": "c1", "type": "LSTM"})",
       "specs/model.json: layer 'c1' (LSTM): unknown layer type (supported: Add, AveragePooling2D, "
       "BatchNormalization, "
       "Concatenate, Conv2D, Dense, Dropout, Flatten, MaxPool2D, MaxPooling2D, Reshape)"},
      {dense("d1", 4, R"("kernel_sizes": 3)"),
       "specs/model.json: layer 'd1' (Dense): unknown attribute 'kernel_sizes'"},
      {dense("d1", 4, R"("kernel_size": 3)"),
       "specs/model.json: layer 'd1' (Dense): 'kernel_size' does not apply to Dense"},
      {R"({"name": "d1", "type": "Dense"})",
       "specs/model.json: layer 'd1' (Dense): 'units' must be an integer in [1, 16777216]"},
      {dense("d1", 0), "layer 'd1' (Dense): 'units' must be an integer in [1, 16777216]"},
      {dense("d1", -3), "layer 'd1' (Dense): 'units' must be an integer in [1, 16777216]"},
      {R"({"name": "d1", "type": "Dense", "units": 2.5})",
       "layer 'd1' (Dense): 'units' must be an integer in [1, 16777216]"},
      {R"({"name": "d1", "type": "Dense", "units": "8"})",
       "layer 'd1' (Dense): 'units' must be an integer in [1, 16777216]"},
      {dense("d1", 4, R"("activation": "gelu")"), "specs/model.json: layer 'd1' (Dense): unknown activation "
                                                  "\"gelu\" (expected none, relu, sigmoid, tanh or softmax)"},
      {dense("d1", 4, R"("activation": 1)"), "layer 'd1' (Dense): unknown activation 1"},
      {dense("d1", 4, R"("use_bias": "yes")"),
       "specs/model.json: layer 'd1' (Dense): 'use_bias' must be true or false"},
      {dense("d1", 4, R"("kernel_initializer": "he_normal")"),
       "specs/model.json: layer 'd1' (Dense): unknown initializer 'he_normal' (expected glorot_uniform or "
       "zeros)"},
      {dense("d1", 4, R"("bias_initializer": {"type": "ones"})"),
       "layer 'd1' (Dense): unknown initializer 'ones'"},
      {dense("d1", 4, R"("kernel_initializer": 5)"),
       "layer 'd1' (Dense): an initializer is a name or {\"type\": ..., \"seed\": ...}"},
      {dense("d1", 4, R"("kernel_initializer": {"seed": 1})"),
       "layer 'd1' (Dense): an initializer is a name or"},
      {dense("d1", 4, R"("kernel_initializer": {"type": "glorot_uniform", "seed": -1})"),
       "specs/model.json: layer 'd1' (Dense): initializer 'seed' must be a non-negative integer"},
      {dense("d1", 4, R"("kernel_initializer": {"type": "glorot_uniform", "seed": 1.5})"),
       "layer 'd1' (Dense): initializer 'seed' must be a non-negative integer"},
      {R"({"name": "f", "type": "Flatten", "units": 3})",
       "specs/model.json: layer 'f' (Flatten): 'units' does not apply to Flatten"},
      {R"({"name": "f", "type": "Flatten", "activation": "relu"})",
       "layer 'f' (Flatten): 'activation' does not apply to Flatten"},
      {R"({"name": "f", "type": "Flatten", "use_bias": true})",
       "layer 'f' (Flatten): 'use_bias' does not apply to Flatten"},
      {R"({"name": "f", "type": "Flatten", "kernel_initializer": "zeros"})",
       "'kernel_initializer' does not apply to Flatten"},
      {R"({"name": "f", "type": "Flatten", "bias_initializer": "zeros"})",
       "'bias_initializer' does not apply to Flatten"},
      {dense("d1", 4, R"("stage": -1)"),
       "specs/model.json: layer 'd1' (Dense): 'stage' must be an integer in [0, 1023]"},
      {dense("d1", 4, R"("stage": "0")"), "layer 'd1' (Dense): 'stage' must be an integer in [0, 1023]"},
      {dense("d1", 4, R"("stage": 0.5)"), "layer 'd1' (Dense): 'stage' must be an integer in [0, 1023]"},
      {dense("d1", 4, R"("inputs": ["image"])"),
       "specs/model.json: layer 'd1' (Dense): 'inputs' belongs to functional specs; a sequential layer reads "
       "the previous one"},
      {dense("d1") + ", " + dense("d1"), "specs/model.json: layer 'd1' (Dense): name is used twice"},
      {dense("image"), "layer 'image' (Dense): name is used twice"}, // clashes with the input
  };
  for (const Case& c : cases)
    expect_problems(seq(c.layers), {c.message});
}

TEST_CASE("graph spec: functional wiring problems") {
  expect_problems(func(R"({"name": "out", "type": "Dense", "units": 2})"),
                  {"specs/model.json: layer 'out' (Dense): 'inputs' must list exactly one input name"});
  expect_problems(func(R"({"name": "out", "type": "Dense", "units": 2, "inputs": "image"})"),
                  {"layer 'out' (Dense): 'inputs' must list exactly one input name"});
  expect_problems(func(R"({"name": "out", "type": "Dense", "units": 2, "inputs": ["image", "image"]})"),
                  {"layer 'out' (Dense): 'inputs' must list exactly one input name"});
  expect_problems(func(R"({"name": "out", "type": "Dense", "units": 2, "inputs": [1]})"),
                  {"layer 'out' (Dense): 'inputs' must list exactly one input name"});
  expect_problems(
      func(fnode("out", "ghost")),
      {"specs/model.json: layer 'out' (Dense): input 'ghost' is not the model input or an earlier layer"});
  // Reading a later node (a cycle or a forward reference) is the same error.
  expect_problems(func(fnode("a", "out") + ", " + fnode("out", "a")),
                  {"layer 'a' (Dense): input 'out' is not the model input or an earlier layer"});
  expect_problems(func(fnode("out", "out")), {"layer 'out' (Dense): input 'out' is not the model input"});
  expect_problems(func(fnode("out", "image"), R"("out")"),
                  {"specs/model.json: 'outputs' must list exactly one layer name"});
  expect_problems(func(fnode("out", "image"), R"(["out", "out"])"),
                  {"'outputs' must list exactly one layer name"});
  expect_problems(func(fnode("out", "image"), R"([3])"), {"'outputs' must list exactly one layer name"});
  expect_problems(R"({"type": "functional", "inputs": [{"shape": [2]}], "nodes": [)" + fnode("out", "input") +
                      "]}",
                  {"'outputs' must list exactly one layer name"});
  expect_problems(func(fnode("out", "image"), R"(["nope"])"),
                  {"specs/model.json: output 'nope' names no layer"});
  expect_problems(func(""), {"specs/model.json: the model has no layers"});
  expect_problems(seq(""), {"specs/model.json: the model has no layers"});
}

TEST_CASE("graph spec: loss and optimizer problems") {
  const std::string layers = kFlatten + ", " + dense("out");
  // A loss or optimizer Keras has but ipucc does not implement is unsupported (exit 4), as an ONNX
  // op is; a value that names none is invalid (exit 3).
  expect_problems(seq(layers, R"("loss": "hinge")"),
                  {"specs/model.json: loss: unsupported loss \"hinge\" (ipucc trains with "
                   "sparse_categorical_crossentropy, categorical_crossentropy, binary_crossentropy, "
                   "mean_squared_error (mse), mean_absolute_error (mae) or huber)"},
                  StatusCode::kUnsupported);
  expect_problems(seq(layers, R"("loss": {"type": "kl_divergence"})"), {"loss: unsupported loss"},
                  StatusCode::kUnsupported);
  // Each loss takes Keras's arguments for it, and no others.
  expect_problems(seq(layers, R"("loss": {"type": "huber", "from_logits": true})"),
                  {"specs/model.json: loss: unknown argument 'from_logits' for huber"});
  expect_problems(seq(layers, R"("loss": {"type": "binary_crossentropy", "delta": 2})"),
                  {"specs/model.json: loss: unknown argument 'delta' for binary_crossentropy"});
  expect_problems(seq(layers, R"("loss": {"type": "huber", "delta": 0})"),
                  {"specs/model.json: loss: 'delta' must be a positive number"});
  expect_problems(seq(layers, R"("loss": {"from_logits": true})"),
                  {"loss: must be a loss name or {\"type\": NAME, ...}, got an object"});
  expect_problems(seq(layers, R"("loss": 3)"), {"loss: must be a loss name or {\"type\": NAME, ...}, got 3"});
  expect_problems(seq(layers, R"("loss": {"type": "sparse_categorical_crossentropy", "from_logits": "yes"})"),
                  {"specs/model.json: loss: 'from_logits' must be true or false"});
  expect_problems(seq(layers, R"("optimizer": "sgd")"),
                  {"specs/model.json: optimizer: must be {\"type\": NAME, ...}, got \"sgd\""});
  expect_problems(
      seq(layers, R"("optimizer": {"type": "lion"})"),
      {"specs/model.json: optimizer: unsupported optimizer \"lion\" (ipucc trains with sgd, adam, adamw, "
       "rmsprop, adagrad, adamax or lamb)"},
      StatusCode::kUnsupported);
  expect_problems(seq(layers, R"("optimizer": {"type": "sgd", "learning_rate": 0})"),
                  {"specs/model.json: optimizer: 'learning_rate' must be a positive number"});
  expect_problems(seq(layers, R"("optimizer": {"type": "sgd", "learning_rate": -0.1})"),
                  {"'learning_rate' must be a positive number"});
  expect_problems(seq(layers, R"("optimizer": {"type": "sgd", "learning_rate": "0.1"})"),
                  {"'learning_rate' must be a positive number"});
  // Positive as a double but 0 or infinite as the float32 the device computes with.
  expect_problems(seq(layers, R"("optimizer": {"type": "sgd", "learning_rate": 1e-46})"),
                  {"that float32 holds"});
  expect_problems(seq(layers, R"("optimizer": {"type": "sgd", "learning_rate": 1e39})"),
                  {"that float32 holds"});
  CHECK(parse_ok(seq(layers, R"("optimizer": {"type": "sgd", "learning_rate": 1e-44})"))
            .optimizer.learning_rate > 0.0f);
  expect_problems(seq(layers, R"("optimizer": {"type": "sgd", "momentum": 1})"),
                  {"specs/model.json: optimizer: 'momentum' must be in [0, 1)"});
  expect_problems(seq(layers, R"("optimizer": {"type": "sgd", "momentum": -0.5})"),
                  {"'momentum' must be in [0, 1)"});
  expect_problems(seq(layers, R"("optimizer": {"type": "sgd", "momentum": null})"),
                  {"'momentum' must be in [0, 1)"});
  // Momentum 0 is plain SGD and fine.
  CHECK(parse_ok(seq(layers, R"("optimizer": {"type": "sgd", "momentum": 0})")).optimizer.momentum == 0.0f);
}

TEST_CASE("graph spec: adam and adamw take Keras's arguments and defaults") {
  const std::string layers = kFlatten + ", " + dense("out");
  const ModelSpec adam = parse_ok(seq(layers, R"("optimizer": {"type": "adam"})"));
  CHECK(adam.optimizer.kind == ipu::passes::OptimizerKind::kAdam);
  CHECK(adam.optimizer.learning_rate == 0.001f);
  CHECK(adam.optimizer.beta_1 == 0.9f);
  CHECK(adam.optimizer.beta_2 == 0.999f);
  CHECK(adam.optimizer.epsilon == 1e-7f);
  CHECK(adam.optimizer.weight_decay == 0.0f);
  CHECK(parse_ok(seq(layers, R"("optimizer": {"type": "adamw"})")).optimizer.weight_decay == 0.004f);
  const ModelSpec given = parse_ok(seq(
      layers,
      R"("optimizer": {"type": "adamw", "learning_rate": 0.01, "beta_1": 0.8, "beta_2": 0.99, "epsilon": 1e-8, "weight_decay": 0.1})"));
  CHECK(given.optimizer.kind == ipu::passes::OptimizerKind::kAdamW);
  CHECK(given.optimizer.learning_rate == 0.01f);
  CHECK(given.optimizer.beta_1 == 0.8f);
  CHECK(given.optimizer.beta_2 == 0.99f);
  CHECK(given.optimizer.epsilon == 1e-8f);
  CHECK(given.optimizer.weight_decay == 0.1f);
  expect_problems(seq(layers, R"("optimizer": {"type": "adam", "beta_1": 1})"),
                  {"specs/model.json: optimizer: 'beta_1' must be in [0, 1)"});
  expect_problems(seq(layers, R"("optimizer": {"type": "adam", "beta_2": -0.1})"),
                  {"'beta_2' must be in [0, 1)"});
  expect_problems(seq(layers, R"("optimizer": {"type": "adam", "epsilon": 0})"),
                  {"'epsilon' must be a positive number"});
  expect_problems(seq(layers, R"("optimizer": {"type": "adamw", "weight_decay": -1})"),
                  {"'weight_decay' must be a non-negative number"});
  // An argument ipucc does not implement is refused, not ignored.
  expect_problems(seq(layers, R"("optimizer": {"type": "adam", "amsgrad": true})"),
                  {"optimizer: unknown argument 'amsgrad' for adam"});
}

TEST_CASE("graph spec: sgd, rmsprop, adagrad and adamax take Keras's arguments and defaults") {
  using ipu::passes::OptimizerKind;
  const std::string layers = kFlatten + ", " + dense("out");
  const ModelSpec sgd = parse_ok(seq(
      layers,
      R"("optimizer": {"type": "sgd", "momentum": 0.9, "nesterov": true, "weight_decay": 0.01, "dampening": 0})"));
  CHECK(sgd.optimizer.nesterov);
  CHECK(sgd.optimizer.weight_decay == 0.01f);
  CHECK(parse_ok(seq(layers, R"("optimizer": {"type": "sgd", "dampening": 0.5})")).optimizer.dampening ==
        0.5f);
  const ModelSpec rmsprop = parse_ok(seq(layers, R"("optimizer": {"type": "rmsprop"})"));
  CHECK(rmsprop.optimizer.kind == OptimizerKind::kRmsProp);
  CHECK(rmsprop.optimizer.learning_rate == 0.001f);
  CHECK(rmsprop.optimizer.rho == 0.9f);
  CHECK(rmsprop.optimizer.momentum == 0.0f);
  CHECK(rmsprop.optimizer.epsilon == 1e-7f);
  CHECK_FALSE(rmsprop.optimizer.centered);
  const ModelSpec centered = parse_ok(
      seq(layers, R"("optimizer": {"type": "rmsprop", "rho": 0.8, "momentum": 0.5, "centered": true})"));
  CHECK(centered.optimizer.rho == 0.8f);
  CHECK(centered.optimizer.momentum == 0.5f);
  CHECK(centered.optimizer.centered);
  const ModelSpec adagrad = parse_ok(seq(layers, R"("optimizer": {"type": "adagrad"})"));
  CHECK(adagrad.optimizer.kind == OptimizerKind::kAdagrad);
  CHECK(adagrad.optimizer.initial_accumulator_value == 0.1f);
  CHECK(parse_ok(seq(layers, R"("optimizer": {"type": "adagrad", "initial_accumulator_value": 0})"))
            .optimizer.initial_accumulator_value == 0.0f);
  const ModelSpec adamax = parse_ok(seq(layers, R"("optimizer": {"type": "adamax", "beta_2": 0.99})"));
  CHECK(adamax.optimizer.kind == OptimizerKind::kAdaMax);
  CHECK(adamax.optimizer.beta_2 == 0.99f);
  expect_problems(seq(layers, R"("optimizer": {"type": "sgd", "nesterov": 1})"),
                  {"optimizer: 'nesterov' must be true or false"});
  expect_problems(seq(layers, R"("optimizer": {"type": "sgd", "dampening": 1.5})"),
                  {"optimizer: 'dampening' must be in [0, 1]"});
  expect_problems(seq(layers, R"("optimizer": {"type": "rmsprop", "rho": 1})"),
                  {"optimizer: 'rho' must be in [0, 1)"});
  expect_problems(seq(layers, R"("optimizer": {"type": "adagrad", "beta_1": 0.9})"),
                  {"optimizer: unknown argument 'beta_1' for adagrad"});
  expect_problems(seq(layers, R"("optimizer": {"type": "adamax", "momentum": 0.9})"),
                  {"optimizer: unknown argument 'momentum' for adamax"});
}

TEST_CASE("graph spec: every optimizer takes Keras's global_clipnorm; per-weight clipping is refused") {
  const std::string layers = kFlatten + ", " + dense("out");
  CHECK(parse_ok(seq(layers, R"("optimizer": {"type": "sgd"})")).optimizer.global_clipnorm == 0.0f);
  CHECK(parse_ok(seq(layers, R"("optimizer": {"type": "sgd", "global_clipnorm": 1.5})"))
            .optimizer.global_clipnorm == 1.5f);
  CHECK(parse_ok(seq(layers, R"("optimizer": {"type": "adam", "global_clipnorm": 0.5})"))
            .optimizer.global_clipnorm == 0.5f);
  CHECK(parse_ok(seq(layers, R"("optimizer": {"type": "rmsprop", "global_clipnorm": null})"))
            .optimizer.global_clipnorm == 0.0f);
  expect_problems(seq(layers, R"("optimizer": {"type": "adagrad", "global_clipnorm": 0})"),
                  {"optimizer: 'global_clipnorm' must be a positive number that float32 holds (or null)"});
  expect_problems(seq(layers, R"("optimizer": {"type": "sgd", "clipnorm": 1})"),
                  {"optimizer: 'clipnorm' (per-weight clipping) is not supported; 'global_clipnorm' is"},
                  StatusCode::kUnsupported);
  expect_problems(seq(layers, R"("optimizer": {"type": "adam", "clipvalue": 0.5})"),
                  {"optimizer: 'clipvalue' (per-weight clipping) is not supported; 'global_clipnorm' is"},
                  StatusCode::kUnsupported);
}

TEST_CASE("graph spec: an optimizer whose type is not a string is a problem, not an exception") {
  const std::string spec = seq(kFlatten + ", " + dense("out"), R"("optimizer": {"type": 1})");
  ipu::StatusOr<ModelSpec> result = ipu::invalid_argument("not run");
  CHECK_NOTHROW(result = parse(spec));
  CHECK_FALSE(result.ok());
  CHECK(result.status().message().find("optimizer: must be {\"type\": NAME, ...}") != std::string::npos);
}

TEST_CASE("graph spec: deeply nested documents are refused before anything recurses") {
  // 100000 nested arrays would overflow the stack of any recursive consumer (json::dump in a
  // message, for one). The parse runs in a child process so that a crash fails only this test.
  const int depth = 100000;
  const std::string spec =
      seq(dense("out"), "\"loss\": " + std::string(depth, '[') + std::string(depth, ']'));
  CHECK(run_in_child([&] {
          auto result = parse(spec);
          return !result.ok() &&
                 result.status().message().find("nested more than 64 levels deep") != std::string::npos;
        }) == "exit 0");
  // Brackets inside strings do not count.
  CHECK(parse(seq(kFlatten + ", " + dense("out"), "\"name\": \"" + std::string(100, '[') + "\"")).ok());
}

TEST_CASE("graph spec: losses by their Keras names, with their arguments and defaults") {
  using ipu::passes::LossKind;
  const std::string layers = kFlatten + ", " + dense("out");
  struct Case {
    const char* loss;
    LossKind kind;
    bool from_logits;
    float delta;
  };
  const Case cases[] = {
      {R"("categorical_crossentropy")", LossKind::kCategoricalCrossEntropy, false, 1.0f},
      {R"({"type": "categorical_crossentropy", "from_logits": true})", LossKind::kCategoricalCrossEntropy,
       true, 1.0f},
      {R"({"type": "binary_crossentropy", "from_logits": true})", LossKind::kBinaryCrossEntropy, true, 1.0f},
      {R"("mse")", LossKind::kMeanSquaredError, false, 1.0f},
      {R"("mean_absolute_error")", LossKind::kMeanAbsoluteError, false, 1.0f},
      {R"({"type": "huber", "delta": 0.25})", LossKind::kHuber, false, 0.25f},
  };
  for (const Case& c : cases) {
    CAPTURE(c.loss);
    auto spec = parse(seq(layers, std::string(R"("loss": )") + c.loss));
    REQUIRE_MESSAGE(spec.ok(), spec.status().to_string());
    CHECK(spec->loss.kind == c.kind);
    CHECK(spec->loss.from_logits == c.from_logits);
    CHECK(spec->loss.delta == c.delta);
  }
}

TEST_CASE("graph spec: metrics by their Keras names") {
  using ipu::passes::MetricKind;
  const std::string layers = kFlatten + ", " + dense("out");
  auto spec = parse(seq(
      layers, R"("metrics": ["accuracy", "mae", {"type": "sparse_top_k_categorical_accuracy", "k": 3}])"));
  REQUIRE_MESSAGE(spec.ok(), spec.status().to_string());
  REQUIRE(spec->metrics.has_value());
  REQUIRE(spec->metrics->size() == 3);
  CHECK((*spec->metrics)[0].kind == MetricKind::kAccuracy);
  CHECK((*spec->metrics)[1].kind == MetricKind::kMeanAbsoluteError);
  CHECK((*spec->metrics)[2].kind == MetricKind::kSparseTopK);
  CHECK((*spec->metrics)[2].k == 3);
  spec = parse(seq(layers, R"("metrics": [])"));
  REQUIRE(spec.ok());
  CHECK((spec->metrics.has_value() && spec->metrics->empty()));
  spec = parse(seq(layers));
  REQUIRE(spec.ok());
  CHECK(!spec->metrics.has_value());
  expect_problems(seq(layers, R"("metrics": ["f1"])"), {"specs/model.json: metrics: unknown metric 'f1'"});
  expect_problems(seq(layers, R"("metrics": ["mse", "mean_squared_error"])"),
                  {"specs/model.json: metrics: metric 'mse' is given twice"});
  expect_problems(seq(layers, R"("metrics": "accuracy")"), {"metrics: must be a list of metric names"});
  expect_problems(seq(layers, R"("metrics": [{"type": "mse", "k": 2}])"),
                  {"metrics: unknown or invalid argument 'k' for \"mse\""});
}

TEST_CASE("graph spec: several problems are all reported at once") {
  const std::string message = expect_problems(
      seq(R"({"name": "flat", "type": "Flatten", "units": 3}, )" + dense("d1", 0) + ", " +
              dense("d2", 4, R"("activation": "gelu", "colour": "red")") + ", " +
              R"({"name": "x", "type": "Pool"})" + ", " + dense("d2"),
          R"("loss": "hinge", "optimizer": {"type": "sgd", "learning_rate": -1, "momentum": 2})"),
      {"layer 'flat' (Flatten): 'units' does not apply to Flatten",
       "layer 'd1' (Dense): 'units' must be an integer in [1, 16777216]",
       "layer 'd2' (Dense): unknown attribute 'colour'", "layer 'd2' (Dense): unknown activation \"gelu\"",
       "layer 'x' (Pool): unknown layer type", "layer 'd2' (Dense): name is used twice",
       "loss: unsupported loss", "optimizer: 'learning_rate' must be a positive number",
       "optimizer: 'momentum' must be in [0, 1)"},
      StatusCode::kUnsupported); // the unsupported loss among invalid problems: as the ONNX importer reports
  CHECK(lines(message).size() == 9);
}

// ---------------------------------------------------------------------------------------------
// Pipeline stages

TEST_CASE("graph spec: per-layer stages") {
  SUBCASE("valid, contiguous from 0") {
    const ModelSpec spec = parse_ok(
        seq(R"({"name": "flat", "type": "Flatten", "stage": 0}, )" + dense("d1", 4, R"("stage": 0)") + ", " +
            dense("d2", 4, R"("stage": 1)") + ", " + dense("d3", 4, R"("stage": 2)")));
    CHECK(spec.num_stages == 3);
    CHECK(spec.stages == std::vector<int>{0, 0, 1, 2});
  }
  SUBCASE("all or none") {
    expect_problems(
        seq(kFlatten + ", " + dense("d1", 4, R"("stage": 0)") + ", " + dense("d2")),
        {"specs/model.json: stage annotations must be on every layer or on none (1 of 3 have one)"});
  }
  SUBCASE("gaps") {
    expect_problems(seq(dense("d1", 4, R"("stage": 0)") + ", " + dense("d2", 4, R"("stage": 2)")),
                    {"specs/model.json: stages must be numbered 0..1 without gaps"});
    expect_problems(seq(dense("d1", 4, R"("stage": 1)") + ", " + dense("d2", 4, R"("stage": 1)")),
                    {"stages must be numbered 0..0 without gaps"});
  }
  SUBCASE("decreasing across an edge (sequential)") {
    expect_problems(seq(dense("d1", 4, R"("stage": 0)") + ", " + dense("d2", 4, R"("stage": 1)") + ", " +
                        dense("d3", 4, R"("stage": 0)")),
                    {"specs/model.json: layer 'd3' (Dense): stage 0 reads 'd2' from later stage 1"});
  }
  SUBCASE("decreasing across an edge (functional), while a parallel branch may stay behind") {
    // b is on stage 0 and reads the input; c on stage 1 reads a (stage 1); out on stage 0 reads c.
    expect_problems(func(fnode("a", "image", R"("stage": 1)") + ", " + fnode("b", "image", R"("stage": 0)") +
                         ", " + fnode("c", "a", R"("stage": 1)") + ", " + fnode("out", "c", R"("stage": 0)")),
                    {"layer 'out' (Dense): stage 0 reads 'c' from later stage 1"});
    const ModelSpec ok =
        parse_ok(func(fnode("a", "image", R"("stage": 1)") + ", " + fnode("b", "image", R"("stage": 0)") +
                      ", " + fnode("out", "a", R"("stage": 1)")));
    CHECK(ok.stages == std::vector<int>{1, 0, 1});
    CHECK(ok.num_stages == 2);
  }
}

TEST_CASE("graph spec: model-level stage_assignment") {
  const std::string layers = kFlatten + ", " + dense("d1") + ", " + dense("d2");
  SUBCASE("valid") {
    const ModelSpec spec = parse_ok(seq(layers, R"("stage_assignment": [0, 1, 1])"));
    CHECK(spec.num_stages == 2);
    CHECK(spec.stages == std::vector<int>{0, 1, 1});
    CHECK(spec.layers[2].stage == 1);
  }
  SUBCASE("list length") {
    expect_problems(seq(layers, R"("stage_assignment": [0, 1])"),
                    {"specs/model.json: 'stage_assignment' has 2 entries for 3 layers"});
    expect_problems(seq(layers, R"("stage_assignment": [0, 0, 0, 0])"),
                    {"'stage_assignment' has 4 entries for 3 layers"});
    expect_problems(seq(layers, R"("stage_assignment": 1)"),
                    {"'stage_assignment' has 0 entries for 3 layers"});
  }
  SUBCASE("entries") {
    expect_problems(seq(layers, R"("stage_assignment": [0, -1, 1])"),
                    {"specs/model.json: 'stage_assignment' entry 1 must be an integer in [0, 1023]"});
    expect_problems(seq(layers, R"("stage_assignment": [0, 1, "1"])"),
                    {"'stage_assignment' entry 2 must be an integer in [0, 1023]"});
    expect_problems(seq(layers, R"("stage_assignment": [0.0, 1, 1])"),
                    {"'stage_assignment' entry 0 must be an integer in [0, 1023]"});
  }
  SUBCASE("the same stage rules apply") {
    expect_problems(seq(layers, R"("stage_assignment": [0, 2, 2])"),
                    {"stages must be numbered 0..1 without gaps"});
    expect_problems(seq(layers, R"("stage_assignment": [1, 0, 0])"),
                    {"layer 'd1' (Dense): stage 0 reads 'flat' from later stage 1"});
  }
  SUBCASE("both per-layer stages and a list") {
    expect_problems(
        seq(kFlatten + ", " + dense("d1", 4, R"("stage": 0)") + ", " + dense("d2"),
            R"("stage_assignment": [0, 0, 1])"),
        {"specs/model.json: give either per-layer 'stage' or a model-level 'stage_assignment', not both"});
  }
}

TEST_CASE("graph spec: a stage number beyond the supported range is rejected, not truncated") {
  // 2^32 must not wrap to stage 0; INT_MAX must not overflow the stage count.
  CHECK_FALSE(parse(seq(dense("d1", 4, R"("stage": 2147483647)"))).ok());
  auto spec = parse(seq(dense("d1", 4, R"("stage": 4294967296)")));
  CHECK_FALSE(spec.ok());
  auto listed =
      parse(seq(dense("d1") + ", " + dense("d2"), R"("stage_assignment": [4294967296, 4294967296])"));
  CHECK_FALSE(listed.ok());
}

TEST_CASE("graph spec: apply_stage_assignment") {
  ModelSpec spec = parse_ok(seq(kFlatten + ", " + dense("d1") + ", " + dense("d2")));
  SUBCASE("valid") {
    REQUIRE(apply_stage_assignment(spec, {0, 0, 1}).ok());
    CHECK(spec.num_stages == 2);
    CHECK(spec.stages == std::vector<int>{0, 0, 1});
    // It replaces an earlier assignment.
    REQUIRE(apply_stage_assignment(spec, {0, 0, 0}).ok());
    CHECK(spec.num_stages == 1);
    CHECK(spec.stages == std::vector<int>{0, 0, 0});
  }
  SUBCASE("overrides stages from the spec") {
    ModelSpec staged =
        parse_ok(seq(kFlatten + ", " + dense("d1") + ", " + dense("d2"), R"("stage_assignment": [0, 1, 1])"));
    REQUIRE(apply_stage_assignment(staged, {0, 0, 1}).ok());
    CHECK(staged.stages == std::vector<int>{0, 0, 1});
  }
  SUBCASE("wrong length") {
    ipu::Status s = apply_stage_assignment(spec, {0, 1});
    CHECK(s.code() == StatusCode::kInvalidArgument);
    CHECK(s.message() == kPath + ": --stage-assignment has 2 entries for 3 layers");
    CHECK(apply_stage_assignment(spec, {}).message().find("has 0 entries for 3 layers") != std::string::npos);
  }
  SUBCASE("negative") {
    ipu::Status s = apply_stage_assignment(spec, {0, -1, 1});
    CHECK(s.code() == StatusCode::kInvalidArgument);
    CHECK(s.message() == kPath + ": --stage-assignment entry 1 is outside [0, 1023]");
  }
  SUBCASE("gaps") {
    ipu::Status s = apply_stage_assignment(spec, {0, 2, 2});
    CHECK(s.code() == StatusCode::kInvalidArgument);
    CHECK(s.message() == kPath + ": stages must be numbered 0..1 without gaps");
  }
  SUBCASE("decreasing") {
    ipu::Status s = apply_stage_assignment(spec, {0, 1, 0});
    CHECK(s.code() == StatusCode::kInvalidArgument);
    CHECK(s.message() == kPath + ": layer 'd2' (Dense): stage 0 reads 'd1' from later stage 1");
  }
}

// ---------------------------------------------------------------------------------------------
// build_forward_graph

TEST_CASE("build_forward_graph: shapes, weights and determinism") {
  const ModelSpec spec = parse_ok(seq(kFlatten + ", " + dense("d1", 5, R"("activation": "relu")") + ", " +
                                      dense("d2", 3, R"("use_bias": false, "activation": "softmax")")));
  auto built = build_forward_graph(spec, 2);
  INFO(built.status().message());
  REQUIRE(built.ok());
  const auto& g = built->graph;
  CHECK(g.value(built->features()).type.shape == std::vector<int64_t>{2, 2, 3});
  CHECK(g.value(built->scores()).type.shape == std::vector<int64_t>{2, 3});
  bool found_kernel = false, found_bias = false, found_d2_bias = false;
  for (const auto& v : g.values()) {
    if (v.name == "d1/kernel") {
      found_kernel = true;
      CHECK(v.type.shape == std::vector<int64_t>{6, 5});
      REQUIRE(v.initial.size() == 30);
      const double limit = std::sqrt(6.0 / (6 + 5));
      bool nonzero = false;
      for (float w : v.initial) {
        CHECK(std::abs(w) <= limit);
        nonzero = nonzero || w != 0.0f;
      }
      CHECK(nonzero);
    }
    if (v.name == "d1/bias") {
      found_bias = true;
      CHECK(v.initial == std::vector<float>(5, 0.0f));
    }
    if (v.name == "d2/bias") found_d2_bias = true;
  }
  CHECK(found_kernel);
  CHECK(found_bias);
  CHECK_FALSE(found_d2_bias);
  // The same spec builds the same weights.
  auto again = build_forward_graph(spec, 2);
  REQUIRE(again.ok());
  REQUIRE(again->graph.values().size() == g.values().size());
  for (size_t i = 0; i < g.values().size(); ++i)
    CHECK(again->graph.values()[i].initial == g.values()[i].initial);
}

TEST_CASE("build_forward_graph: staged layers carry their stage") {
  const ModelSpec spec =
      parse_ok(seq(kFlatten + ", " + dense("d1") + ", " + dense("d2"), R"("stage_assignment": [0, 0, 1])"));
  auto built = build_forward_graph(spec, 4);
  REQUIRE(built.ok());
  int copies = 0;
  for (const auto& op : built->graph.ops()) {
    CAPTURE(op.name);
    if (op.kind == ipu::ir::OpKind::kStageCopy) {
      // d1's output travels to stage 1, where d2 reads it.
      ++copies;
      CHECK(op.stage == 1);
      CHECK(built->graph.value(op.inputs[0]).stage == 0);
      continue;
    }
    CHECK(op.stage == (op.name.rfind("d2/", 0) == 0 ? 1 : 0));
    for (int input : op.inputs)
      CHECK(built->graph.value(input).stage == op.stage);
  }
  CHECK(copies == 1);
}

TEST_CASE("build_forward_graph: a Dense on a rank-3 input names the file and layer") {
  const ModelSpec spec = parse_ok(seq(dense("d1") + ", " + dense("d2")));
  auto built = build_forward_graph(spec, 2);
  REQUIRE_FALSE(built.ok());
  CHECK(built.status().code() == StatusCode::kInvalidArgument);
  const std::string message = built.status().message();
  CHECK(
      message.find(
          "specs/model.json: layer 'd1' (Dense): expects a rank-2 input [batch, features], got f32[2,2,3]") !=
      std::string::npos);
  // d2 depends on d1 and is not reported again.
  CHECK(lines(message).size() == 1);

  // In a functional graph, independent branches each report their own problem.
  const ModelSpec branches = parse_ok(func(fnode("a", "image") + ", " + fnode("out", "image")));
  auto both = build_forward_graph(branches, 2);
  REQUIRE_FALSE(both.ok());
  CHECK(lines(both.status().message()).size() == 2);
  CHECK(both.status().message().find("layer 'a' (Dense)") != std::string::npos);
  CHECK(both.status().message().find("layer 'out' (Dense)") != std::string::npos);
}

TEST_CASE("graph spec: sizes are bounded before anything is allocated") {
  // 2^40 units would make the initializer allocate terabytes.
  auto units = parse(R"({"type": "sequential", "input": {"shape": [2]},
    "layers": [{"name": "huge", "type": "Dense", "units": 1099511627776}]})");
  REQUIRE_FALSE(units.ok());
  CHECK(units.status().message().find("layer 'huge' (Dense): 'units' must be an integer in [1, 16777216]") !=
        std::string::npos);
  // [2^32, 2^32] would overflow int64 element counts.
  auto input = parse(R"({"type": "sequential", "input": {"shape": [4294967296, 4294967296]},
    "layers": [{"name": "flat", "type": "Flatten"}, {"name": "d", "type": "Dense", "units": 3}]})");
  REQUIRE_FALSE(input.ok());
  CHECK(input.status().message().find("elements per sample") != std::string::npos);
}

TEST_CASE("build_forward_graph: a kernel too large to initialise is an error naming the layer") {
  const ModelSpec spec = parse_ok(R"({"type": "sequential", "input": {"shape": [1048576]},
    "layers": [{"name": "wide", "type": "Dense", "units": 1024}]})");
  ipu::StatusOr<ipu::frontend::ForwardGraph> built = ipu::invalid_argument("not run");
  CHECK_NOTHROW(built = build_forward_graph(spec, 2));
  REQUIRE_FALSE(built.ok());
  CHECK(built.status().message().find("layer 'wide' (Dense): a kernel of 1048576 x 1024 weights") !=
        std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Convolution layers

std::string image_seq(const std::string& layers) {
  return R"({"name": "m", "type": "sequential", "input": {"name": "image", "shape": [6, 6, 2]}, "layers": [)" +
         layers + "]}";
}

TEST_CASE("graph spec: convolution, pooling, normalization, dropout and reshape layers parse") {
  const ModelSpec spec = parse_ok(image_seq(
      R"({"name": "c", "type": "Conv2D", "filters": 3, "kernel_size": [3, 2], "strides": 2, "padding": "same",
          "activation": "relu", "use_bias": false, "kernel_initializer": {"type": "glorot_uniform", "seed": 5}},
         {"name": "p", "type": "MaxPool2D", "pool_size": [2, 1]},
         {"name": "a", "type": "AveragePooling2D", "strides": 1, "padding": "valid"},
         {"name": "b", "type": "BatchNormalization", "epsilon": 0.01},
         {"name": "d", "type": "Dropout", "rate": 0.5},
         {"name": "r", "type": "Reshape", "target_shape": [-1, 3]})"));
  REQUIRE(spec.layers.size() == 6);
  const auto& c = spec.layers[0];
  CHECK(c.filters == 3);
  CHECK(c.kernel_size == std::array<int64_t, 2>{3, 2});
  CHECK(c.strides == std::array<int64_t, 2>{2, 2});
  CHECK(c.padding == "same");
  CHECK(c.activation == "relu");
  CHECK_FALSE(c.use_bias);
  CHECK(c.kernel_initializer.seed == 5);
  CHECK(spec.layers[1].pool_size == std::array<int64_t, 2>{2, 1});
  CHECK_FALSE(spec.layers[1].strides.has_value());
  CHECK(spec.layers[2].pool_size == std::array<int64_t, 2>{2, 2});
  CHECK(spec.layers[3].epsilon == doctest::Approx(0.01));
  CHECK(spec.layers[4].rate == doctest::Approx(0.5));
  CHECK(spec.layers[5].target_shape == std::vector<int64_t>{-1, 3});
}

TEST_CASE("graph spec: convolution layer problems name the file and the layer") {
  const std::pair<std::string, std::string> cases[] = {
      {R"({"name": "c", "type": "Conv2D", "kernel_size": 3})",
       "specs/model.json: layer 'c' (Conv2D): 'filters' must be an integer in [1, 65536]"},
      {R"({"name": "c", "type": "Conv2D", "filters": 4})",
       "specs/model.json: layer 'c' (Conv2D): 'kernel_size' must be an integer or two integers in [1, "
       "65536]"},
      {R"({"name": "c", "type": "Conv2D", "filters": 4, "kernel_size": [3, 0]})",
       "layer 'c' (Conv2D): 'kernel_size' must be"},
      {R"({"name": "c", "type": "Conv2D", "filters": 4, "kernel_size": [3, 3, 3]})",
       "layer 'c' (Conv2D): 'kernel_size' must be"},
      {R"({"name": "c", "type": "Conv2D", "filters": 4, "kernel_size": 3, "padding": "causal"})",
       "specs/model.json: layer 'c' (Conv2D): 'padding' must be \"valid\" or \"same\", got \"causal\""},
      {R"({"name": "c", "type": "Conv2D", "filters": 4, "kernel_size": 3, "strides": -1})",
       "layer 'c' (Conv2D): 'strides' must be an integer or two integers"},
      {R"({"name": "c", "type": "Conv2D", "filters": 4, "kernel_size": 3, "activation": "gelu"})",
       "layer 'c' (Conv2D): unknown activation \"gelu\""},
      {R"({"name": "p", "type": "MaxPooling2D", "pool_size": "2"})",
       "specs/model.json: layer 'p' (MaxPooling2D): 'pool_size' must be an integer or two integers in [1, "
       "65536]"},
      {R"({"name": "p", "type": "MaxPooling2D", "filters": 2})",
       "specs/model.json: layer 'p' (MaxPooling2D): 'filters' does not apply to MaxPooling2D"},
      {R"({"name": "d", "type": "Dropout"})",
       "specs/model.json: layer 'd' (Dropout): 'rate' must be a number in [0, 1)"},
      {R"({"name": "d", "type": "Dropout", "rate": 1})",
       "layer 'd' (Dropout): 'rate' must be a number in [0, 1)"},
      {R"({"name": "b", "type": "BatchNormalization", "epsilon": 0})",
       "specs/model.json: layer 'b' (BatchNormalization): 'epsilon' must be a number in (0, 1]"},
      {R"({"name": "b", "type": "BatchNormalization", "momentum": 0.9})",
       "layer 'b' (BatchNormalization): unknown attribute 'momentum'"},
      {R"({"name": "r", "type": "Reshape", "target_shape": [-1, -1]})",
       "specs/model.json: layer 'r' (Reshape): 'target_shape' must list positive integers per sample (one "
       "may be -1)"},
      {R"({"name": "r", "type": "Reshape"})",
       "layer 'r' (Reshape): 'target_shape' must list positive integers"},
  };
  for (const auto& [layers, message] : cases)
    expect_problems(image_seq(layers), {message});
}

TEST_CASE("build_forward_graph: a Keras CNN converts layouts only at its ends") {
  const ModelSpec spec = parse_ok(image_seq(
      R"({"name": "c", "type": "Conv2D", "filters": 3, "kernel_size": 3, "padding": "same", "activation": "relu"},
         {"name": "b", "type": "BatchNormalization"},
         {"name": "p", "type": "MaxPooling2D"},
         {"name": "d", "type": "Dropout", "rate": 0.5},
         {"name": "f", "type": "Flatten"},
         {"name": "out", "type": "Dense", "units": 4})"));
  auto built = build_forward_graph(spec, 2);
  INFO(built.status().message());
  REQUIRE(built.ok());
  const auto& g = built->graph;
  CHECK(g.value(built->scores()).type.shape == std::vector<int64_t>{2, 4});
  int to_first = 0, to_last = 0;
  for (const auto& op : g.ops()) {
    to_first += op.kind == ipu::ir::OpKind::kToChannelsFirst;
    to_last += op.kind == ipu::ir::OpKind::kToChannelsLast;
    if (op.kind == ipu::ir::OpKind::kConv) {
      CHECK(g.value(op.outputs[0]).type.shape == std::vector<int64_t>{2, 3, 6, 6});
      CHECK(ipu::ir::window_of(op).pads == std::array<int64_t, 4>{1, 1, 1, 1});
    }
    if (op.kind == ipu::ir::OpKind::kMaxPool)
      CHECK(g.value(op.outputs[0]).type.shape == std::vector<int64_t>{2, 3, 3, 3});
  }
  // Into NCHW before the Conv2D, back to NHWC before the Flatten: Keras's flattening order.
  CHECK(to_first == 1);
  CHECK(to_last == 1);
  for (const auto& v : g.values()) {
    if (v.name == "c/kernel") CHECK(v.type.shape == std::vector<int64_t>{3, 2, 3, 3});
    if (v.name == "b/gamma") CHECK(v.initial == std::vector<float>(3, 1.0f));
    if (v.name == "b/moving_variance") CHECK(v.role == ipu::ir::Role::kConstant);
  }

  // Dropout is refused when training; a Conv2D on a flat input names the layer.
  auto training = build_forward_graph(spec, 2, /*training=*/true);
  REQUIRE_FALSE(training.ok());
  CHECK(training.status().message().find(
            "specs/model.json: layer 'd' (Dropout): Dropout is applied at inference only") !=
        std::string::npos);
  const ModelSpec flat = parse_ok(image_seq(R"({"name": "f", "type": "Flatten"},
      {"name": "c", "type": "Conv2D", "filters": 3, "kernel_size": 3})"));
  // A target_shape whose product would overflow is a mismatch, not undefined behaviour.
  const ModelSpec huge = parse_ok(
      image_seq(R"({"name": "r", "type": "Reshape", "target_shape": [268435456, 268435456, 268435456]})"));
  auto reshaped = build_forward_graph(huge, 2);
  REQUIRE_FALSE(reshaped.ok());
  CHECK(reshaped.status().message().find(
            "layer 'r' (Reshape): cannot reshape f32[2,6,6,2] to a target_shape of 72 elements") !=
        std::string::npos);
  auto bad = build_forward_graph(flat, 2);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find(
            "specs/model.json: layer 'c' (Conv2D): expects a rank-4 input [batch, height, width, "
            "channels], got f32[2,72]") != std::string::npos);
}

// A functional spec over a [6, 6, 2] image.
std::string image_func(const std::string& nodes, const std::string& output) {
  return R"({"name": "f", "type": "functional", "inputs": [{"name": "image", "shape": [6, 6, 2]}], "nodes": [)" +
         nodes + R"(], "outputs": [")" + output + R"("]})";
}

TEST_CASE("graph spec: Add and Concatenate merge several inputs in the functional form") {
  const ModelSpec spec = parse_ok(func(kFflatten + ", " + fnode("a", "flat") + ", " + fnode("b", "flat") +
                                       R"(, {"name": "sum", "type": "Add", "inputs": ["a", "b", "a"]},
                                          {"name": "out", "type": "Concatenate", "inputs": ["sum", "flat"], "axis": 1})"));
  REQUIRE(spec.layers.size() == 5);
  CHECK(spec.layers[3].inputs == std::vector<std::string>{"a", "b", "a"});
  CHECK(spec.layers[4].axis == 1);
  CHECK(spec.layers[4].inputs == std::vector<std::string>{"sum", "flat"});
  auto built = build_forward_graph(spec, 2);
  INFO(built.status().message());
  REQUIRE(built.ok());
  // Three inputs are two additions; the concatenation is [2, 4] ++ [2, 6] on axis 1.
  int adds = 0;
  for (const auto& op : built->graph.ops())
    adds += op.kind == ipu::ir::OpKind::kBinary;
  CHECK(adds == 2);
  CHECK(built->graph.value(built->scores()).type.shape == std::vector<int64_t>{2, 10});
  // Keras's default axis is the last one.
  CHECK(parse_ok(
            func(fnode("a", "image") + R"(, {"name": "out", "type": "Concatenate", "inputs": ["a", "a"]})"))
            .layers[1]
            .axis == -1);
}

TEST_CASE("graph spec: merge layer problems name the file and the layer") {
  expect_problems(func(fnode("a", "image") + R"(, {"name": "out", "type": "Add", "inputs": ["a"]})"),
                  {"specs/model.json: layer 'out' (Add): 'inputs' must list 2 to 64 input names"});
  expect_problems(func(fnode("a", "image") + R"(, {"name": "out", "type": "Add", "inputs": ["a", 3]})"),
                  {"layer 'out' (Add): 'inputs' must list 2 to 64 input names"});
  expect_problems(func(fnode("a", "image") + R"(, {"name": "out", "type": "Add", "inputs": ["a", "ghost"]})"),
                  {"layer 'out' (Add): input 'ghost' is not the model input or an earlier layer"});
  expect_problems(
      func(fnode("a", "image") + R"(, {"name": "out", "type": "Add", "inputs": ["a", "a"], "axis": 1})"),
      {"layer 'out' (Add): 'axis' does not apply to Add"});
  expect_problems(func(fnode("a", "image") +
                       R"(, {"name": "out", "type": "Concatenate", "inputs": ["a", "a"], "axis": "x"})"),
                  {"layer 'out' (Concatenate): 'axis' must be an integer"});
  expect_problems(seq(dense("a") + R"(, {"name": "out", "type": "Add"})"),
                  {"layer 'out' (Add): Add merges several layers: use the functional form"});

  // Shapes are checked when the graph is built, naming the layer.
  auto built_error = [](const std::string& text) {
    auto built = build_forward_graph(parse_ok(text), 2);
    REQUIRE_FALSE(built.ok());
    return built.status().message();
  };
  CHECK(built_error(func(kFflatten + ", " + fnode("a", "flat") +
                         R"(, {"name": "out", "type": "Add", "inputs": ["a", "flat"]})"))
            .find("specs/model.json: layer 'out' (Add): inputs of shapes f32[2,4] and f32[2,6] cannot be "
                  "added") != std::string::npos);
  CHECK(
      built_error(
          func(kFflatten + R"(, {"name": "out", "type": "Concatenate", "inputs": ["image", "flat"]})"))
          .find(
              "layer 'out' (Concatenate): inputs of shapes f32[2,2,3] and f32[2,6] cannot be concatenated") !=
      std::string::npos);
  for (const char* axis : {"0", "3", "-3"}) {
    CAPTURE(axis);
    CHECK(
        built_error(func(R"({"name": "out", "type": "Concatenate", "inputs": ["image", "image"], "axis": )" +
                         std::string(axis) + "}"))
            .find("layer 'out' (Concatenate): 'axis' " + std::string(axis) +
                  " is not a sample axis of a rank-3 input") != std::string::npos);
  }
}

TEST_CASE("build_forward_graph: merges of convolutions stay channels first") {
  // A residual block: conv → conv, added to its input's conv; then channels concatenated.
  const ModelSpec spec = parse_ok(image_func(
      R"({"name": "c1", "type": "Conv2D", "inputs": ["image"], "filters": 4, "kernel_size": 3, "padding": "same"},
         {"name": "c2", "type": "Conv2D", "inputs": ["c1"], "filters": 4, "kernel_size": 3, "padding": "same"},
         {"name": "sum", "type": "Add", "inputs": ["c1", "c2"]},
         {"name": "cat", "type": "Concatenate", "inputs": ["sum", "c1"]},
         {"name": "f", "type": "Flatten", "inputs": ["cat"]})",
      "f"));
  auto built = build_forward_graph(spec, 2);
  INFO(built.status().message());
  REQUIRE(built.ok());
  const auto& g = built->graph;
  int to_last = 0;
  for (const auto& op : g.ops()) {
    to_last += op.kind == ipu::ir::OpKind::kToChannelsLast;
    // Keras's axis -1 (channels of NHWC) is axis 1 of the NCHW values.
    if (op.kind == ipu::ir::OpKind::kConcat) {
      CHECK(op.attrs<ipu::ir::AxisAttrs>().axis == 1);
      CHECK(g.value(op.outputs[0]).type.shape == std::vector<int64_t>{2, 8, 6, 6});
    }
  }
  CHECK(to_last == 1); // only before the Flatten
  CHECK(g.value(built->scores()).type.shape == std::vector<int64_t>{2, 288});
  // A merge of a channels-first and a channels-last value meets channels last.
  const ModelSpec mixed = parse_ok(image_func(
      R"({"name": "c1", "type": "Conv2D", "inputs": ["image"], "filters": 2, "kernel_size": 1},
         {"name": "sum", "type": "Add", "inputs": ["c1", "image"]})",
      "sum"));
  auto merged = build_forward_graph(mixed, 2);
  INFO(merged.status().message());
  REQUIRE(merged.ok());
  CHECK(merged->graph.value(merged->scores()).type.shape == std::vector<int64_t>{2, 6, 6, 2});
}

} // namespace

TEST_CASE("graph spec: Keras's LossScaleOptimizer wraps the optimizer with loss scaling") {
  using ipu::passes::LossScalingMode;
  using ipu::passes::OptimizerKind;
  const std::string layers = kFlatten + ", " + dense("out");
  const ModelSpec wrapped = parse_ok(seq(layers, R"("optimizer": {"class_name": "LossScaleOptimizer",
      "config": {"name": "lso", "inner_optimizer": {"type": "adam", "beta_1": 0.8}, "initial_scale": 256,
                 "dynamic": false}})"));
  CHECK(wrapped.optimizer.kind == OptimizerKind::kAdam);
  CHECK(wrapped.optimizer.beta_1 == 0.8f);
  CHECK(wrapped.optimizer.loss_scaling.mode == LossScalingMode::kStatic);
  CHECK(wrapped.optimizer.loss_scaling.initial_scale == 256.0f);
  CHECK(parse_ok(seq(layers, R"("optimizer": {"type": "sgd"})")).optimizer.loss_scaling.mode ==
        LossScalingMode::kNone);
  expect_problems(seq(layers, R"("optimizer": {"class_name": "LossScaleOptimizer", "config": {}})"),
                  {"a LossScaleOptimizer must be"});
  expect_problems(seq(layers, R"("optimizer": {"class_name": "LossScaleOptimizer", "config":
      {"inner_optimizer": {"type": "sgd"}, "initial_scale": 0, "dynamic": false}})"),
                  {"LossScaleOptimizer: 'initial_scale' must be a positive number that float32 holds"});
  expect_problems(seq(layers, R"("optimizer": {"class_name": "LossScaleOptimizer", "config":
      {"inner_optimizer": {"type": "sgd"}, "dynamic": false, "scale": 2}})"),
                  {"LossScaleOptimizer: unknown argument 'scale'"});
  // Dynamic scaling: Keras's default (Keras 3's LossScaleOptimizer has no "dynamic" and is always
  // dynamic), with Keras's initial scale and growth steps unless given.
  const ModelSpec keras3 = parse_ok(seq(layers, R"("optimizer": {"class_name": "LossScaleOptimizer", "config":
      {"inner_optimizer": {"type": "sgd"}, "initial_scale": 1024, "dynamic_growth_steps": 3}})"));
  CHECK(keras3.optimizer.loss_scaling.mode == LossScalingMode::kDynamic);
  CHECK(keras3.optimizer.loss_scaling.initial_scale == 1024.0f);
  CHECK(keras3.optimizer.loss_scaling.growth_steps == 3);
  const ModelSpec dynamic =
      parse_ok(seq(layers, R"("optimizer": {"class_name": "LossScaleOptimizer", "config":
      {"inner_optimizer": {"type": "sgd"}, "dynamic": true}})"));
  CHECK(dynamic.optimizer.loss_scaling.mode == LossScalingMode::kDynamic);
  CHECK(dynamic.optimizer.loss_scaling.initial_scale == 32768.0f);
  CHECK(dynamic.optimizer.loss_scaling.growth_steps == 2000);
  for (const char* bad : {"0", "2.5", "16777217", "\"3\""}) {
    CAPTURE(bad);
    expect_problems(seq(layers, std::string(R"("optimizer": {"class_name": "LossScaleOptimizer", "config":
      {"inner_optimizer": {"type": "sgd"}, "dynamic_growth_steps": )") +
                                    bad + "}}"),
                    {"'dynamic_growth_steps' must be an integer in [1, 2^24]"});
  }
  expect_problems(seq(layers, R"("optimizer": {"class_name": "LossScaleOptimizer", "config":
      {"inner_optimizer": {"type": "sgd"}, "dynamic": false, "dynamic_growth_steps": 3}})"),
                  {"LossScaleOptimizer: 'dynamic_growth_steps' applies to dynamic loss scaling only"});
  expect_problems(seq(layers, R"("optimizer": {"class_name": "LossScaleOptimizer", "config":
      {"inner_optimizer": {"type": "nadam"}, "dynamic": false}})"),
                  {"unsupported optimizer \"nadam\""}, StatusCode::kUnsupported);
}
