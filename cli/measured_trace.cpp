#include "cli/measured_trace.h"

#include <algorithm>
#include <map>

#include "cli/ipu_tracks.h"
#include "cli/trace_events.h"
#include "runtime/format/verifier.h"

namespace ipu::cli {
namespace {

// Compute sets the summary in otherData names, by host time.
constexpr size_t kSummarisedComputeSets = 20;

} // namespace

void MeasuredTrace::attached(const format::Executable& executable) {
  std::lock_guard<std::mutex> lock(m_mutex);
  m_model = executable.model_name();
  for (const format::NamedProgram& p : executable.programs())
    m_programs.push_back(p.name());
  for (const format::Stream& s : executable.streams())
    m_streams.push_back(s.name());
  for (const format::ComputeSet& cs : executable.compute_sets()) {
    m_compute_sets.push_back(cs.name());
    m_compute_set_ipus.push_back(compute_set_ipus(executable, cs));
  }
  for (const format::Tensor& t : executable.tensors())
    m_tensors.push_back({t.name(), t.ipu()});
  for (uint32_t ipu = 0; ipu < format::ipus_per_replica(executable); ++ipu)
    m_ipus.push_back(ipu_process_name(executable, ipu));
}

void MeasuredTrace::ran_program(uint32_t program, Clock::time_point start, Clock::time_point end) {
  std::lock_guard<std::mutex> lock(m_mutex);
  m_records.push_back({Kind::kProgram, program, 0, start, end});
}

void MeasuredTrace::ran_step(const format::Program& step, Clock::time_point start, Clock::time_point end) {
  Record record{Kind::kComputeSet, 0, 0, start, end};
  switch (step.kind_case()) {
  case format::Program::kExecute:
    record.index = step.execute();
    break;
  case format::Program::kCopy:
    record = {Kind::kCopy, step.copy().source(), step.copy().destination(), start, end};
    break;
  case format::Program::kStreamIn:
    record = {Kind::kStreamIn, step.stream_in().stream(), 0, start, end};
    break;
  case format::Program::kStreamOut:
    record = {Kind::kStreamOut, step.stream_out().stream(), 0, start, end};
    break;
  case format::Program::kAllReduce:
    record = {Kind::kAllReduce, 0, static_cast<uint32_t>(step.all_reduce().tensors_size()), start, end};
    break;
  default:
    return;
  }
  std::lock_guard<std::mutex> lock(m_mutex);
  if (m_records.size() >= kMaxTraceSlices) {
    ++m_steps_left_out;
    return;
  }
  m_records.push_back(record);
}

bool MeasuredTrace::ran() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return std::any_of(m_records.begin(), m_records.end(),
                     [](const Record& r) { return r.kind == Kind::kProgram; });
}

nlohmann::json MeasuredTrace::document() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  TraceEvents events;
  for (const std::string& ipu : m_ipus)
    events.track(ipu, "compute sets (host time)");
  Clock::time_point origin = Clock::time_point::max();
  for (const Record& r : m_records)
    origin = std::min(origin, r.start);
  auto us = [origin](Clock::time_point t) {
    return std::chrono::duration<double, std::micro>(t - origin).count();
  };

  struct Total {
    uint64_t runs = 0;
    double us = 0;
  };
  std::map<uint32_t, Total> by_program;
  std::map<uint32_t, Total> by_compute_set;
  for (const Record& r : m_records) {
    const double start = us(r.start);
    const double duration = us(r.end) - start;
    switch (r.kind) {
    case Kind::kProgram:
      events.slice(events.track("Host", "programs"), m_programs.at(r.index), "program", start, duration);
      by_program[r.index].runs += 1;
      by_program[r.index].us += duration;
      break;
    case Kind::kComputeSet:
      for (uint32_t ipu : m_compute_set_ipus.at(r.index)) {
        events.slice(
            events.track(m_ipus.at(std::min<size_t>(ipu, m_ipus.size() - 1)), "compute sets (host time)"),
            m_compute_sets.at(r.index), "compute set", start, duration);
      }
      by_compute_set[r.index].runs += 1;
      by_compute_set[r.index].us += duration;
      break;
    case Kind::kCopy: {
      const TensorInfo& from = m_tensors.at(r.index);
      const TensorInfo& to = m_tensors.at(r.second);
      const int track = from.ipu != to.ipu
                            ? events.track("IPU-Links", "copies between IPUs")
                            : events.track(m_ipus.at(std::min<size_t>(from.ipu, m_ipus.size() - 1)),
                                           "compute sets (host time)");
      events.slice(track, "copy " + from.name + " -> " + to.name, "copy", start, duration);
      break;
    }
    case Kind::kStreamIn:
    case Kind::kStreamOut:
      events.slice(events.track("Host", "streams"),
                   (r.kind == Kind::kStreamIn ? "stream in: " : "stream out: ") + m_streams.at(r.index),
                   "host transfer", start, duration);
      break;
    case Kind::kAllReduce:
      events.slice(events.track("IPU-Links", "gradient all-reduce"),
                   "all-reduce: " + std::to_string(r.second) + " tensors", "all-reduce", start, duration);
      break;
    }
  }

  nlohmann::json programs = nlohmann::json::object();
  for (const auto& [index, total] : by_program)
    programs[m_programs.at(index)] = {{"runs", total.runs}, {"host_seconds", total.us / 1e6}};
  std::vector<std::pair<uint32_t, Total>> slowest(by_compute_set.begin(), by_compute_set.end());
  std::sort(slowest.begin(), slowest.end(),
            [](const auto& a, const auto& b) { return a.second.us > b.second.us; });
  slowest.resize(std::min(slowest.size(), kSummarisedComputeSets));
  nlohmann::json compute_sets = nlohmann::json::array();
  for (const auto& [index, total] : slowest) {
    compute_sets.push_back({{"name", m_compute_sets.at(index)},
                            {"runs", total.runs},
                            {"host_seconds", total.us / 1e6},
                            {"mean_host_us", total.us / static_cast<double>(total.runs)}});
  }
  nlohmann::json other = {
      {"tool", "ipurun --trace"},
      {"what", "the host time ipurun spent in each program and step it ran; ipucc compile --trace has the "
               "estimated IPU cycles"},
      {"model", m_model},
      {"programs", std::move(programs)},
      {"compute_sets_by_host_time", std::move(compute_sets)},
      {"steps_left_out", m_steps_left_out},
  };
  return std::move(events).document(std::move(other));
}

} // namespace ipu::cli
