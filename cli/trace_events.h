// Chrome's trace-event format, the JSON object form that Perfetto's UI (ui.perfetto.dev, "Open
// trace file") and chrome://tracing load: complete events ("ph": "X", a start and a duration in
// microseconds) on tracks, each a thread of a process, named by metadata events. Slices on one
// track nest by time: a slice inside another's interval is drawn beneath it.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace ipu::cli {

// Slices a trace draws one by one: a ResNet-50 step is a few thousand, and a file of this many
// stays a size Perfetto's UI opens. Past it, a long loop's iterations become one slice (compile)
// or the run's further steps are counted, not drawn (ipurun).
inline constexpr uint64_t kMaxTraceSlices = 200000;

class TraceEvents {
public:
  // The track `thread` of `process`, created (and ordered) as first named.
  int track(const std::string& process, const std::string& thread);

  // A slice on `track` from `start_us` for `duration_us` (both ≥ 0).
  void slice(int track, const std::string& name, const char* category, double start_us, double duration_us,
             nlohmann::json args = nlohmann::json::object());

  size_t slices() const { return m_slices; }

  // {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": other_data}.
  nlohmann::json document(nlohmann::json other_data) &&;

private:
  struct Track {
    int pid;
    int tid;
  };
  std::map<std::string, int> m_processes;
  std::map<std::pair<int, std::string>, int> m_track_ids;
  std::vector<Track> m_tracks;
  nlohmann::json m_events = nlohmann::json::array();
  size_t m_slices = 0;
};

} // namespace ipu::cli
