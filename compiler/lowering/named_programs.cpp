#include "compiler/lowering/named_programs.h"

#include <string>
#include <utility>

#include "compiler/lowering/pipeline_inference.h"
#include "compiler/lowering/pipeline_schedule.h"
#include "runtime/format/host_contract.h"

namespace ipu::lowering {
namespace {

// One stage without pipelining: K micro-batches, each a forward then a backward pass.
void estimate_single_stage(const ProgramBuilder& programs, const StageComputeSets& stage, int micro_batches,
                           format::ScheduleEstimate& estimate) {
  const double forward =
      programs.estimator().cycles_of(stage.forward) + programs.estimator().cycles_of(stage.loss);
  const double backward = programs.estimator().cycles_of(stage.backward);
  for (int m = 0; m < micro_batches; ++m) {
    for (bool is_forward : {true, false}) {
      format::ScheduleSlot* slot = estimate.add_slots();
      format::SlotWork* work = slot->add_work();
      work->set_forward(is_forward);
      work->set_micro_batch(static_cast<uint32_t>(m));
      work->set_cycles(is_forward ? forward : backward);
      slot->set_cycles(work->cycles());
    }
  }
  estimate.add_busy_cycles(micro_batches * (forward + backward));
  estimate.add_stash_bytes(0);
}

using StreamedTensors = std::vector<std::pair<uint32_t, uint32_t>>; // (stream, tensor)

// What build_named_programs shares between the programs it adds: the compute sets, the streams,
// the receive buffers between pipeline stages and the accumulated gradients.
struct NamedPrograms {
  LowerContext& ctx;
  ProgramBuilder& programs;
  format::Executable& exe;
  const ir::Graph& graph;
  const GraphInterface& io;
  const LoweringOptions& options;
  const std::vector<StageComputeSets>& stages;
  const StatisticsModeSets& statistics_mode;
  const bool train = io.loss.has_value();
  const int S = static_cast<int>(options.stages);
  const uint64_t steps = options.steps_per_execution, K = options.micro_batches;
  StepStreams streams{};
  ReceiveBuffers receive{};
  std::vector<uint32_t> accumulators{};
  // The optimizer's hyper-parameters arrive from the host before every weight update into the
  // first stage's tensor, and are copied to each further stage's (runtime/format/host_contract.h).
  std::vector<uint32_t> hyper_tensors = std::vector<uint32_t>(static_cast<size_t>(S), 0);
  bool has_hyper = false;
  uint32_t hyper_stream = 0;

  std::vector<uint32_t> all_stages(std::vector<uint32_t> StageComputeSets::*member) const {
    std::vector<uint32_t> out;
    for (const auto& sets : stages)
      out.insert(out.end(), (sets.*member).begin(), (sets.*member).end());
    return out;
  }

  // Without pipelining (one stage, so no copies between stages): the gradients' norm, then the
  // update. A pipeline places its stages' norms and the copies between them itself.
  void append_update(format::Sequence& seq) const {
    ProgramBuilder::execute(seq, stages[0].clip);
    append_stage_update(seq, stages[0]);
    if (streams.reports_loss_scale)
      ProgramBuilder::stream_out(seq, streams.loss_scale_stream, streams.loss_scale_report);
  }

  // The forward pass and loss of one stage (a pipeline runs its own program).
  void forward_pass(format::Sequence& seq) const {
    ProgramBuilder::execute(seq, stages[0].forward);
    ProgramBuilder::execute(seq, stages[0].loss);
  }

  void receive_hyper_parameters(format::Sequence& seq) const {
    if (!has_hyper) return;
    ProgramBuilder::stream_in(seq, hyper_stream, hyper_tensors[0]);
    for (int v : graph.values_with_role(ir::Role::kHyperParameters)) {
      if (graph.value(v).stage != 0) ProgramBuilder::copy(seq, hyper_tensors[0], ctx.tensor(v));
    }
  }

  // They arrive before the update's first forward pass: loss scaling's seed reads them in the
  // backward pass.
  format::Sequence step_with(bool backward) const {
    format::Sequence step;
    if (backward && accumulators.empty()) receive_hyper_parameters(step);
    ProgramBuilder::stream_in(step, streams.features_stream, streams.features);
    ProgramBuilder::stream_in(step, streams.labels_stream, streams.labels);
    forward_pass(step);
    if (backward) ProgramBuilder::execute(step, all_stages(&StageComputeSets::backward));
    if (backward && accumulators.empty()) append_update(step);
    ProgramBuilder::stream_out(step, streams.loss_stream, streams.loss);
    if (streams.counts_correct) ProgramBuilder::stream_out(step, streams.correct_stream, streams.correct);
    for (const StepStreams::Metric& m : streams.metrics)
      ProgramBuilder::stream_out(step, m.stream, m.sum);
    return step;
  }

  std::pair<StreamedTensors, StreamedTensors> bind_model_io();
  format::Sequence add_weights_from_host();
  void bind_training_streams(const std::optional<uint32_t>& loss_scale_report);
  void add_train_program();
  void add_evaluate_program();
  void add_predict_program(const StreamedTensors& input_streams, const StreamedTensors& output_streams);
};

// The model's inputs and outputs: their streams, and their descriptions in the executable.
std::pair<StreamedTensors, StreamedTensors> NamedPrograms::bind_model_io() {
  // A graph without inputs (only inference has none: the constants constant folding evaluates, an
  // ONNX model of constants) streams nothing in.
  if (!io.inputs.empty()) {
    streams.features = ctx.tensor(io.inputs[0].value);
    streams.features_stream = programs.stream(std::string(format::kFeaturesStream),
                                              format::Stream::HOST_TO_DEVICE, streams.features);
  }
  // Every further input and output has its own stream; predict moves them all.
  auto bind = [&](const IoBinding& b, size_t i, bool input) {
    const uint32_t tensor = ctx.tensor(b.value);
    const std::string base(input ? format::kFeaturesStream : format::kPredictionsStream);
    const uint32_t stream = input && i == 0 ? streams.features_stream
                                            : programs.stream(i == 0 ? base : base + ":" + std::to_string(i),
                                                              input ? format::Stream::HOST_TO_DEVICE
                                                                    : format::Stream::DEVICE_TO_HOST,
                                                              tensor);
    format::ModelIo* m = input ? exe.add_inputs() : exe.add_outputs();
    m->set_name(b.name);
    // A float that is FLOAT16 on the device (declared so, or --precision fp16) reaches the host as
    // float16: its values are binary16, and a float32 file would only double their size.
    const bool half = exe.tensors(static_cast<int>(tensor)).dtype() == format::FLOAT16;
    m->set_dtype(b.dtype == "f4" && half ? "f2" : b.dtype);
    for (int64_t d : graph.value(b.value).type.shape)
      m->add_shape(d);
    m->set_batched(b.batched);
    m->set_stream(stream);
    return std::pair{stream, tensor};
  };
  StreamedTensors input_streams, output_streams;
  for (size_t i = 0; i < io.inputs.size(); ++i)
    input_streams.push_back(bind(io.inputs[i], i, true));
  for (size_t i = 0; i < io.outputs.size(); ++i)
    output_streams.push_back(bind(io.outputs[i], i, false));
  return {std::move(input_streams), std::move(output_streams)};
}

// Weights, optimizer state and running statistics travel between host and device by name. Adds
// weights_from_host; returns the body of weights_to_host, the last program.
format::Sequence NamedPrograms::add_weights_from_host() {
  format::Sequence to_device, to_host;
  for (const ir::Value& v : graph.values()) {
    if (v.role != ir::Role::kWeight && v.role != ir::Role::kOptimizerState &&
        v.role != ir::Role::kRunningStatistics)
      continue;
    const uint32_t t = ctx.tensor(v.id);
    ProgramBuilder::stream_in(to_device,
                              programs.stream(std::string(format::kToDeviceStreamPrefix) + v.name,
                                              format::Stream::HOST_TO_DEVICE, t),
                              t);
    ProgramBuilder::stream_out(
        to_host,
        programs.stream(std::string(format::kToHostStreamPrefix) + v.name, format::Stream::DEVICE_TO_HOST, t),
        t);
  }
  programs.add(std::string(format::kWeightsFromHostProgram), ProgramBuilder::sequence(std::move(to_device)),
               1);
  return to_host;
}

// The labels, the loss and the metrics, the loss scale's report, and the hyper-parameters.
void NamedPrograms::bind_training_streams(const std::optional<uint32_t>& loss_scale_report) {
  streams.labels = ctx.tensor(io.loss->labels);
  streams.loss = ctx.tensor(io.loss->loss);
  streams.counts_correct = io.loss->correct >= 0;
  streams.labels_stream =
      programs.stream(std::string(format::kLabelsStream), format::Stream::HOST_TO_DEVICE, streams.labels);
  // Float labels travel as [batch, labels per sample] (docs/executable_format.md), whatever shape
  // the loss reads them in.
  const ir::TensorType& labels_type = graph.value(io.loss->labels).type;
  if (labels_type.dtype == ir::DType::kFloat32) {
    const int64_t batch = labels_type.shape.at(0);
    auto* shape = exe.mutable_streams(static_cast<int>(streams.labels_stream))->mutable_shape();
    shape->Clear();
    shape->Add(batch);
    shape->Add(labels_type.elements() / batch);
  }
  streams.loss_stream =
      programs.stream(std::string(format::kLossStream), format::Stream::DEVICE_TO_HOST, streams.loss);
  for (const passes::LossValues::Metric& m : io.loss->metrics) {
    const uint32_t sum = ctx.tensor(m.sum);
    streams.metrics.push_back({programs.stream(std::string(format::kMetricStreamPrefix) + m.name,
                                               format::Stream::DEVICE_TO_HOST, sum),
                               sum});
  }
  if (loss_scale_report) {
    streams.reports_loss_scale = true;
    streams.loss_scale_report = *loss_scale_report;
    streams.loss_scale_stream = programs.stream(std::string(format::kLossScaleStream),
                                                format::Stream::DEVICE_TO_HOST, *loss_scale_report);
  }
  if (streams.counts_correct) {
    streams.correct = ctx.tensor(io.loss->correct);
    streams.correct_stream =
        programs.stream(std::string(format::kCorrectStream), format::Stream::DEVICE_TO_HOST, streams.correct);
  }
  for (int v : graph.values_with_role(ir::Role::kHyperParameters)) {
    hyper_tensors[static_cast<size_t>(graph.value(v).stage)] = ctx.tensor(v);
    has_hyper = true;
  }
  hyper_stream = has_hyper ? programs.stream(std::string(format::kHyperParametersStream),
                                             format::Stream::HOST_TO_DEVICE, hyper_tensors[0])
                           : 0;
}

void NamedPrograms::add_train_program() {
  if (S > 1) {
    const PipelinePlan plan = plan_pipeline(S, static_cast<int>(K), options.schedule);
    format::Sequence one_update;
    receive_hyper_parameters(one_update);
    format::Sequence pipelined =
        build_pipelined_update(ctx, programs, stages, streams, plan, accumulators, options.replicas,
                               options.recompute, receive, *exe.mutable_estimates()->mutable_schedule());
    for (auto& step : *pipelined.mutable_steps())
      *one_update.add_steps() = std::move(step);
    programs.add(
        std::string(format::kTrainProgram),
        after_sets(statistics_mode.training, ProgramBuilder::repeat(steps / K, std::move(one_update))),
        steps);
  } else if (accumulators.empty()) {
    format::ScheduleEstimate& estimate = *exe.mutable_estimates()->mutable_schedule();
    estimate_single_stage(programs, stages[0], 1, estimate);
    format::Sequence update;
    append_update(update);
    estimate.set_update_cycles(programs.estimator().cycles_of(ProgramBuilder::sequence(std::move(update))));
    programs.add(std::string(format::kTrainProgram),
                 after_sets(statistics_mode.training, ProgramBuilder::repeat(steps, step_with(true))), steps);
  } else {
    // K micro-batches accumulate gradients; replicas average them; then one update.
    format::Sequence finish;
    if (options.replicas > 1)
      *finish.add_steps()->mutable_all_reduce() = ctx.gradient_all_reduce(accumulators);
    append_update(finish);
    format::ScheduleEstimate& estimate = *exe.mutable_estimates()->mutable_schedule();
    estimate_single_stage(programs, stages[0], static_cast<int>(K), estimate);
    estimate.set_update_cycles(programs.estimator().cycles_of(ProgramBuilder::sequence(finish)));
    format::Sequence one_update;
    receive_hyper_parameters(one_update);
    *one_update.add_steps() = ProgramBuilder::repeat(K, step_with(true));
    for (auto& step : *finish.mutable_steps())
      *one_update.add_steps() = std::move(step);
    programs.add(
        std::string(format::kTrainProgram),
        after_sets(statistics_mode.training, ProgramBuilder::repeat(steps / K, std::move(one_update))),
        steps);
  }
}

// A pipeline evaluates as it predicts, every stage on its own micro-batch (pipeline_inference.h).
void NamedPrograms::add_evaluate_program() {
  InferencePipeline evaluate{
      {},
      {{streams.features_stream, streams.features}, {streams.labels_stream, streams.labels}},
      {{streams.loss_stream, streams.loss}}};
  for (const StageComputeSets& sets : stages) {
    evaluate.stage_sets.push_back(sets.forward);
    evaluate.stage_sets.back().insert(evaluate.stage_sets.back().end(), sets.loss.begin(), sets.loss.end());
  }
  if (streams.counts_correct) evaluate.outputs.push_back({streams.correct_stream, streams.correct});
  for (const StepStreams::Metric& m : streams.metrics)
    evaluate.outputs.push_back({m.stream, m.sum});
  programs.add(std::string(format::kEvaluateProgram),
               after_sets(statistics_mode.inference,
                          S > 1 ? build_pipelined_inference(ctx, programs, evaluate, steps, receive, nullptr)
                                : ProgramBuilder::repeat(steps, step_with(false))),
               steps);
}

void NamedPrograms::add_predict_program(const StreamedTensors& input_streams,
                                        const StreamedTensors& output_streams) {
  InferencePipeline predict;
  for (const StageComputeSets& sets : stages)
    predict.stage_sets.push_back(sets.forward);
  for (const auto& [stream, tensor] : input_streams)
    predict.inputs.push_back({stream, tensor});
  for (const auto& [stream, tensor] : output_streams)
    predict.outputs.push_back({stream, tensor});
  programs.add(
      std::string(format::kPredictProgram),
      after_sets(statistics_mode.inference,
                 build_pipelined_inference(ctx, programs, predict, steps, receive,
                                           train ? nullptr : exe.mutable_estimates()->mutable_schedule())),
      steps);
}

} // namespace

void build_named_programs(LowerContext& ctx, ProgramBuilder& programs, format::Executable& exe,
                          const ir::Graph& graph, const GraphInterface& io, const LoweringOptions& options,
                          const LoweredSets& sets) {
  NamedPrograms named{ctx, programs, exe, graph, io, options, sets.stages, sets.statistics_mode};
  const auto [input_streams, output_streams] = named.bind_model_io();
  format::Sequence to_host = named.add_weights_from_host();
  for (int acc : io.accumulators)
    named.accumulators.push_back(ctx.tensor(acc));
  if (named.train && options.replicas > 1 && !named.accumulators.empty()) {
    *exe.mutable_estimates()->mutable_all_reduce() =
        programs.estimator().all_reduce_estimate(ctx.gradient_all_reduce(named.accumulators));
  }
  if (named.train) {
    named.bind_training_streams(sets.loss_scale_report);
    named.add_train_program();
    named.add_evaluate_program();
  }
  named.add_predict_program(input_streams, output_streams);
  programs.add(std::string(format::kWeightsToHostProgram), ProgramBuilder::sequence(std::move(to_host)), 1);
}

} // namespace ipu::lowering
