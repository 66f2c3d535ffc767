#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <string>

#include "compiler/frontend/graph_spec_internal.h"
#include "compiler/passes/optimizer_arguments.h"
#include "runtime/format/host_contract.h"
#include "runtime/format/hyper_parameters.h"
#include "runtime/format/optimizer_arguments.h"

namespace ipu::frontend {
namespace {

using nlohmann::json;

// Keras's LossScaleOptimizer as Keras serialises it, {"class_name": "LossScaleOptimizer", "config":
// {"inner_optimizer": {...}, "initial_scale": 32768.0, "dynamic": true, "dynamic_growth_steps":
// 2000}} (docs/training.md, "Loss scaling"): the loss scaling it asks for, nullopt (with the
// problems) when it is malformed. "dynamic" defaults to true, as in Keras (Keras 3's has no such
// key and is always dynamic). The inner optimizer is ipucc's {"type": NAME, ...}; `name` is ignored.
std::optional<passes::LossScaling> read_loss_scale_optimizer(const json& value, Problems& problems) {
  const char* where = "optimizer";
  if (!value.contains("config") || !value["config"].is_object() ||
      !value["config"].contains("inner_optimizer")) {
    problems.add(where, "a LossScaleOptimizer must be {\"class_name\": \"LossScaleOptimizer\", \"config\": "
                        "{\"inner_optimizer\": {...}, ...}}, got " +
                            describe(value));
    return std::nullopt;
  }
  const json& config = value["config"];
  passes::LossScaling scaling;
  scaling.mode = passes::LossScalingMode::kDynamic;
  bool ok = true;
  for (const auto& [key, item] : config.items()) {
    if (key == "inner_optimizer" || key == "name") continue;
    if (key == "initial_scale") {
      const bool positive_float32 =
          item.is_number() && item.get<float>() > 0.0f && std::isfinite(item.get<float>());
      if (!positive_float32) {
        problems.add(where,
                     "LossScaleOptimizer: 'initial_scale' must be a positive number that float32 holds");
        ok = false;
      } else {
        scaling.initial_scale = item.get<float>();
      }
    } else if (key == "dynamic") {
      if (!item.is_boolean()) {
        problems.add(where, "LossScaleOptimizer: 'dynamic' must be true or false");
        ok = false;
      } else if (!item.get<bool>()) {
        scaling.mode = passes::LossScalingMode::kStatic;
      }
    } else if (key == "dynamic_growth_steps") {
      if (!item.is_number_integer() || item.get<int64_t>() < 1 ||
          item.get<int64_t>() > format::kMaxLossScaleGrowthSteps) {
        problems.add(where, "LossScaleOptimizer: 'dynamic_growth_steps' must be an integer in [1, 2^24]");
        ok = false;
      } else {
        scaling.growth_steps = item.get<int64_t>();
      }
    } else {
      problems.add(where, "LossScaleOptimizer: unknown argument '" + key + "'");
      ok = false;
    }
  }
  if (config.contains("dynamic_growth_steps") && scaling.mode == passes::LossScalingMode::kStatic) {
    problems.add(where, "LossScaleOptimizer: 'dynamic_growth_steps' applies to dynamic loss scaling only");
    ok = false;
  }
  return ok ? std::optional<passes::LossScaling>(scaling) : std::nullopt;
}

// A Keras learning-rate schedule as Keras serialises one, {"class_name": "ExponentialDecay",
// "config": {...}} (keras.optimizers.schedules), into the optimizer's schedule in
// format::parse_learning_rate_schedule's text form; its initial rate becomes the learning rate.
void read_learning_rate_schedule(const json& value, passes::OptimizerConfig& optimizer, Problems& problems) {
  static const std::map<std::string, std::string> kKinds = {{"ExponentialDecay", "exponential"},
                                                            {"PiecewiseConstantDecay", "piecewise"},
                                                            {"CosineDecay", "cosine"},
                                                            {"PolynomialDecay", "polynomial"}};
  const std::string where = "optimizer: learning_rate";
  if (!value.contains("class_name") || !value["class_name"].is_string() || !value.contains("config") ||
      !value["config"].is_object()) {
    problems.add(where,
                 "a schedule must be {\"class_name\": NAME, \"config\": {...}}, got " + describe(value));
    return;
  }
  const auto kind = kKinds.find(value["class_name"].get<std::string>());
  if (kind == kKinds.end()) {
    problems.add_unsupported(
        where, "unsupported schedule " + describe(value["class_name"]) +
                   " (ExponentialDecay, PiecewiseConstantDecay, CosineDecay or PolynomialDecay)");
    return;
  }
  std::string text = kind->second;
  char separator = ':';
  auto number = [](const json& v) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.17g", v.get<double>());
    return std::string(buffer);
  };
  for (const auto& [key, v] : value["config"].items()) {
    if (key == "name" || v.is_null()) continue; // Keras's own label; a null warmup_target is none
    std::string item;
    if (v.is_boolean()) {
      item = v.get<bool>() ? "1" : "0";
    } else if (v.is_number()) {
      item = number(v);
    } else if (v.is_array()) {
      for (const json& element : v) {
        if (!element.is_number()) {
          problems.add(where, "'" + key + "' must be a list of numbers");
          return;
        }
        item += (item.empty() ? "" : "/") + number(element);
      }
    } else {
      problems.add(where, "'" + key + "' must be a number, a boolean or a list of numbers");
      return;
    }
    text += separator + key + "=" + item;
    separator = ',';
  }
  StatusOr<format::LearningRateSchedule> schedule = format::parse_learning_rate_schedule(text);
  if (!schedule.ok()) {
    problems.add(where, schedule.status().message());
    return;
  }
  if (schedule->initial_learning_rate) {
    optimizer.learning_rate = static_cast<float>(*schedule->initial_learning_rate);
  } else if (schedule->kind != format::LearningRateSchedule::Kind::kPiecewise) {
    problems.add(where, value["class_name"].get<std::string>() + " needs 'initial_learning_rate'");
    return;
  }
  optimizer.learning_rate_schedule = format::learning_rate_schedule_text(*schedule);
}

// The spec's "loss": a Keras loss name, or {"type": NAME, ...} with that loss's arguments.
void parse_loss(const json& loss, ModelSpec& spec, Problems& problems) {
  std::string type = loss.is_string() ? loss.get<std::string>()
                     : loss.is_object() && loss.contains("type") && loss["type"].is_string()
                         ? loss["type"].get<std::string>()
                         : "";
  const std::optional<passes::LossKind> kind = passes::loss_kind(type);
  if (type.empty()) {
    problems.add("loss", "must be a loss name or {\"type\": NAME, ...}, got " + describe(loss));
  } else if (!kind) {
    problems.add_unsupported("loss", "unsupported loss " + describe(json(type)) + " (ipucc trains with " +
                                         passes::loss_names() + ")");
  } else {
    spec.loss.kind = *kind;
    spec.loss.from_logits = false; // Keras's default
    // Keras's arguments of each loss; any other is refused rather than ignored.
    std::set<std::string> known = {"type"};
    if (passes::loss_has_from_logits(*kind)) known.insert("from_logits");
    if (*kind == passes::LossKind::kHuber) known.insert("delta");
    if (loss.is_object()) {
      for (const auto& [key, value] : loss.items()) {
        if (known.count(key) == 0) problems.add("loss", "unknown argument '" + key + "' for " + type);
      }
      if (loss.contains("from_logits") && known.count("from_logits") > 0) {
        if (!loss["from_logits"].is_boolean())
          problems.add("loss", "'from_logits' must be true or false");
        else
          spec.loss.from_logits = loss["from_logits"].get<bool>();
      }
      if (loss.contains("delta") && known.count("delta") > 0) {
        const json& delta = loss["delta"];
        if (!delta.is_number() || !(delta.get<double>() > 0) || !std::isfinite(delta.get<float>()))
          problems.add("loss", "'delta' must be a positive number");
        else
          spec.loss.delta = delta.get<float>();
      }
    }
  }
}

// Keras's compile(metrics=[...]): names, or {"type": NAME, "k": K} for top-k.
void parse_metrics(const json& list, ModelSpec& spec, Problems& problems) {
  if (!list.is_array()) {
    problems.add("metrics", "must be a list of metric names, got " + describe(list));
  } else {
    std::string names;
    bool ok = true;
    for (const json& m : list) {
      std::string name;
      if (m.is_string()) {
        name = m.get<std::string>();
      } else if (m.is_object() && m.contains("type") && m["type"].is_string()) {
        name = m["type"].get<std::string>();
        for (const auto& [key, value] : m.items()) {
          if (key == "k" && passes::parse_metric(name).ok() &&
              passes::parse_metric(name)->kind == passes::MetricKind::kSparseTopK &&
              value.is_number_integer() && value.get<int64_t>() >= 1 && value.get<int64_t>() <= 999999) {
            name = "top_k:" + std::to_string(value.get<int64_t>());
          } else if (key != "type") {
            problems.add("metrics", "unknown or invalid argument '" + key + "' for " + describe(m["type"]));
            ok = false;
          }
        }
      } else {
        problems.add("metrics", "each metric must be a name or {\"type\": NAME, ...}, got " + describe(m));
        ok = false;
        continue;
      }
      names += (names.empty() ? "" : ",") + name;
    }
    if (ok) {
      auto parsed = passes::parse_metric_list(names);
      if (list.empty()) {
        spec.metrics = std::vector<passes::MetricConfig>{};
      } else if (!parsed.ok()) {
        problems.add("metrics", parsed.status().message());
      } else {
        spec.metrics = *parsed;
      }
    }
  }
}

// The spec's "optimizer": {"type": NAME, ...} with Keras's arguments (passes/optimizer_arguments.h),
// or Keras's LossScaleOptimizer around one.
void parse_optimizer(const json& optimizer, ModelSpec& spec, Problems& problems) {
  std::optional<passes::LossScaling> loss_scaling;
  const json* inner = &optimizer;
  if (inner->is_object() && inner->contains("class_name") && (*inner)["class_name"] == "LossScaleOptimizer") {
    loss_scaling = read_loss_scale_optimizer(*inner, problems);
    if (!loss_scaling) return;
    inner = &(*inner)["config"]["inner_optimizer"];
  }
  const json& opt = *inner;
  if (!opt.is_object() || !opt.contains("type") || !opt["type"].is_string()) {
    problems.add("optimizer", "must be {\"type\": NAME, ...}, got " + describe(opt));
    return;
  }
  const std::optional<passes::OptimizerKind> kind = passes::optimizer_kind(opt["type"].get<std::string>());
  if (!kind) {
    problems.add_unsupported("optimizer", "unsupported optimizer " + describe(opt["type"]) +
                                              " (ipucc trains with " + format::optimizer_names_text() + ")");
    return;
  }
  spec.optimizer = passes::default_optimizer(*kind);
  // The optimizer's arguments, as Keras names them; any other (amsgrad, momentum for Adam) is
  // refused rather than ignored. (SGD specs have always been read leniently, and still are.)
  if (*kind != passes::OptimizerKind::kSgd) {
    std::set<std::string, std::less<>> known = {"type", "learning_rate", "global_clipnorm", "clipnorm",
                                                "clipvalue"};
    for (const passes::OptimizerArgument& argument : passes::optimizer_arguments()) {
      if (argument.takes(*kind)) known.emplace(argument.key);
    }
    for (const auto& [key, value] : opt.items()) {
      if (known.count(key) == 0) {
        problems.add("optimizer", "unknown argument '" + key + "' for " + passes::optimizer_name(*kind));
      }
    }
  }
  auto read_bool = [&](const char* key, bool& into) {
    if (!opt.contains(key)) return;
    if (!opt[key].is_boolean()) {
      problems.add("optimizer", std::string("'") + key + "' must be true or false");
    } else {
      into = opt[key].get<bool>();
    }
  };
  auto read_float = [&](const std::string& key, const passes::ArgumentRange& range, float& into) {
    if (!opt.contains(key)) return;
    const json& value = opt[key];
    if (!value.is_number() || !range.contains(value.get<double>())) {
      problems.add("optimizer", "'" + key + "' must be " + range.text);
    } else {
      into = value.get<float>();
    }
  };
  for (const passes::OptimizerArgument& argument : passes::optimizer_arguments()) {
    const std::string key(argument.key);
    if (argument.toggle) {
      read_bool(key.c_str(), spec.optimizer.*argument.toggle);
    } else {
      read_float(key, argument.range, spec.optimizer.*argument.number);
    }
  }
  // Keras writes null for no clipping; its per-weight clipnorm and clipvalue are not implemented,
  // and refused rather than ignored (SGD specs are otherwise read leniently).
  if (!opt.contains("global_clipnorm") || !opt["global_clipnorm"].is_null()) {
    const passes::ArgumentRange clipnorm{0, true, std::numeric_limits<double>::infinity(), true,
                                         "a positive number that float32 holds (or null)"};
    read_float("global_clipnorm", clipnorm, spec.optimizer.global_clipnorm);
  }
  for (const char* key : {"clipnorm", "clipvalue"}) {
    if (opt.contains(key) && !opt[key].is_null())
      problems.add_unsupported("optimizer",
                               std::string("'") + key +
                                   "' (per-weight clipping) is not supported; 'global_clipnorm' is");
  }
  if (opt.contains("learning_rate") && opt["learning_rate"].is_object()) {
    read_learning_rate_schedule(opt["learning_rate"], spec.optimizer, problems);
  } else if (opt.contains("learning_rate")) {
    // The device computes in float32: a rate that rounds to 0 or infinity there is no rate.
    const bool positive_float32 = opt["learning_rate"].is_number() &&
                                  opt["learning_rate"].get<float>() > 0.0f &&
                                  std::isfinite(opt["learning_rate"].get<float>());
    if (!positive_float32) {
      problems.add("optimizer",
                   "'learning_rate' must be a positive number that float32 holds (from 1.4e-45 to 3.4e38)");
    } else {
      spec.optimizer.learning_rate = opt["learning_rate"].get<float>();
    }
  }
  if (loss_scaling) spec.optimizer.loss_scaling = *loss_scaling;
}

} // namespace

void parse_training(const json& j, ModelSpec& spec, Problems& problems) {
  if (j.contains("loss")) parse_loss(j["loss"], spec, problems);
  if (j.contains("metrics")) parse_metrics(j["metrics"], spec, problems);
  if (j.contains("optimizer")) parse_optimizer(j["optimizer"], spec, problems);
}

} // namespace ipu::frontend
