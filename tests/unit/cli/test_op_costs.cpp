#include <doctest/doctest.h>

#include "cli/compile_report.h"
#include "cli/op_costs.h"

namespace ipu::cli {
namespace {

// A train program of one step: set 0 (ops a and b, 3:1 by their vertices' cycles) once, then
// set 1 (op c on two tiles) twice, as a recomputed pass would be.
format::Executable two_sets() {
  format::Executable exe;
  exe.set_mode("train");
  exe.mutable_target()->set_arch("mk2");
  exe.mutable_target()->set_num_ipus(1);
  exe.mutable_target()->set_tiles_per_ipu(4);
  exe.mutable_target()->set_clock_hz(1.33e9);
  auto add_vertex = [](format::ComputeSet* cs, uint32_t op, uint32_t tile, uint64_t cycles) {
    format::Vertex* v = cs->add_vertices();
    v->set_op(op);
    v->set_tile(tile);
    v->set_cycles(cycles);
  };
  format::ComputeSet* first = exe.add_compute_sets();
  first->set_name("first");
  first->add_ops("a");
  first->add_ops("b");
  first->set_cycles(1000);
  first->set_exchange_bytes(400);
  add_vertex(first, 0, 0, 300);
  add_vertex(first, 1, 1, 100);
  format::ComputeSet* second = exe.add_compute_sets();
  second->set_name("second");
  second->add_ops("c");
  second->set_cycles(50);
  add_vertex(second, 0, 2, 10);
  add_vertex(second, 0, 3, 10);
  format::NamedProgram* train = exe.add_programs();
  train->set_name("train");
  format::Sequence* steps = train->mutable_program()->mutable_sequence();
  steps->add_steps()->set_execute(0);
  steps->add_steps()->set_execute(1);
  steps->add_steps()->set_execute(1);
  train->set_cycles_per_step(1100);
  return exe;
}

TEST_CASE("op_costs shares each compute set's cycles among its ops, as often as it runs") {
  const auto costs = op_costs(two_sets());
  REQUIRE(costs.ok());
  REQUIRE(costs->size() == 3);
  CHECK((*costs)[0].op == "a");
  CHECK((*costs)[0].cycles == doctest::Approx(750));
  CHECK((*costs)[0].exchange_bytes == doctest::Approx(300));
  CHECK((*costs)[1].op == "b");
  CHECK((*costs)[1].cycles == doctest::Approx(250));
  CHECK((*costs)[2].op == "c");
  CHECK((*costs)[2].cycles == doctest::Approx(100)); // twice per step
  CHECK((*costs)[2].tiles == 2);
  CHECK((*costs)[2].vertices == 2);
  double total = 0;
  for (const OpCost& c : *costs)
    total += c.cycles;
  CHECK(total == doctest::Approx(1100)); // the compute sets' cycles per step, nothing lost
}

TEST_CASE("op_costs needs the main program") {
  format::Executable exe = two_sets();
  exe.mutable_programs(0)->set_name("evaluate");
  CHECK_FALSE(op_costs(exe).ok());
}

TEST_CASE("the report's op tables sort by each column, the cycle-sorted one shown first") {
  compiler::CompileReport report;
  report.executable = two_sets();
  report.memory.ipus = 1;
  report.memory.tiles_per_ipu = 4;
  report.memory.bytes_per_tile = 1000;
  report.memory.peak_per_tile = {10, 10, 10, 10};
  report.memory.split_per_tile.assign(4, {10, 0, 0, 0});
  const std::string html = compile_report_html(report, {});
  const size_t by_exchange = html.find("id=\"ops-by-exchange\"");
  const size_t by_tiles = html.find("id=\"ops-by-tiles\"");
  const size_t by_cycles = html.find("id=\"ops-by-cycles\"");
  REQUIRE(by_exchange != std::string::npos);
  REQUIRE(by_tiles != std::string::npos);
  REQUIRE(by_cycles != std::string::npos);
  CHECK(by_exchange < by_tiles);
  CHECK(by_tiles < by_cycles); // last: shown unless another is the :target
  // By tiles, c (2 tiles) comes before a and b (1 each).
  const std::string tiles_table = html.substr(by_tiles, by_cycles - by_tiles);
  CHECK(tiles_table.find(">c<") < tiles_table.find(">a<"));
  const std::string cycles_table = html.substr(by_cycles);
  CHECK(cycles_table.find(">a<") < cycles_table.find(">b<"));
  CHECK(cycles_table.find("<td>750</td>") != std::string::npos);
}

} // namespace
} // namespace ipu::cli
