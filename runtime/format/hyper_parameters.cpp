#include "runtime/format/hyper_parameters.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <numbers>

namespace ipu::format {

std::optional<uint32_t> hyper_parameter_slot(std::string_view name) {
  for (uint32_t slot = 0; slot < kHyperParameterCount; ++slot) {
    if (kHyperParameterNames[slot] == name) return slot;
  }
  return std::nullopt;
}

std::optional<HyperParameterValues> hyper_parameter_defaults(const Executable& exe) {
  for (const Tensor& t : exe.tensors()) {
    if (t.role() != HYPER_PARAMETERS || t.name() != kHyperParametersTensor) continue;
    HyperParameterValues values{};
    if (t.initial_value().empty()) return values;
    if (t.initial_value().size() != sizeof(values)) return std::nullopt;
    std::memcpy(values.data(), t.initial_value().data(), sizeof(values));
    return values;
  }
  return std::nullopt;
}

void set_hyper_parameter_defaults(Executable& exe, const HyperParameterValues& values) {
  for (Tensor& t : *exe.mutable_tensors()) {
    if (t.role() == HYPER_PARAMETERS)
      t.set_initial_value(std::string(reinterpret_cast<const char*>(values.data()), sizeof(values)));
  }
}

namespace {

using Kind = LearningRateSchedule::Kind;

constexpr std::pair<Kind, std::string_view> kKindNames[] = {{Kind::kConstant, "constant"},
                                                            {Kind::kExponential, "exponential"},
                                                            {Kind::kPiecewise, "piecewise"},
                                                            {Kind::kCosine, "cosine"},
                                                            {Kind::kPolynomial, "polynomial"}};

// Keras's CosineDecay._decay_function: from `from`, decayed to alpha·from over decay_steps.
double cosine_decayed(double step, double decay_steps, double from, double alpha) {
  const double cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * step / decay_steps));
  return from * ((1.0 - alpha) * cosine + alpha);
}

std::string number_text(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.17g", value);
  return buffer;
}

// The keys each kind takes (initial_learning_rate and per_epoch: all but piecewise's first).
std::vector<std::string_view> keys_of(Kind kind) {
  switch (kind) {
  case Kind::kConstant:
    return {"initial_learning_rate", "per_epoch"};
  case Kind::kExponential:
    return {"initial_learning_rate", "decay_steps", "decay_rate", "staircase", "per_epoch"};
  case Kind::kPiecewise:
    return {"boundaries", "values", "per_epoch"};
  case Kind::kCosine:
    return {"initial_learning_rate", "decay_steps", "alpha", "warmup_target", "warmup_steps", "per_epoch"};
  case Kind::kPolynomial:
    return {"initial_learning_rate", "decay_steps", "end_learning_rate", "power", "cycle", "per_epoch"};
  }
  return {};
}

std::optional<double> parse_number(const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

} // namespace

double learning_rate_at(const LearningRateSchedule& s, int64_t step_count, double base) {
  const double initial = s.initial_learning_rate.value_or(base);
  const auto step = static_cast<double>(step_count);
  switch (s.kind) {
  case Kind::kConstant:
    return initial;
  case Kind::kExponential: {
    double p = step / s.decay_steps;
    if (s.staircase) p = std::floor(p);
    return initial * std::pow(s.decay_rate, p);
  }
  case Kind::kPiecewise: {
    // values[i] while step <= boundaries[i]; the last value past the last boundary.
    for (size_t i = 0; i < s.boundaries.size(); ++i) {
      if (step <= s.boundaries[i]) return s.values[i];
    }
    return s.values.back();
  }
  case Kind::kCosine: {
    if (!s.warmup_target)
      return cosine_decayed(std::min(step, s.decay_steps), s.decay_steps, initial, s.alpha);
    const double clipped = std::min(step, s.decay_steps + s.warmup_steps);
    if (clipped < s.warmup_steps) return initial + (*s.warmup_target - initial) * clipped / s.warmup_steps;
    return cosine_decayed(clipped - s.warmup_steps, s.decay_steps, *s.warmup_target, s.alpha);
  }
  case Kind::kPolynomial: {
    double decay_steps = s.decay_steps;
    double clipped = step;
    if (s.cycle) {
      // Keras: decay_steps · ceil(step / decay_steps), and one period at step 0.
      const double periods = step == 0 ? 1.0 : std::ceil(step / s.decay_steps);
      decay_steps *= periods;
    } else {
      clipped = std::min(step, decay_steps);
    }
    return (initial - s.end_learning_rate) * std::pow(1.0 - clipped / decay_steps, s.power) +
           s.end_learning_rate;
  }
  }
  return initial;
}

namespace {

// A schedule's KEY=VALUE arguments, read by name with the checks each kind's keys need; `where`
// and `kind_name` make every refusal name the schedule as the user wrote it.
struct ScheduleArguments {
  std::string where;
  std::string kind_name;
  std::map<std::string, std::string> given;

  bool has(const std::string& key) const { return given.count(key) != 0; }

  Status number(const std::string& key, double& out, bool required, double least, bool strictly) const {
    auto found = given.find(key);
    if (found == given.end())
      return required ? invalid_argument(where + ": " + kind_name + " needs " + key + "=") : Status();
    const std::optional<double> value = parse_number(found->second);
    if (!value || (strictly ? !(*value > least) : !(*value >= least))) {
      return invalid_argument(where + ": " + key + " must be a number " + (strictly ? "> " : ">= ") +
                              number_text(least) + ", got '" + found->second + "'");
    }
    out = *value;
    return Status();
  }

  Status flag(const std::string& key, bool& out) const {
    auto found = given.find(key);
    if (found == given.end()) return Status();
    if (found->second != "0" && found->second != "1" && found->second != "true" && found->second != "false")
      return invalid_argument(where + ": " + key + " must be 0, 1, true or false, got '" + found->second +
                              "'");
    out = found->second == "1" || found->second == "true";
    return Status();
  }

  Status list(const std::string& key, std::vector<double>& out) const {
    auto found = given.find(key);
    if (found == given.end()) return invalid_argument(where + ": piecewise needs " + key + "=");
    std::string_view rest = found->second;
    while (true) {
      const size_t slash = rest.find('/');
      const std::optional<double> value = parse_number(std::string(rest.substr(0, slash)));
      if (!value) return invalid_argument(where + ": " + key + " must be numbers separated by '/'");
      out.push_back(*value);
      if (slash == std::string_view::npos) break;
      rest = rest.substr(slash + 1);
    }
    return Status();
  }
};

// Splits "KEY=VALUE,..." into ARGS.given, refusing a malformed item, a key KIND does not take,
// and a key given twice.
Status split_schedule_arguments(std::string_view rest, Kind kind, ScheduleArguments& args) {
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0)
      return invalid_argument(args.where + ": expected KEY=VALUE, got '" + std::string(item) + "'");
    const std::string key(item.substr(0, eq));
    const std::vector<std::string_view> keys = keys_of(kind);
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      std::string allowed;
      for (std::string_view k : keys)
        allowed += (allowed.empty() ? "" : ", ") + std::string(k);
      return invalid_argument(args.where + ": " + args.kind_name + " takes no '" + key + "' (it takes " +
                              allowed + ")");
    }
    if (!args.given.emplace(key, std::string(item.substr(eq + 1))).second)
      return invalid_argument(args.where + ": '" + key + "' is given twice");
  }
  return Status();
}

} // namespace

StatusOr<LearningRateSchedule> parse_learning_rate_schedule(std::string_view text) {
  const size_t colon = text.find(':');
  ScheduleArguments args;
  args.where = "learning-rate schedule '" + std::string(text) + "'";
  args.kind_name = std::string(text.substr(0, colon));
  const std::string& where = args.where;
  LearningRateSchedule s;
  bool known = false;
  for (const auto& [kind, name] : kKindNames) {
    if (name == args.kind_name) s.kind = kind, known = true;
  }
  if (!known) {
    return invalid_argument(where + ": unknown kind '" + args.kind_name +
                            "' (constant, exponential, piecewise, cosine or polynomial)");
  }
  if (colon != std::string_view::npos)
    IPU_RETURN_IF_ERROR(split_schedule_arguments(text.substr(colon + 1), s.kind, args));
  if (args.has("initial_learning_rate")) {
    double initial = 0;
    // 0 is a rate a warm-up starts from (Keras's CosineDecay(0.0, ..., warmup_target=...)).
    IPU_RETURN_IF_ERROR(args.number("initial_learning_rate", initial, true, 0, false));
    s.initial_learning_rate = initial;
  }
  IPU_RETURN_IF_ERROR(args.flag("per_epoch", s.per_epoch));
  switch (s.kind) {
  case Kind::kConstant:
    break;
  case Kind::kExponential:
    IPU_RETURN_IF_ERROR(args.number("decay_steps", s.decay_steps, true, 0, true));
    IPU_RETURN_IF_ERROR(args.number("decay_rate", s.decay_rate, true, 0, true));
    IPU_RETURN_IF_ERROR(args.flag("staircase", s.staircase));
    break;
  case Kind::kPiecewise:
    IPU_RETURN_IF_ERROR(args.list("boundaries", s.boundaries));
    IPU_RETURN_IF_ERROR(args.list("values", s.values));
    if (s.values.size() != s.boundaries.size() + 1) {
      return invalid_argument(where + ": values must be one more than boundaries (" +
                              std::to_string(s.boundaries.size()) + " boundaries, " +
                              std::to_string(s.values.size()) + " values)");
    }
    if (!std::is_sorted(s.boundaries.begin(), s.boundaries.end()))
      return invalid_argument(where + ": boundaries must be in increasing order");
    if (std::any_of(s.values.begin(), s.values.end(), [](double v) { return !(v >= 0); }))
      return invalid_argument(where + ": values must be non-negative");
    break;
  case Kind::kCosine: {
    IPU_RETURN_IF_ERROR(args.number("decay_steps", s.decay_steps, true, 0, true));
    IPU_RETURN_IF_ERROR(args.number("alpha", s.alpha, false, 0, false));
    if (s.alpha > 1) return invalid_argument(where + ": alpha must be in [0, 1]");
    IPU_RETURN_IF_ERROR(args.number("warmup_steps", s.warmup_steps, false, 0, false));
    if (args.has("warmup_target")) {
      double target = 0;
      IPU_RETURN_IF_ERROR(args.number("warmup_target", target, true, 0, true));
      s.warmup_target = target;
    }
    if (s.warmup_steps > 0 && !s.warmup_target)
      return invalid_argument(where + ": warmup_steps needs warmup_target= (the rate warm-up ends at)");
    break;
  }
  case Kind::kPolynomial:
    IPU_RETURN_IF_ERROR(args.number("decay_steps", s.decay_steps, true, 0, true));
    IPU_RETURN_IF_ERROR(args.number("end_learning_rate", s.end_learning_rate, false, 0, false));
    IPU_RETURN_IF_ERROR(args.number("power", s.power, false, 0, true));
    IPU_RETURN_IF_ERROR(args.flag("cycle", s.cycle));
    break;
  }
  return s;
}

std::string learning_rate_schedule_text(const LearningRateSchedule& s) {
  std::string text;
  for (const auto& [kind, name] : kKindNames) {
    if (kind == s.kind) text = name;
  }
  std::vector<std::string> items;
  if (s.initial_learning_rate)
    items.push_back("initial_learning_rate=" + number_text(*s.initial_learning_rate));
  auto join = [](const std::vector<double>& values) {
    std::string out;
    for (double v : values)
      out += (out.empty() ? "" : "/") + number_text(v);
    return out;
  };
  switch (s.kind) {
  case Kind::kConstant:
    break;
  case Kind::kExponential:
    items.push_back("decay_steps=" + number_text(s.decay_steps));
    items.push_back("decay_rate=" + number_text(s.decay_rate));
    items.push_back(std::string("staircase=") + (s.staircase ? "1" : "0"));
    break;
  case Kind::kPiecewise:
    items.push_back("boundaries=" + join(s.boundaries));
    items.push_back("values=" + join(s.values));
    break;
  case Kind::kCosine:
    items.push_back("decay_steps=" + number_text(s.decay_steps));
    items.push_back("alpha=" + number_text(s.alpha));
    if (s.warmup_target) items.push_back("warmup_target=" + number_text(*s.warmup_target));
    items.push_back("warmup_steps=" + number_text(s.warmup_steps));
    break;
  case Kind::kPolynomial:
    items.push_back("decay_steps=" + number_text(s.decay_steps));
    items.push_back("end_learning_rate=" + number_text(s.end_learning_rate));
    items.push_back("power=" + number_text(s.power));
    items.push_back(std::string("cycle=") + (s.cycle ? "1" : "0"));
    break;
  }
  if (s.per_epoch) items.emplace_back("per_epoch=1");
  for (size_t i = 0; i < items.size(); ++i)
    text += (i == 0 ? ":" : ",") + items[i];
  return text;
}

} // namespace ipu::format
