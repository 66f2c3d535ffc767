#include "cli/estimated_trace.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "cli/ipu_tracks.h"
#include "cli/trace_events.h"
#include "compiler/lowering/program_estimator.h"
#include "compiler/target/target.h"
#include "runtime/format/host_contract.h"
#include "runtime/format/verifier.h"

namespace ipu::cli {
namespace {

using lowering::PlacedStep;

// How many names a slice's args list before "... and N more".
constexpr size_t kListedNames = 16;

template <typename Names> nlohmann::json listed(const Names& names) {
  nlohmann::json out = nlohmann::json::array();
  size_t n = 0;
  for (const auto& name : names) {
    if (n++ == kListedNames) {
      out.push_back("... and " + std::to_string(static_cast<size_t>(std::size(names)) - kListedNames) +
                    " more");
      break;
    }
    out.push_back(name);
  }
  return out;
}

class EstimatedTrace {
public:
  EstimatedTrace(const format::Executable& exe, const lowering::ProgramEstimator& estimator, double clock_hz)
      : m_exe(exe), m_estimator(estimator), m_clock_hz(clock_hz), m_ipus(format::ipus_per_replica(exe)),
        m_compute_set_cycles(m_ipus, 0.0), m_compute_set_ipus(static_cast<size_t>(exe.compute_sets_size())) {
    for (uint32_t ipu = 0; ipu < m_ipus; ++ipu)
      ipu_track(ipu); // the IPUs first, in order, then the links and the host as they appear
  }

  void draw(const PlacedStep& step) {
    switch (step.kind) {
    case PlacedStep::Kind::kComputeSet:
      draw_compute_set(step.program->execute(), step);
      return;
    case PlacedStep::Kind::kCopies:
      draw_copies(step);
      return;
    case PlacedStep::Kind::kStreamIn:
      draw_stream("stream in: ", step.program->stream_in(), step);
      return;
    case PlacedStep::Kind::kStreamOut:
      draw_stream("stream out: ", step.program->stream_out(), step);
      return;
    case PlacedStep::Kind::kAllReduce:
      draw_all_reduce(step);
      return;
    case PlacedStep::Kind::kRepeatRest:
      m_events.slice(m_events.track("Program", "loops"),
                     "repeat: " + std::to_string(step.iterations) + " more iterations (not drawn one by one)",
                     "loop", us(step.start), us(step.cycles),
                     {{"iterations", step.iterations}, {"cycles", step.cycles}});
      return;
    }
  }

  TraceEvents& events() { return m_events; }
  const std::vector<double>& compute_set_cycles() const { return m_compute_set_cycles; }

private:
  double us(double cycles) const { return cycles / m_clock_hz * 1e6; }

  const std::vector<uint32_t>& ipus_of(uint32_t compute_set) {
    std::vector<uint32_t>& ipus = m_compute_set_ipus[compute_set];
    if (ipus.empty()) ipus = compute_set_ipus(m_exe, m_exe.compute_sets(static_cast<int>(compute_set)));
    return ipus;
  }

  int ipu_track(uint32_t ipu) { return m_events.track(ipu_process_name(m_exe, ipu), "compute sets"); }

  void draw_compute_set(uint32_t index, const PlacedStep& step) {
    const format::ComputeSet& cs = m_exe.compute_sets(static_cast<int>(index));
    const nlohmann::json args = {{"cycles", cs.cycles()},
                                 {"compute_cycles", cs.compute_cycles()},
                                 {"vertex_launch_cycles", cs.launch_cycles()},
                                 {"exchange_cycles", cs.exchange_cycles()},
                                 {"sync_cycles", cs.sync_cycles()},
                                 {"exchange_bytes", cs.exchange_bytes()},
                                 {"vertices", cs.vertices_size()},
                                 {"ops", listed(cs.ops())}};
    // The superstep's phases in BSP order, scaled into the compute set's whole cycles (which
    // round their sum) so they nest inside it.
    const double parts[] = {cs.sync_cycles(), cs.exchange_cycles(), cs.launch_cycles() + cs.compute_cycles()};
    const char* names[] = {"sync", "exchange", "compute"};
    const double sum = parts[0] + parts[1] + parts[2];
    const double scale = sum > step.cycles && sum > 0 ? step.cycles / sum : 1.0;
    for (uint32_t ipu : ipus_of(index)) {
      const int track = ipu_track(ipu);
      m_events.slice(track, cs.name(), "compute set", us(step.start), us(step.cycles), args);
      double at = step.start;
      for (int p = 0; p < 3; ++p) {
        if (parts[p] <= 0) continue;
        m_events.slice(track, names[p], "superstep phase", us(at), us(parts[p] * scale));
        at += parts[p] * scale;
      }
      if (ipu < m_compute_set_cycles.size()) m_compute_set_cycles[ipu] += step.cycles;
    }
  }

  void draw_copies(const PlacedStep& step) {
    double bytes = 0;
    std::set<uint32_t> ipus;
    std::vector<std::string> tensors;
    bool between_ipus = false;
    for (const format::Copy* copy : step.copies) {
      const format::Tensor& from = m_exe.tensors(static_cast<int>(copy->source()));
      const format::Tensor& to = m_exe.tensors(static_cast<int>(copy->destination()));
      bytes += static_cast<double>(format::element_count(from) * format::dtype_size(from.dtype()));
      between_ipus = between_ipus || from.ipu() != to.ipu();
      ipus.insert(from.ipu());
      tensors.push_back(from.name() + " -> " + to.name());
    }
    const std::string name = std::to_string(step.copies.size()) +
                             (step.copies.size() == 1 ? " copy" : " copies") +
                             (between_ipus ? " between IPUs" : "");
    const int track = between_ipus || ipus.empty() ? m_events.track("IPU-Links", "copies between IPUs")
                                                   : ipu_track(*ipus.begin());
    m_events.slice(track, name, "copy", us(step.start), us(step.cycles),
                   {{"cycles", step.cycles}, {"bytes", bytes}, {"tensors", listed(tensors)}});
  }

  void draw_stream(const char* direction, const format::StreamTransfer& transfer, const PlacedStep& step) {
    const format::Stream& stream = m_exe.streams(static_cast<int>(transfer.stream()));
    const format::Tensor& tensor = m_exe.tensors(static_cast<int>(transfer.tensor()));
    m_events.slice(m_events.track("Host", "streams"), direction + stream.name(), "host transfer",
                   us(step.start), us(step.cycles),
                   {{"cycles", step.cycles},
                    {"bytes", format::element_count(tensor) * format::dtype_size(tensor.dtype())},
                    {"tensor", tensor.name()}});
  }

  void draw_all_reduce(const PlacedStep& step) {
    const format::AllReduce& all_reduce = step.program->all_reduce();
    const format::AllReduceEstimate estimate = m_estimator.all_reduce_estimate(all_reduce);
    m_events.slice(m_events.track("IPU-Links", "gradient all-reduce"),
                   "all-reduce: " + std::to_string(all_reduce.tensors_size()) + " tensors", "all-reduce",
                   us(step.start), us(step.cycles),
                   {{"cycles", step.cycles},
                    {"bytes_per_replica", estimate.bytes()},
                    {"replicas", estimate.replicas()},
                    {"pods", estimate.pods()},
                    {"ipu_link_cycles", estimate.ipu_link_cycles()},
                    {"gw_link_cycles", estimate.gw_link_cycles()}});
  }

  const format::Executable& m_exe;
  const lowering::ProgramEstimator& m_estimator;
  double m_clock_hz;
  uint32_t m_ipus;
  TraceEvents m_events;
  std::vector<double> m_compute_set_cycles;
  std::vector<std::vector<uint32_t>> m_compute_set_ipus;
};

} // namespace

StatusOr<nlohmann::json> estimated_trace(const format::Executable& executable) {
  const std::string_view main =
      executable.mode() == "train" ? format::kTrainProgram : format::kPredictProgram;
  const format::NamedProgram* program = nullptr;
  for (const format::NamedProgram& p : executable.programs()) {
    if (p.name() == main) program = &p;
  }
  if (program == nullptr) return invalid_argument("the executable has no " + std::string(main) + " program");
  const uint32_t replicas = std::max<uint32_t>(1, executable.pipeline().replicas());
  IPU_ASSIGN_OR_RETURN(const target::TargetSpec target, target::target_of(executable.target(), replicas));
  const lowering::ProgramEstimator estimator(executable, target, replicas);

  EstimatedTrace trace(executable, estimator, target.clock_hz);
  uint64_t steps_left = kMaxTraceSlices;
  const double cycles = estimator.place(
      program->program(), 0.0, [&](const PlacedStep& step) { trace.draw(step); }, steps_left);
  nlohmann::json per_ipu = nlohmann::json::array();
  for (double c : trace.compute_set_cycles())
    per_ipu.push_back(c);
  const double steps =
      program->cycles_per_step() > 0 ? cycles / static_cast<double>(program->cycles_per_step()) : 0;
  nlohmann::json other = {
      {"tool", "ipucc compile --trace"},
      {"what", "the compiler's estimate of one run of the " + std::string(main) +
                   " program, replica 0 (every replica runs it alike on IPUs of its own)"},
      {"model", executable.model_name()},
      {"program", std::string(main)},
      {"clock_hz", target.clock_hz},
      {"replicas", replicas},
      {"estimated_cycles", cycles},
      {"cycles_per_step", program->cycles_per_step()},
      {"steps", std::llround(steps)},
      {"compute_set_cycles_per_ipu", std::move(per_ipu)},
      {"slices", trace.events().slices()},
  };
  return std::move(trace.events()).document(std::move(other));
}

} // namespace ipu::cli
