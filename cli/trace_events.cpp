#include "cli/trace_events.h"

namespace ipu::cli {
namespace {

nlohmann::json metadata(const char* what, int pid, int tid, nlohmann::json args) {
  return {{"ph", "M"}, {"name", what}, {"pid", pid}, {"tid", tid}, {"args", std::move(args)}};
}

} // namespace

int TraceEvents::track(const std::string& process, const std::string& thread) {
  auto [process_it, new_process] = m_processes.emplace(process, static_cast<int>(m_processes.size()) + 1);
  const int pid = process_it->second;
  if (new_process) {
    m_events.push_back(metadata("process_name", pid, 0, {{"name", process}}));
    // Tracks in the order first named, not by name or pid.
    m_events.push_back(metadata("process_sort_index", pid, 0, {{"sort_index", pid}}));
  }
  auto [track_it, new_track] =
      m_track_ids.emplace(std::make_pair(pid, thread), static_cast<int>(m_tracks.size()));
  if (new_track) {
    int tid = 1;
    for (const Track& t : m_tracks)
      tid += t.pid == pid ? 1 : 0;
    m_tracks.push_back({pid, tid});
    m_events.push_back(metadata("thread_name", pid, tid, {{"name", thread}}));
    m_events.push_back(metadata("thread_sort_index", pid, tid, {{"sort_index", tid}}));
  }
  return track_it->second;
}

void TraceEvents::slice(int track, const std::string& name, const char* category, double start_us,
                        double duration_us, nlohmann::json args) {
  const Track& t = m_tracks.at(static_cast<size_t>(track));
  m_events.push_back({{"ph", "X"},
                      {"name", name},
                      {"cat", category},
                      {"pid", t.pid},
                      {"tid", t.tid},
                      {"ts", start_us},
                      {"dur", duration_us},
                      {"args", std::move(args)}});
  ++m_slices;
}

nlohmann::json TraceEvents::document(nlohmann::json other_data) && {
  return {
      {"traceEvents", std::move(m_events)}, {"displayTimeUnit", "ns"}, {"otherData", std::move(other_data)}};
}

} // namespace ipu::cli
