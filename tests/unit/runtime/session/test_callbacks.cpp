// Keras's epoch-end callback rules (runtime/session/callbacks.h), on sequences worked by hand
// from keras.callbacks' code.
#include <doctest/doctest.h>

#include <vector>

#include "runtime/session/callbacks.h"

namespace {

using ipu::session::BestValue;
using ipu::session::EarlyStopping;
using ipu::session::EarlyStoppingOptions;
using ipu::session::FitDecision;
using ipu::session::MonitorMode;
using ipu::session::ReduceLrOnPlateau;
using ipu::session::ReduceLrOnPlateauOptions;

// The 0-based epoch early stopping ends training at, or -1 when it never does.
int stop_epoch(EarlyStopping& stopping, const std::vector<double>& values) {
  for (int epoch = 0; epoch < static_cast<int>(values.size()); ++epoch) {
    if (stopping.on_epoch_end(epoch, values[static_cast<size_t>(epoch)]).decision == FitDecision::kStop)
      return epoch;
  }
  return -1;
}

TEST_CASE("session::EarlyStopping stops after patience epochs without improvement") {
  EarlyStoppingOptions options;
  options.patience = 2;
  EarlyStopping stopping(options);
  CHECK(stop_epoch(stopping, {1.0, 0.9, 0.95, 0.91, 0.8}) == 3);
  CHECK(stopping.best_epoch() == 1);
  CHECK(stopping.stopped_epoch() == 3);
}

TEST_CASE("session::EarlyStopping counts only improvements larger than min_delta") {
  EarlyStoppingOptions options;
  options.patience = 1;
  options.min_delta = 0.05;
  EarlyStopping stopping(options);
  CHECK(stop_epoch(stopping, {1.0, 0.96, 0.5}) == 1);
  CHECK(stopping.best_epoch() == 0);
  // A negative min_delta means the same as its magnitude, as in Keras.
  options.min_delta = -0.05;
  EarlyStopping negative(options);
  CHECK(stop_epoch(negative, {1.0, 0.96, 0.5}) == 1);
}

TEST_CASE("session::EarlyStopping never stops at the first epoch, and patience 0 stops at the first miss") {
  EarlyStoppingOptions options;
  EarlyStopping stopping(options);
  CHECK(stop_epoch(stopping, {1.0, 0.9, 0.8, 0.85, 0.7}) == 3);
  EarlyStopping improving(options);
  CHECK(stop_epoch(improving, {1.0, 0.9, 0.8}) == -1);
}

TEST_CASE("session::EarlyStopping maximises accuracies in auto mode and obeys an explicit mode") {
  EarlyStoppingOptions options;
  options.monitor = "val_accuracy";
  options.patience = 1;
  EarlyStopping accuracy(options);
  CHECK(stop_epoch(accuracy, {0.5, 0.6, 0.6}) == 2);
  CHECK(accuracy.best_epoch() == 1);
  options.monitor = "val_loss";
  options.mode = MonitorMode::kMax;
  EarlyStopping maximised(options);
  CHECK(stop_epoch(maximised, {0.5, 0.6, 0.4}) == 2);
}

TEST_CASE("session::EarlyStopping resets its count only for improvements that also beat the baseline") {
  EarlyStoppingOptions options;
  options.patience = 1;
  options.baseline = 0.5;
  EarlyStopping stopping(options);
  // Improving but above the baseline: the count grows, yet an improving epoch never stops.
  CHECK(stop_epoch(stopping, {0.8, 0.7, 0.6, 0.65}) == 3);
  CHECK(stopping.best_epoch() == 2);
  EarlyStopping met(options);
  CHECK(stop_epoch(met, {0.8, 0.4, 0.3, 0.35, 0.36}) == 3);
}

TEST_CASE("session::EarlyStopping judges nothing before start_from_epoch") {
  EarlyStoppingOptions options;
  options.start_from_epoch = 2;
  EarlyStopping stopping(options);
  CHECK_FALSE(stopping.on_epoch_end(0, 1.0).best);
  CHECK_FALSE(stopping.on_epoch_end(1, 2.0).best);
  CHECK(stopping.on_epoch_end(2, 3.0).best);
  CHECK(stopping.on_epoch_end(3, 4.0).decision == FitDecision::kStop);
  CHECK(stopping.best_epoch() == 2);
}

TEST_CASE("session::ReduceLrOnPlateau multiplies the rate by factor after patience, then cools down") {
  ReduceLrOnPlateauOptions options;
  options.factor = 0.5;
  options.patience = 2;
  options.cooldown = 1;
  options.min_lr = 0.01;
  ReduceLrOnPlateau reduce(options);
  double lr = 0.1;
  std::vector<double> rates;
  for (int epoch = 0; epoch < 11; ++epoch) {
    lr = reduce.on_epoch_end(1.0, lr);
    rates.push_back(lr);
  }
  // Epoch 0 sets the best; 1 and 2 miss (reduce); 3 is the cooldown's last epoch and counts; ...
  const std::vector<double> expected{0.1, 0.1, 0.05, 0.05, 0.025, 0.025, 0.0125, 0.0125, 0.01, 0.01, 0.01};
  REQUIRE(rates.size() == expected.size());
  for (size_t i = 0; i < rates.size(); ++i) {
    CAPTURE(i);
    CHECK(rates[i] == doctest::Approx(expected[i]).epsilon(1e-12));
  }
}

TEST_CASE("session::ReduceLrOnPlateau needs an improvement larger than min_delta") {
  ReduceLrOnPlateauOptions options;
  options.patience = 1;
  options.min_delta = 0.1;
  ReduceLrOnPlateau reduce(options);
  CHECK(reduce.on_epoch_end(1.0, 1.0) == 1.0);
  CHECK(reduce.on_epoch_end(0.95, 1.0) == doctest::Approx(0.1)); // 0.05 better: not enough
  CHECK(reduce.on_epoch_end(0.5, 0.1) == 0.1);                   // 0.5 better: the new best
}

TEST_CASE("session::BestValue keeps strictly better values") {
  BestValue loss("val_loss", MonitorMode::kAuto);
  CHECK(loss.improves(1.0));
  CHECK_FALSE(loss.improves(1.0));
  CHECK(loss.improves(0.5));
  CHECK_FALSE(loss.improves(0.7));
  BestValue accuracy("accuracy", MonitorMode::kAuto);
  CHECK(accuracy.improves(0.1));
  CHECK(accuracy.improves(0.2));
  CHECK_FALSE(accuracy.improves(0.15));
}

} // namespace
