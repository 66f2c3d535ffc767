#include "runtime/session/session_impl.h"

#include <algorithm>
#include <string>

#include "runtime/format/host_contract.h"
#include "runtime/format/verifier.h"

namespace ipu::session {

Session::Session(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
Session::~Session() = default;

StatusOr<std::unique_ptr<Session>> Session::create(format::Executable executable,
                                                   const engine::EngineOptions& options) {
  return create(format::LoadedExecutable{std::move(executable), {}}, options);
}

StatusOr<std::unique_ptr<Session>> Session::create(format::LoadedExecutable loaded,
                                                   const engine::EngineOptions& options) {
  // Everything the host copies is proved to fit before the engine verifies the rest and
  // allocates the device.
  IPU_RETURN_IF_ERROR(format::verify_host_contract(loaded.executable));
  auto impl = std::make_unique<Impl>();
  IPU_ASSIGN_OR_RETURN(impl->engine, engine::Engine::create(std::move(loaded), options));
  const format::Executable& exe = impl->engine->executable();
  impl->collectives = options.collectives;
  impl->replicas = impl->engine->replicas();
  impl->first_replica = impl->engine->first_replica();
  impl->total_replicas = format::replica_count(exe);
  impl->batch = int64_t{exe.batch_size()} * impl->replicas;
  impl->global_batch = int64_t{exe.batch_size()} * impl->total_replicas;
  impl->steps_per_execution = exe.steps_per_execution();
  impl->stream_features = impl->engine->find_stream(std::string(format::kFeaturesStream));
  impl->stream_labels = impl->engine->find_stream(std::string(format::kLabelsStream));
  impl->float_labels =
      impl->stream_labels && exe.streams(static_cast<int>(*impl->stream_labels)).dtype() == format::FLOAT32;
  impl->stream_loss = impl->engine->find_stream(std::string(format::kLossStream));
  impl->stream_correct = impl->engine->find_stream(std::string(format::kCorrectStream));
  if (impl->stream_correct) impl->metrics.push_back({"accuracy", *impl->stream_correct});
  for (int i = 0; i < exe.streams_size(); ++i) {
    const std::string& name = exe.streams(i).name();
    if (name.rfind(format::kMetricStreamPrefix, 0) == 0) {
      impl->metrics.push_back({name.substr(format::kMetricStreamPrefix.size()), static_cast<uint32_t>(i)});
    }
  }
  impl->stream_predictions = impl->engine->find_stream(std::string(format::kPredictionsStream));
  impl->stream_loss_scale = impl->engine->find_stream(std::string(format::kLossScaleStream));
  impl->stream_hyper = impl->engine->find_stream(std::string(format::kHyperParametersStream));
  impl->hyper = format::hyper_parameter_defaults(exe).value_or(format::HyperParameterValues{});
  impl->hyper_read.insert(exe.hyper_parameters().begin(), exe.hyper_parameters().end());
  // verify_host_contract proved the schedule parses.
  if (!exe.learning_rate_schedule().empty())
    impl->schedule = format::parse_learning_rate_schedule(exe.learning_rate_schedule()).value();
  const uint32_t accumulation = std::max<uint32_t>(1, exe.pipeline().gradient_accumulation());
  impl->updates_per_execution = std::max<int64_t>(1, impl->steps_per_execution / accumulation);
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

std::map<uint32_t, std::vector<std::byte>>& Session::Impl::host_weights() {
  if (host_state) return *host_state;
  const format::Executable& exe = engine->executable();
  host_state.emplace();
  for (int i = 0; i < exe.tensors_size(); ++i) {
    const format::Tensor& t = exe.tensors(i);
    // What travels to the host and into checkpoints: weights, optimizer state and batch
    // normalization's running statistics (replica 0's, as weights_to_host reads them).
    if (t.role() != format::WEIGHT && t.role() != format::OPTIMIZER_STATE &&
        t.role() != format::RUNNING_STATISTICS)
      continue;
    auto bytes = engine->tensor_bytes(static_cast<uint32_t>(i));
    (*host_state)[static_cast<uint32_t>(i)].assign(bytes.begin(), bytes.end());
  }
  return *host_state;
}

const format::Executable& Session::executable() const {
  return m_impl->engine->executable();
}

StatusOr<uint32_t> Session::Impl::program(std::string_view name) const {
  auto index = engine->find_program(std::string(name));
  if (!index) {
    return failed_precondition("this executable has no '" + std::string(name) +
                               "' program (compiled with --mode " + engine->executable().mode() + ")");
  }
  return *index;
}

int64_t Session::samples_per_step() const {
  return m_impl->global_batch;
}

int64_t Session::default_steps_per_epoch(const data::Dataset& data) const {
  return m_impl->default_steps_per_epoch(data);
}

int64_t Session::Impl::default_steps_per_epoch(const data::Dataset& data) const {
  const int64_t batches = static_cast<int64_t>(data.num_samples) / global_batch;
  return batches - batches % steps_per_execution;
}

std::vector<std::string> Session::metric_names() const {
  std::vector<std::string> names;
  for (const Impl::MetricStream& m : m_impl->metrics)
    names.push_back(m.name);
  return names;
}

Status Session::set_hyper_parameter(std::string_view name, float value) {
  Impl& s = *m_impl;
  const std::optional<uint32_t> slot = format::hyper_parameter_slot(name);
  if (!slot || !s.hyper_read.count(name)) {
    std::string read;
    for (const std::string& n : s.engine->executable().hyper_parameters())
      read += (read.empty() ? "" : ", ") + n;
    return invalid_argument("this executable's optimizer does not read " + std::string(name) +
                            (read.empty() ? std::string(" (it has no optimizer)")
                                          : " (it reads " + read +
                                                "; a value that is 0 when compiled, such as SGD's momentum, "
                                                "changes the program: compile with it)"));
  }
  s.hyper[*slot] = value;
  if (*slot == format::HyperParameter::kLearningRate) s.schedule.reset();
  return Status();
}

Status Session::set_learning_rate_schedule(std::optional<format::LearningRateSchedule> schedule) {
  if (schedule &&
      !m_impl->hyper_read.count(format::kHyperParameterNames[format::HyperParameter::kLearningRate]))
    return invalid_argument("this executable has no optimizer whose learning rate a schedule could set");
  m_impl->schedule = std::move(schedule);
  return Status();
}

bool Session::has_learning_rate_schedule() const {
  return m_impl->schedule.has_value();
}

const format::HyperParameterValues& Session::hyper_parameters() const {
  return m_impl->hyper;
}

int64_t Session::iterations() const {
  return m_impl->iterations;
}

int64_t Session::epochs_trained() const {
  return m_impl->epochs_trained;
}

} // namespace ipu::session
