#include "cli/schedule_report.h"

#include <algorithm>
#include <cstdio>

#include "cli/html_escape.h"
#include "cli/number_text.h"

namespace ipu::cli {
namespace {

struct Totals {
  double slots = 0;  // cycles of the schedule's slots
  double update = 0; // all-reduce and weight update
  int stages = 1;
};

// How many times a slot runs in a row (a pipelined inference's slot with every stage busy).
uint64_t runs(const format::ScheduleSlot& slot) {
  return std::max<uint64_t>(1, slot.repeat());
}

// The micro-batches the schedule estimate covers: a weight update's when training, an
// execution's in inference.
double micro_batches(const format::ExecutableSummary& exe) {
  return exe.mode() == "train" ? std::max<uint32_t>(1, exe.pipeline().gradient_accumulation())
                               : std::max<uint32_t>(1, exe.steps_per_execution());
}

Totals totals(const format::ExecutableSummary& exe) {
  const auto& est = exe.estimates().schedule();
  Totals t;
  for (const auto& slot : est.slots())
    t.slots += slot.cycles() * static_cast<double>(runs(slot));
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
double program_cycles_per_step(const format::ExecutableSummary& exe) {
  const std::string name = exe.mode() == "train" ? "train" : "predict";
  for (const auto& p : exe.programs()) {
    if (p.name() == name) return static_cast<double>(p.cycles_per_step());
  }
  return 0;
}

// Estimated cycles of each stage's passes for one micro-batch: forward, and backward when
// training (the busy cycles of its IPU over the micro-batches of an update), with the copies it
// sends and receives across stage boundaries: what the automatic split balances.
std::vector<double> stage_cycles(const format::ExecutableSummary& exe) {
  const auto& est = exe.estimates().schedule();
  std::vector<double> out;
  for (int i = 0; i < est.busy_cycles_size(); ++i) {
    const double crossing = i < est.crossing_cycles_size() ? est.crossing_cycles(i) : 0;
    out.push_back((est.busy_cycles(i) + crossing) / micro_batches(exe));
  }
  return out;
}

// "a, b and c"
std::string listed(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i)
    out += (i == 0 ? "" : i + 1 == items.size() ? " and " : ", ") + items[i];
  return out;
}

} // namespace

double stage_imbalance(const format::ExecutableSummary& exe) {
  const std::vector<double> cycles = stage_cycles(exe);
  double total = 0, slowest = 0;
  for (double c : cycles) {
    total += c;
    slowest = std::max(slowest, c);
  }
  return total > 0 ? slowest * static_cast<double>(cycles.size()) / total : 1.0;
}

std::string stage_split_note(const std::string& model_path, const format::ExecutableSummary& exe) {
  const format::PipelineInfo& pipeline = exe.pipeline();
  if (pipeline.num_stages() <= 1) return "";
  const auto& est = exe.estimates().schedule();
  std::vector<std::string> cycles, bytes, firsts;
  for (double c : stage_cycles(exe))
    cycles.push_back(rounded_with_commas(c));
  for (uint64_t b : est.peak_tile_bytes())
    bytes.push_back(with_commas(b));
  for (int s = 1; s < pipeline.stage_first_unit_size(); ++s)
    firsts.push_back("'" + pipeline.stage_first_unit(s) + "'");
  const bool train = exe.mode() == "train";
  std::string note = model_path + ": ";
  if (!firsts.empty()) {
    note += std::to_string(pipeline.num_stages()) + " pipeline stages chosen to balance estimated cycles " +
            "within each IPU's tile memory, starting at " + listed(firsts) + "; ";
  }
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%.2f", stage_imbalance(exe));
  note += std::string("stage imbalance: slowest stage ") + ratio + "× the mean (" + listed(cycles) +
          " cycles per micro-batch" + (train ? ", forward and backward" : "") + "; fullest tiles " +
          listed(bytes) + " of " + with_commas(exe.target().bytes_per_tile()) + " bytes)";
  return note;
}

nlohmann::json schedule_json(const format::ExecutableSummary& exe) {
  const auto& est = exe.estimates().schedule();
  const Totals t = totals(exe);
  const double steps = micro_batches(exe);
  const double per_update = t.slots + t.update;
  double busy_total = 0;
  const std::vector<double> per_stage = stage_cycles(exe);
  nlohmann::json ipus = nlohmann::json::array();
  for (int i = 0; i < est.busy_cycles_size(); ++i) {
    busy_total += est.busy_cycles(i);
    ipus.push_back(
        {{"ipu", i},
         {"busy_cycles", est.busy_cycles(i) / steps},
         {"idle_cycles", (t.slots - est.busy_cycles(i)) / steps},
         {"peak_bytes", i < est.peak_bytes_size() ? est.peak_bytes(i) : 0},
         {"crossing_cycles", (i < est.crossing_cycles_size() ? est.crossing_cycles(i) : 0) / steps},
         {"stage_cycles", i < static_cast<int>(per_stage.size()) ? per_stage[static_cast<size_t>(i)] : 0},
         {"peak_tile_bytes", i < est.peak_tile_bytes_size() ? est.peak_tile_bytes(i) : 0},
         {"first_unit", i < exe.pipeline().stage_first_unit_size()
                            ? nlohmann::json(exe.pipeline().stage_first_unit(i))
                            : nlohmann::json()},
         {"stash_bytes", i < est.stash_bytes_size() ? est.stash_bytes(i) : 0}});
  }
  // One number per step, the program's: the slots and the update are its compute, and what the
  // program runs besides (each step's infeed and outfeed, copies between stages, the all-reduce
  // where the schedule leaves it out) is its transfers. Pipelined schedules hold their transfers
  // in their slots, so there the difference is only rounding.
  const double compute = per_update / steps;
  const double program = program_cycles_per_step(exe);
  const double cycles = program > 0 ? program : compute;
  return {{"stages", exe.pipeline().num_stages()},
          {"gradient_accumulation", exe.pipeline().gradient_accumulation()},
          {"replicas", exe.pipeline().replicas()},
          {"schedule", exe.pipeline().schedule()},
          {"split", exe.pipeline().stage_first_unit_size() > 0 ? "automatic" : "given"},
          {"stage_imbalance", stage_imbalance(exe)},
          {"cycles_per_step", cycles},
          {"compute_cycles_per_step", compute},
          {"transfer_cycles_per_step", std::max(0.0, cycles - compute)},
          {"seconds_per_step", cycles / exe.target().clock_hz()},
          {"bubble_fraction", t.slots > 0 ? 1.0 - busy_total / (t.stages * t.slots) : 0.0},
          {"ipus", ipus}};
}

std::string schedule_svg(const format::ExecutableSummary& exe) {
  const auto& est = exe.estimates().schedule();
  const Totals t = totals(exe);
  constexpr double kWidth = 1000, kRow = 40, kLeft = 70, kTop = 30;
  // The program's estimate of the same micro-batches (the cycle table's per-step figure times
  // them): the slots and the update, and what the program runs outside them (host streams and
  // their copies, which the slots leave out), drawn last so the picture adds up to the table.
  const double program = program_cycles_per_step(exe) * micro_batches(exe);
  const double rest = std::max(0.0, program - (t.slots + t.update));
  const double total = std::max(1.0, t.slots + t.update + rest);
  const double scale = kWidth / total;
  const double height = kTop + kRow * t.stages + 40;
  const std::string width = number(kLeft + kWidth + 20);
  // A viewBox, so that a page may draw it at the width it has (the HTML report does).
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + width + "\" height=\"" +
                    number(height) + "\" viewBox=\"0 0 " + width + " " + number(height) +
                    "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  svg += "<text x=\"" + number(kLeft) + "\" y=\"18\" font-size=\"13\">" + html_escape(exe.model_name()) +
         ": " + exe.pipeline().schedule() + ", " + std::to_string(exe.pipeline().num_stages()) +
         " stage(s), " + number(micro_batches(exe)) +
         (exe.mode() == "train" ? " micro-batches per update, " : " micro-batches per execution, ") +
         number(total) + " cycles</text>\n";
  for (int s = 0; s < t.stages; ++s) {
    svg += "<text x=\"4\" y=\"" + number(kTop + kRow * s + 24) + "\">IPU " + std::to_string(s) + "</text>\n";
    svg += "<line x1=\"" + number(kLeft) + "\" x2=\"" + number(kLeft + kWidth) + "\" y1=\"" +
           number(kTop + kRow * (s + 1)) + "\" y2=\"" + number(kTop + kRow * (s + 1)) +
           "\" stroke=\"#ddd\"/>\n";
  }
  double start = 0;
  for (const auto& slot : est.slots()) {
    // A repeated slot is one bar per stage over all its runs: "F3..F62", each pass w.cycles().
    const uint64_t repeat = runs(slot);
    for (const auto& w : slot.work()) {
      const double cycles = w.cycles() + slot.cycles() * static_cast<double>(repeat - 1);
      const double x = kLeft + start * scale, width = std::max(1.0, cycles * scale - 1);
      const double y = kTop + kRow * w.stage() + 4;
      const char* fill = w.forward() ? "#6fa8dc" : "#e69138";
      const std::string kind = w.forward() ? "F" : "B";
      std::string label = kind + std::to_string(w.micro_batch());
      if (repeat > 1) label += ".." + kind + std::to_string(w.micro_batch() + repeat - 1);
      svg += "<rect x=\"" + number(x) + "\" y=\"" + number(y) + "\" width=\"" + number(width) +
             "\" height=\"" + number(kRow - 8) + "\" fill=\"" + fill + "\"><title>" + label + ": " +
             number(w.cycles()) + " cycles" + (repeat > 1 ? " each" : "") + "</title></rect>\n";
      // The whole label where it fits, else the kind alone ("F", "B") where that does.
      const double label_width = 6.5 * static_cast<double>(label.size());
      if (width > label_width || width > 9) {
        svg += "<text x=\"" + number(x + 2) + "\" y=\"" + number(y + 20) + "\">" +
               (width > label_width ? label : kind) + "</text>\n";
      }
    }
    start += slot.cycles() * static_cast<double>(repeat);
  }
  // Segments every IPU spends alike after the slots: the update, then the program's rest.
  auto across_ipus = [&](double cycles, const char* fill, const std::string& what) {
    if (cycles < total / 1000) return; // the rounding of the estimates' per-step figures
    const double width = std::max(1.0, cycles * scale - 1);
    for (int s = 0; s < t.stages; ++s) {
      const double y = kTop + kRow * s + 4;
      svg += "<rect x=\"" + number(kLeft + start * scale) + "\" y=\"" + number(y) + "\" width=\"" +
             number(width) + "\" height=\"" + number(kRow - 8) + "\" fill=\"" + fill + "\"><title>" + what +
             ": " + rounded_with_commas(cycles) + " cycles</title></rect>\n";
      if (width > 60) {
        svg += "<text x=\"" + number(kLeft + start * scale + 2) + "\" y=\"" + number(y + 20) + "\">" + what +
               "</text>\n";
      }
    }
    start += cycles;
  };
  across_ipus(t.update, "#93c47d", "update");
  across_ipus(rest, "#cccccc", "host transfers");
  svg += "<text x=\"" + number(kLeft) + "\" y=\"" + number(height - 12) +
         "\">F = forward, B = backward (blue, orange) by micro-batch; a gap within a slot: its copies "
         "between IPUs; "
         "green = all-reduce and weight update; grey = host transfers</text>\n";
  return svg + "</svg>\n";
}

} // namespace ipu::cli
