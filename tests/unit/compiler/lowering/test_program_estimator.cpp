#include <doctest/doctest.h>

#include <vector>

#include "compiler/lowering/program_builder.h"
#include "compiler/lowering/program_estimator.h"
#include "compiler/target/target.h"

using namespace ipu;
using lowering::PlacedStep;

namespace {

// An executable of `n` empty compute sets costing 100, 200, ... cycles.
format::Executable with_compute_sets(int n) {
  format::Executable exe;
  for (int i = 0; i < n; ++i) {
    format::ComputeSet* cs = exe.add_compute_sets();
    cs->set_name("cs" + std::to_string(i));
    cs->set_cycles(static_cast<uint64_t>(100 * (i + 1)));
  }
  return exe;
}

format::Program execute(uint32_t compute_set) {
  format::Program p;
  p.set_execute(compute_set);
  return p;
}

struct Visit {
  PlacedStep::Kind kind;
  double start;
  double cycles;
  uint64_t iterations;
};

} // namespace

TEST_CASE("place lays a program out as cycles_of times it, and cuts a long loop short") {
  const format::Executable exe = with_compute_sets(3);
  const target::TargetSpec target = *target::target_preset("mk2");
  const lowering::ProgramEstimator estimator(exe, target, 1);

  // cs0, then 5 × (cs1, cs2), then two branches at once: cs0 and cs2.
  format::Sequence body;
  *body.add_steps() = execute(1);
  *body.add_steps() = execute(2);
  format::Sequence outer;
  *outer.add_steps() = execute(0);
  *outer.add_steps() = lowering::ProgramBuilder::repeat(5, body);
  format::Program* parallel = outer.add_steps();
  *parallel->mutable_parallel()->add_branches() = execute(0);
  *parallel->mutable_parallel()->add_branches() = execute(2);
  const format::Program program = lowering::ProgramBuilder::sequence(outer);
  const double total = 100 + 5 * (200 + 300) + 300;
  REQUIRE(estimator.cycles_of(program) == total);

  std::vector<Visit> visits;
  auto record = [&](const PlacedStep& s) { visits.push_back({s.kind, s.start, s.cycles, s.iterations}); };

  SUBCASE("every step drawn") {
    uint64_t steps_left = 1000;
    CHECK(estimator.place(program, 10, record, steps_left) == 10 + total);
    REQUIRE(visits.size() == 1 + 10 + 2);
    CHECK(visits[0].start == 10);
    CHECK(visits[1].start == 110);
    CHECK(visits[2].start == 310);   // cs2 after cs1
    CHECK(visits[10].start == 2310); // the last iteration's cs2
    CHECK(visits[11].start == 2610); // both branches start together
    CHECK(visits[12].start == 2610);
    CHECK(steps_left == 1000 - 13);
  }
  SUBCASE("a loop past the budget ends in one slice for its remaining iterations") {
    uint64_t steps_left = 4; // cs0, then iteration 1 (2 steps), then iteration 2's first step...
    CHECK(estimator.place(program, 0, record, steps_left) == total);
    // ...which finishes its iteration (a body is drawn whole), then the last 3 iterations as one.
    REQUIRE(visits.size() == 1 + 4 + 1 + 2);
    const Visit& rest = visits[5];
    CHECK(rest.kind == PlacedStep::Kind::kRepeatRest);
    CHECK(rest.iterations == 3);
    CHECK(rest.start == 100 + 2 * 500);
    CHECK(rest.cycles == 3 * 500);
    CHECK(visits[6].start == total - 300); // the Parallel still drawn, at its place
  }
}
