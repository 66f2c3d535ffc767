#include "cli/schedule_report.h"

#include <algorithm>
#include <cstdio>

#include "cli/html_escape.h"

namespace ipu::cli {
namespace {

struct Totals {
  double slots = 0;  // cycles of the schedule's slots
  double update = 0; // all-reduce and weight update
  int stages = 1;
};

Totals totals(const format::Executable& exe) {
  const auto& est = exe.estimates().schedule();
  Totals t;
  for (const auto& slot : est.slots())
    t.slots += slot.cycles();
  t.update = est.update_cycles();
  t.stages = std::max(1, est.busy_cycles_size());
  return t;
}

std::string number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.0f", value);
  return buffer;
}

// The per-step estimate of the program the schedule describes (train; predict in inference), the
// number the compile summary prints, or 0 if the executable has none.
double program_cycles_per_step(const format::Executable& exe) {
  const std::string name = exe.mode() == "train" ? "train" : "predict";
  for (const auto& p : exe.programs()) {
    if (p.name() == name) return static_cast<double>(p.cycles_per_step());
  }
  return 0;
}

} // namespace

nlohmann::json schedule_json(const format::Executable& exe) {
  const auto& est = exe.estimates().schedule();
  const Totals t = totals(exe);
  const bool train = exe.mode() == "train";
  const double micro_batches = train ? std::max<uint32_t>(1, exe.pipeline().gradient_accumulation()) : 1;
  const double per_update = t.slots + t.update;
  double busy_total = 0;
  nlohmann::json ipus = nlohmann::json::array();
  for (int i = 0; i < est.busy_cycles_size(); ++i) {
    busy_total += est.busy_cycles(i);
    ipus.push_back({{"ipu", i},
                    {"busy_cycles", est.busy_cycles(i) / micro_batches},
                    {"idle_cycles", (t.slots - est.busy_cycles(i)) / micro_batches},
                    {"peak_bytes", i < est.peak_bytes_size() ? est.peak_bytes(i) : 0},
                    {"stash_bytes", i < est.stash_bytes_size() ? est.stash_bytes(i) : 0}});
  }
  // One number per step, the program's: the slots and the update are its compute, and what the
  // program runs besides (each step's infeed and outfeed, copies between stages, the all-reduce
  // where the schedule leaves it out) is its transfers. Pipelined schedules hold their transfers
  // in their slots, so there the difference is only rounding.
  const double compute = per_update / micro_batches;
  const double program = program_cycles_per_step(exe);
  const double cycles = program > 0 ? program : compute;
  return {{"stages", exe.pipeline().num_stages()},
          {"gradient_accumulation", exe.pipeline().gradient_accumulation()},
          {"replicas", exe.pipeline().replicas()},
          {"schedule", exe.pipeline().schedule()},
          {"cycles_per_step", cycles},
          {"compute_cycles_per_step", compute},
          {"transfer_cycles_per_step", std::max(0.0, cycles - compute)},
          {"seconds_per_step", cycles / exe.target().clock_hz()},
          {"bubble_fraction", t.slots > 0 ? 1.0 - busy_total / (t.stages * t.slots) : 0.0},
          {"ipus", ipus}};
}

std::string schedule_svg(const format::Executable& exe) {
  const auto& est = exe.estimates().schedule();
  const Totals t = totals(exe);
  constexpr double kWidth = 1000, kRow = 40, kLeft = 70, kTop = 30;
  const double total = std::max(1.0, t.slots + t.update);
  const double scale = kWidth / total;
  const double height = kTop + kRow * t.stages + 40;
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + number(kLeft + kWidth + 20) +
                    "\" height=\"" + number(height) + "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  svg += "<text x=\"" + number(kLeft) + "\" y=\"18\" font-size=\"13\">" + html_escape(exe.model_name()) +
         ": " + exe.pipeline().schedule() + ", " + std::to_string(exe.pipeline().num_stages()) +
         " stage(s), " + std::to_string(exe.pipeline().gradient_accumulation()) +
         " micro-batches per update, " + number(total) + " cycles</text>\n";
  for (int s = 0; s < t.stages; ++s) {
    svg += "<text x=\"4\" y=\"" + number(kTop + kRow * s + 24) + "\">IPU " + std::to_string(s) + "</text>\n";
    svg += "<line x1=\"" + number(kLeft) + "\" x2=\"" + number(kLeft + kWidth) + "\" y1=\"" +
           number(kTop + kRow * (s + 1)) + "\" y2=\"" + number(kTop + kRow * (s + 1)) +
           "\" stroke=\"#ddd\"/>\n";
  }
  double start = 0;
  for (const auto& slot : est.slots()) {
    for (const auto& w : slot.work()) {
      const double x = kLeft + start * scale, width = std::max(1.0, w.cycles() * scale - 1);
      const double y = kTop + kRow * w.stage() + 4;
      const char* fill = w.forward() ? "#6fa8dc" : "#e69138";
      const std::string label = (w.forward() ? "F" : "B") + std::to_string(w.micro_batch());
      svg += "<rect x=\"" + number(x) + "\" y=\"" + number(y) + "\" width=\"" + number(width) +
             "\" height=\"" + number(kRow - 8) + "\" fill=\"" + fill + "\"><title>" + label + ": " +
             number(w.cycles()) + " cycles</title></rect>\n";
      if (width > 14) {
        svg += "<text x=\"" + number(x + 3) + "\" y=\"" + number(y + 20) + "\">" + label + "</text>\n";
      }
    }
    start += slot.cycles();
  }
  if (t.update > 0) {
    for (int s = 0; s < t.stages; ++s) {
      svg += "<rect x=\"" + number(kLeft + start * scale) + "\" y=\"" + number(kTop + kRow * s + 4) +
             "\" width=\"" + number(std::max(1.0, t.update * scale - 1)) + "\" height=\"" + number(kRow - 8) +
             "\" fill=\"#93c47d\"><title>update: " + number(t.update) + " cycles</title></rect>\n";
    }
  }
  svg += "<text x=\"" + number(kLeft) + "\" y=\"" + number(height - 12) +
         "\">F = forward, B = backward (blue, orange) by micro-batch; green = all-reduce and weight "
         "update</text>\n";
  return svg + "</svg>\n";
}

} // namespace ipu::cli
