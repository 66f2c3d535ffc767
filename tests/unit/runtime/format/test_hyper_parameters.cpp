// Learning-rate schedules against values computed by hand from Keras's formulas
// (keras.optimizers.schedules: ExponentialDecay, PiecewiseConstantDecay, CosineDecay,
// PolynomialDecay), their text form, and the hyper-parameter defaults of an executable.
#include <doctest/doctest.h>

#include "runtime/format/hyper_parameters.h"

namespace {

using ipu::format::learning_rate_at;
using ipu::format::LearningRateSchedule;
using ipu::format::parse_learning_rate_schedule;

LearningRateSchedule parsed(const char* text) {
  auto schedule = parse_learning_rate_schedule(text);
  INFO(schedule.status().message());
  REQUIRE(schedule.ok());
  return *schedule;
}

TEST_CASE("format::learning_rate_at follows Keras's ExponentialDecay") {
  const LearningRateSchedule smooth =
      parsed("exponential:initial_learning_rate=0.1,decay_steps=10,decay_rate=0.5");
  CHECK(learning_rate_at(smooth, 0, 1) == 0.1);
  CHECK(learning_rate_at(smooth, 5, 1) == doctest::Approx(0.1 * 0.70710678118654752).epsilon(1e-15));
  CHECK(learning_rate_at(smooth, 10, 1) == doctest::Approx(0.05).epsilon(1e-15));
  // staircase: step decay, p = floor(step / decay_steps)
  const LearningRateSchedule stairs =
      parsed("exponential:initial_learning_rate=0.1,decay_steps=10,decay_rate=0.5,staircase=1");
  CHECK(learning_rate_at(stairs, 9, 1) == 0.1);
  CHECK(learning_rate_at(stairs, 25, 1) == doctest::Approx(0.025).epsilon(1e-15));
  // Without initial_learning_rate the optimizer's rate is the start.
  CHECK(learning_rate_at(parsed("exponential:decay_steps=1,decay_rate=0.5"), 2, 0.4) ==
        doctest::Approx(0.1).epsilon(1e-15));
}

TEST_CASE("format::learning_rate_at follows Keras's PiecewiseConstantDecay") {
  const LearningRateSchedule s = parsed("piecewise:boundaries=100/200,values=1/0.5/0.1");
  CHECK(learning_rate_at(s, 0, 9) == 1.0);
  CHECK(learning_rate_at(s, 100, 9) == 1.0); // step <= boundaries[0]
  CHECK(learning_rate_at(s, 101, 9) == 0.5);
  CHECK(learning_rate_at(s, 200, 9) == 0.5);
  CHECK(learning_rate_at(s, 201, 9) == 0.1);
}

TEST_CASE("format::learning_rate_at follows Keras's CosineDecay, with and without linear warm-up") {
  const LearningRateSchedule plain = parsed("cosine:initial_learning_rate=1,decay_steps=100");
  CHECK(learning_rate_at(plain, 50, 0) == doctest::Approx(0.5).epsilon(1e-15));
  CHECK(learning_rate_at(plain, 100, 0) == doctest::Approx(0.0));
  CHECK(learning_rate_at(plain, 150, 0) == doctest::Approx(0.0)); // clipped at decay_steps
  const LearningRateSchedule floor = parsed("cosine:initial_learning_rate=1,decay_steps=100,alpha=0.1");
  CHECK(learning_rate_at(floor, 50, 0) == doctest::Approx(0.55).epsilon(1e-15)); // (1 − α)·0.5 + α
  CHECK(learning_rate_at(floor, 100, 0) == doctest::Approx(0.1).epsilon(1e-15));
  const LearningRateSchedule warm =
      parsed("cosine:initial_learning_rate=0,decay_steps=100,warmup_target=1,warmup_steps=10");
  CHECK(learning_rate_at(warm, 0, 7) == 0.0);
  CHECK(learning_rate_at(warm, 5, 7) == doctest::Approx(0.5).epsilon(1e-15));
  CHECK(learning_rate_at(warm, 10, 7) == doctest::Approx(1.0).epsilon(1e-15)); // decay starts at the target
  CHECK(learning_rate_at(warm, 60, 7) == doctest::Approx(0.5).epsilon(1e-15));
  CHECK(learning_rate_at(warm, 500, 7) == doctest::Approx(0.0)); // clipped at warm-up + decay
}

TEST_CASE("format::learning_rate_at follows Keras's PolynomialDecay") {
  const LearningRateSchedule s =
      parsed("polynomial:initial_learning_rate=1,decay_steps=10,end_learning_rate=0,power=2");
  CHECK(learning_rate_at(s, 5, 0) == doctest::Approx(0.25).epsilon(1e-15));
  CHECK(learning_rate_at(s, 20, 0) == 0.0); // clipped at decay_steps
  const LearningRateSchedule cycle =
      parsed("polynomial:initial_learning_rate=1,decay_steps=10,end_learning_rate=0,power=2,cycle=1");
  CHECK(learning_rate_at(cycle, 0, 0) == 1.0);
  CHECK(learning_rate_at(cycle, 15, 0) == doctest::Approx(0.0625).epsilon(1e-15)); // decay over 20
  // Keras's default end rate 0.0001 and power 1.
  CHECK(learning_rate_at(parsed("polynomial:initial_learning_rate=0.1,decay_steps=4"), 2, 0) ==
        doctest::Approx(0.05005).epsilon(1e-14));
}

TEST_CASE("format::parse_learning_rate_schedule refuses what it cannot mean and round-trips its text") {
  for (const char* bad :
       {"linear:decay_steps=1", "exponential:decay_rate=0.5", "exponential:decay_steps=0,decay_rate=1",
        "cosine:decay_steps=10,warmup_steps=5", "piecewise:boundaries=1/2,values=1/2",
        "piecewise:boundaries=2/1,values=1/2/3", "constant:momentum=0.9", "constant:per_epoch=2",
        "exponential:decay_steps=1,decay_rate=1,decay_rate=2", "cosine:decay_steps"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_learning_rate_schedule(bad).ok());
  }
  for (const char* text :
       {"constant:initial_learning_rate=0.5",
        "piecewise:boundaries=100/200,values=1/0.5/0.10000000000000001,per_epoch=1",
        "cosine:initial_learning_rate=0,decay_steps=1000,alpha=0,warmup_target=0.001,warmup_steps=100"}) {
    CAPTURE(text);
    const LearningRateSchedule s = parsed(text);
    CHECK(ipu::format::learning_rate_schedule_text(s) == text);
  }
  CHECK(parsed("piecewise:boundaries=1,values=1/2,per_epoch=1").per_epoch);
}

TEST_CASE("format::set_hyper_parameter_defaults gives every hyper-parameter tensor the values") {
  ipu::format::Executable exe;
  for (const char* name : {"optimizer/hyper_parameters", "optimizer/hyper_parameters@1"}) {
    ipu::format::Tensor* t = exe.add_tensors();
    t->set_name(name);
    t->set_role(ipu::format::HYPER_PARAMETERS);
    t->set_dtype(ipu::format::FLOAT32);
    t->add_shape(ipu::format::kHyperParameterCount);
  }
  CHECK(ipu::format::hyper_parameter_defaults(exe) == ipu::format::HyperParameterValues{});
  ipu::format::HyperParameterValues values{};
  values[ipu::format::HyperParameter::kLearningRate] = 0.003f;
  ipu::format::set_hyper_parameter_defaults(exe, values);
  CHECK(ipu::format::hyper_parameter_defaults(exe) == values);
  CHECK(exe.tensors(1).initial_value() == exe.tensors(0).initial_value());
  CHECK(ipu::format::hyper_parameter_slot("beta_2") == ipu::format::HyperParameter::kBeta2);
  CHECK(ipu::format::hyper_parameter_slot("loss_scale") == ipu::format::HyperParameter::kLossScale);
  CHECK_FALSE(ipu::format::hyper_parameter_slot("amsgrad"));
}

} // namespace
