// Dynamic loss scaling (compiler/passes/loss_scaling.h) in a two-stage pipeline: each stage keeps
// the scale's state, checks its own gradients and runs the schedule on both stages' checks, so one
// stage's overflow skips both; each stage's update is a Conditional on its own decision, whose
// other side zeroes the stage's accumulators.
#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "runtime/format/host_contract.h"
#include "tests/unit/compiler/test_support.h"

namespace {

using namespace ipu;
using format::Codelet;

const char* const kStagedSpec = R"({"type": "sequential", "input": {"shape": [6]},
    "layers": [{"name": "hidden", "type": "Dense", "units": 8, "activation": "relu"},
               {"name": "out", "type": "Dense", "units": 4}],
    "loss": {"type": "sparse_categorical_crossentropy", "from_logits": true},
    "stage_assignment": [0, 1],
    "optimizer": {"class_name": "LossScaleOptimizer", "config": {"inner_optimizer": {"type": "adam"},
                  "initial_scale": 512, "dynamic_growth_steps": 7}}})";

// Every Conditional of `program`, depth first.
void find_conditionals(const format::Program& program, std::vector<const format::Conditional*>& out) {
  switch (program.kind_case()) {
  case format::Program::kSequence:
    for (const auto& step : program.sequence().steps())
      find_conditionals(step, out);
    break;
  case format::Program::kRepeat:
    find_conditionals(program.repeat().body(), out);
    break;
  case format::Program::kParallel:
    for (const auto& branch : program.parallel().branches())
      find_conditionals(branch, out);
    break;
  case format::Program::kConditional:
    out.push_back(&program.conditional());
    break;
  default:
    break;
  }
}

// The codelets a (flat) sequence of Execute nodes runs.
std::multiset<Codelet> codelets_run(const format::Executable& exe, const format::Program& body) {
  std::multiset<Codelet> out;
  for (const auto& step : body.sequence().steps()) {
    REQUIRE(step.kind_case() == format::Program::kExecute);
    for (const auto& v : exe.compute_sets(static_cast<int>(step.execute())).vertices())
      out.insert(static_cast<Codelet>(v.codelet()));
  }
  return out;
}

TEST_CASE("passes: dynamic loss scaling in a pipeline decides on every stage's gradients") {
  compiler::CompileOptions options = testing::small_target_options(2);
  options.num_ipus = 2;
  auto compiled = compiler::compile_model(kStagedSpec, options);
  INFO(compiled.status().message());
  REQUIRE(compiled.ok());
  const format::Executable& exe = compiled->executable;

  // The state on each stage's IPU, {initial scale, 0}; the static slot is not read.
  std::map<std::string, uint32_t> tensor;
  for (int i = 0; i < exe.tensors_size(); ++i)
    tensor[exe.tensors(i).name()] = static_cast<uint32_t>(i);
  const std::string state(format::kLossScaleStateTensor);
  for (const std::string& name : {state, state + "@1"}) {
    CAPTURE(name);
    REQUIRE(tensor.count(name));
    const format::Tensor& t = exe.tensors(static_cast<int>(tensor[name]));
    CHECK(t.role() == format::OPTIMIZER_STATE);
    CHECK(t.ipu() == (name == state ? 0u : 1u));
    const std::vector<float> initial = {512.0f, 0.0f};
    CHECK(t.initial_value() == std::string(reinterpret_cast<const char*>(initial.data()), 8));
  }
  for (const std::string& read : exe.hyper_parameters())
    CHECK(read != "loss_scale");

  // One LossScaleUpdate per stage, each on both stages' checks, with Keras's growth steps given.
  std::set<uint32_t> finite_flags;
  for (const auto& set : exe.compute_sets()) {
    for (const auto& v : set.vertices()) {
      if (static_cast<Codelet>(v.codelet()) != Codelet::kLossScaleUpdate) continue;
      CHECK(v.params(format::params::LossScaleUpdate::kGrowthSteps) == 7);
      CHECK(v.params(format::params::LossScaleUpdate::kStages) == 2);
      finite_flags.insert(v.operands(1));
    }
  }
  CHECK(finite_flags.size() == 2);

  // Each stage's update runs under its own stage's decision; its skip zeroes its accumulators.
  const format::Program* train = nullptr;
  for (const auto& p : exe.programs()) {
    if (p.name() == format::kTrainProgram) train = &p.program();
  }
  REQUIRE(train != nullptr);
  std::vector<const format::Conditional*> conditionals;
  find_conditionals(*train, conditionals);
  REQUIRE(conditionals.size() == 2);
  std::set<uint32_t> conditions;
  for (const format::Conditional* c : conditionals) {
    conditions.insert(c->condition());
    const auto update = codelets_run(exe, c->then_body());
    const auto skip = codelets_run(exe, c->else_body());
    CHECK(update.count(Codelet::kAdam) > 0);
    CHECK(update.count(Codelet::kZeroInPlace) == 0);
    CHECK(skip.count(Codelet::kZeroInPlace) > 0);
    CHECK(skip.count(Codelet::kAdam) == 0);
  }
  CHECK(conditions == finite_flags);

  // The report reaches the host once per update.
  bool stream = false;
  for (const auto& s : exe.streams())
    stream =
        stream || (s.name() == format::kLossScaleStream && s.direction() == format::Stream::DEVICE_TO_HOST);
  CHECK(stream);
}

TEST_CASE("passes: growth steps need dynamic loss scaling") {
  compiler::CompileOptions options = testing::small_target_options(2);
  options.loss_scaling = passes::LossScalingMode::kStatic;
  options.loss_scale_growth_steps = 3;
  auto compiled = compiler::compile_model(kStagedSpec, options);
  REQUIRE_FALSE(compiled.ok());
  CHECK(compiled.status().message().find("--loss-scale-growth-steps needs dynamic loss scaling") !=
        std::string::npos);
}

} // namespace
