// verify_executable (runtime/format/verifier.cpp) and the per-vertex checks Engine::create runs
// through the kernel registry: a tiny hand-built executable is valid, and each mutation of it
// that could make the runtime read or write outside a tensor is rejected with DataLoss naming
// the offending object.
#include <doctest/doctest.h>

#include <functional>
#include <string>

#include "runtime/engine/engine.h"
#include "runtime/format/codelet.h"
#include "runtime/format/host_contract.h"
#include "runtime/format/verifier.h"
#include "runtime/kernels/kernel.h"

namespace {

using ipu::StatusCode;
using ipu::format::Executable;
using ipu::format::Program;
using ipu::format::Stream;
using ipu::format::verify_executable;
namespace fmt = ipu::format;

constexpr uint32_t kActivation = static_cast<uint32_t>(fmt::Codelet::kActivation);
constexpr uint32_t kMatMul = static_cast<uint32_t>(fmt::Codelet::kMatMul);
constexpr uint32_t kBiasAdd = static_cast<uint32_t>(fmt::Codelet::kBiasAdd);
constexpr uint32_t kSoftmax = static_cast<uint32_t>(fmt::Codelet::kSoftmax);
constexpr uint32_t kSparseCrossEntropy = static_cast<uint32_t>(fmt::Codelet::kSparseCrossEntropy);
constexpr uint32_t kColumnSum = static_cast<uint32_t>(fmt::Codelet::kColumnSum);
constexpr uint32_t kSgdMomentum = static_cast<uint32_t>(fmt::Codelet::kSgdMomentum);
constexpr uint32_t kAdam = static_cast<uint32_t>(fmt::Codelet::kAdam);
constexpr uint32_t kStepCount = static_cast<uint32_t>(fmt::Codelet::kStepCount);
constexpr uint32_t kSgd = static_cast<uint32_t>(fmt::Codelet::kSgd);
constexpr uint32_t kRmsProp = static_cast<uint32_t>(fmt::Codelet::kRmsProp);
constexpr uint32_t kAdagrad = static_cast<uint32_t>(fmt::Codelet::kAdagrad);
constexpr uint32_t kAdaMax = static_cast<uint32_t>(fmt::Codelet::kAdaMax);

fmt::Tensor* add_tensor(Executable& exe, const std::string& name, fmt::DType dtype,
                        std::initializer_list<int64_t> shape, uint32_t tile = 0) {
  fmt::Tensor* t = exe.add_tensors();
  t->set_name(name);
  t->set_dtype(dtype);
  t->set_role(fmt::ACTIVATION);
  uint64_t elements = 1;
  for (int64_t d : shape) {
    t->add_shape(d);
    elements *= static_cast<uint64_t>(d);
  }
  auto* iv = t->add_mapping();
  iv->set_tile(tile);
  iv->set_begin(0);
  iv->set_end(elements);
  return t;
}

// 1 IPU x 4 tiles. Tensors: 0 "x" f32[2,4] split over tiles 0 and 1, 1 "y" f32[2,4] on tile 2.
// Compute set 0 "relu": one Activation vertex y = relu(x) over all 8 elements. Streams:
// 0 "features" host-to-device f32[2,4], 1 "predictions" device-to-host f32[2,4]. Program
// "predict": stream x in, run relu, stream y out.
Executable tiny_executable() {
  Executable exe;
  exe.set_format_version(1);
  exe.set_model_name("tiny");
  exe.set_mode("infer");
  auto* target = exe.mutable_target();
  target->set_arch("custom");
  target->set_num_ipus(1);
  target->set_tiles_per_ipu(4);
  target->set_bytes_per_tile(1 << 16);
  target->set_worker_threads_per_tile(6);
  target->set_clock_hz(1.33e9);
  exe.set_batch_size(2);
  exe.set_steps_per_execution(1);
  exe.set_num_classes(4);

  fmt::Tensor* x = exe.add_tensors();
  x->set_name("x");
  x->set_dtype(fmt::FLOAT32);
  x->add_shape(2);
  x->add_shape(4);
  x->set_role(fmt::INPUT);
  auto* iv = x->add_mapping();
  iv->set_tile(0);
  iv->set_begin(0);
  iv->set_end(4);
  iv = x->add_mapping();
  iv->set_tile(1);
  iv->set_begin(4);
  iv->set_end(8);
  add_tensor(exe, "y", fmt::FLOAT32, {2, 4}, 2)->set_role(fmt::OUTPUT);

  auto* cs = exe.add_compute_sets();
  cs->set_name("relu");
  auto* v = cs->add_vertices();
  v->set_codelet(kActivation);
  v->set_tile(0);
  v->add_operands(0);
  v->add_operands(1);
  v->add_params(static_cast<int64_t>(fmt::ActivationKind::kRelu));
  v->add_params(0);
  v->add_params(8);
  v->set_cycles(100);

  for (auto [name, direction] :
       {std::pair{"features", Stream::HOST_TO_DEVICE}, {"predictions", Stream::DEVICE_TO_HOST}}) {
    auto* s = exe.add_streams();
    s->set_name(name);
    s->set_direction(direction);
    s->set_dtype(fmt::FLOAT32);
    s->add_shape(2);
    s->add_shape(4);
  }

  auto* p = exe.add_programs();
  p->set_name("predict");
  auto* seq = p->mutable_program()->mutable_sequence();
  auto* in = seq->add_steps()->mutable_stream_in();
  in->set_stream(0);
  in->set_tensor(0);
  seq->add_steps()->set_execute(0);
  auto* out = seq->add_steps()->mutable_stream_out();
  out->set_stream(1);
  out->set_tensor(1);
  return exe;
}

Program* predict_steps_add(Executable& exe) {
  return exe.mutable_programs(0)->mutable_program()->mutable_sequence()->add_steps();
}

// Verifier: the mutation is rejected with DataLoss whose message contains `fragment`.
void expect_rejected(const std::function<void(Executable&)>& mutate, const std::string& fragment) {
  Executable exe = tiny_executable();
  mutate(exe);
  ipu::Status status = verify_executable(exe);
  INFO("expected a message containing: " << fragment);
  INFO("got: " << status.message());
  REQUIRE_FALSE(status.ok());
  CHECK(status.code() == StatusCode::kDataLoss);
  CHECK(status.message().find(fragment) != std::string::npos);
  // Engine::create verifies before anything else, so it rejects the same way.
  auto engine = ipu::engine::Engine::create(exe, {});
  REQUIRE_FALSE(engine.ok());
  CHECK(engine.status().code() == StatusCode::kDataLoss);
}

void expect_accepted(const std::function<void(Executable&)>& mutate) {
  Executable exe = tiny_executable();
  mutate(exe);
  ipu::Status status = verify_executable(exe);
  INFO(status.message());
  CHECK(status.ok());
}

TEST_CASE("verifier: the tiny executable is valid and loads") {
  Executable exe = tiny_executable();
  ipu::Status status = verify_executable(exe);
  INFO(status.message());
  REQUIRE(status.ok());
  auto engine = ipu::engine::Engine::create(exe, {});
  INFO(engine.status().message());
  REQUIRE(engine.ok());
  CHECK(fmt::element_count(exe.tensors(0)) == 8);
  CHECK(fmt::dtype_size(fmt::FLOAT32) == 4);
  CHECK(fmt::dtype_size(fmt::INT32) == 4);
  CHECK(fmt::dtype_size(fmt::DTYPE_UNSPECIFIED) == 0);
}

TEST_CASE("verifier: target and top-level sizes") {
  expect_rejected([](Executable& e) { e.mutable_target()->set_num_ipus(0); }, "num_ipus");
  expect_rejected([](Executable& e) { e.mutable_target()->set_num_ipus(1025); }, "num_ipus");
  expect_rejected([](Executable& e) { e.mutable_target()->set_tiles_per_ipu(0); }, "tiles_per_ipu");
  expect_rejected([](Executable& e) { e.mutable_target()->set_tiles_per_ipu(65537); }, "tiles_per_ipu");
  expect_rejected([](Executable& e) { e.mutable_target()->set_bytes_per_tile(0); }, "bytes_per_tile");
  expect_rejected([](Executable& e) { e.mutable_target()->set_worker_threads_per_tile(0); },
                  "worker_threads");
  expect_rejected([](Executable& e) { e.mutable_target()->set_worker_threads_per_tile(65); },
                  "worker_threads");
  expect_rejected([](Executable& e) { e.clear_target(); }, "target");
  expect_rejected([](Executable& e) { e.set_batch_size(0); }, "batch_size");
  expect_rejected([](Executable& e) { e.set_steps_per_execution(0); }, "steps_per_execution");
  // The limits themselves are fine.
  expect_accepted([](Executable& e) {
    e.mutable_target()->set_num_ipus(1024);
    e.mutable_target()->set_tiles_per_ipu(65536);
    e.mutable_target()->set_worker_threads_per_tile(64);
  });
}

TEST_CASE("verifier: tensor dtype, shape and IPU") {
  expect_rejected([](Executable& e) { e.mutable_tensors(1)->set_dtype(fmt::DTYPE_UNSPECIFIED); },
                  "tensor 1 'y': unknown dtype");
  expect_rejected([](Executable& e) { e.mutable_tensors(1)->set_dtype(static_cast<fmt::DType>(7)); },
                  "tensor 1 'y': unknown dtype");
  expect_rejected([](Executable& e) { e.mutable_tensors(1)->set_shape(1, 0); },
                  "tensor 1 'y': dimension 0 is not positive");
  expect_rejected([](Executable& e) { e.mutable_tensors(1)->set_shape(0, -2); },
                  "tensor 1 'y': dimension -2 is not positive");
  expect_rejected(
      [](Executable& e) {
        e.mutable_tensors(1)->set_shape(0, int64_t{1} << 20);
        e.mutable_tensors(1)->set_shape(1, int64_t{1} << 20);
      },
      "tensor 1 'y': too many elements");
  expect_rejected(
      [](Executable& e) {
        auto* t = e.mutable_tensors(1);
        t->clear_shape();
        for (int i = 0; i < 4; ++i)
          t->add_shape(int64_t{1} << 20); // would wrap a uint64 product
      },
      "too many elements");
  expect_rejected([](Executable& e) { e.mutable_tensors(1)->set_ipu(1); },
                  "tensor 1 'y': on IPU 1 of the replica's 1");
}

TEST_CASE("verifier: tensor mappings must cover the tensor exactly, in order") {
  expect_rejected([](Executable& e) { e.mutable_tensors(0)->clear_mapping(); },
                  "tensor 0 'x': mapping covers 0 of 8");
  expect_rejected([](Executable& e) { e.mutable_tensors(0)->mutable_mapping(1)->set_end(7); },
                  "mapping covers 7 of 8");
  // Gap between intervals.
  expect_rejected([](Executable& e) { e.mutable_tensors(0)->mutable_mapping(1)->set_begin(5); },
                  "mapping interval 1 [5, 8)");
  // Overlap.
  expect_rejected([](Executable& e) { e.mutable_tensors(0)->mutable_mapping(1)->set_begin(3); },
                  "mapping interval 1 [3, 8)");
  // Past the end.
  expect_rejected([](Executable& e) { e.mutable_tensors(0)->mutable_mapping(1)->set_end(9); },
                  "mapping interval 1 [4, 9)");
  // Empty interval.
  expect_rejected(
      [](Executable& e) {
        auto* iv = e.mutable_tensors(0)->add_mapping();
        iv->set_begin(8);
        iv->set_end(8);
      },
      "mapping interval 2");
  // Does not start at 0.
  expect_rejected([](Executable& e) { e.mutable_tensors(0)->mutable_mapping(0)->set_begin(1); },
                  "mapping interval 0");
  // Out of order.
  expect_rejected([](Executable& e) { e.mutable_tensors(0)->mutable_mapping()->SwapElements(0, 1); },
                  "mapping interval 0");
  // A tile past the target's 4.
  expect_rejected([](Executable& e) { e.mutable_tensors(1)->mutable_mapping(0)->set_tile(4); }, "on tile 4");
  expect_rejected([](Executable& e) { e.mutable_tensors(1)->mutable_mapping(0)->set_tile(0xffffffffu); },
                  "on tile 4294967295");
  // Interval ends wrapping around.
  expect_rejected([](Executable& e) { e.mutable_tensors(0)->mutable_mapping(1)->set_end(~uint64_t{0}); },
                  "mapping interval 1");
}

TEST_CASE("verifier: a mapping interval on another IPU's tiles") {
  // With 2 IPUs x 4 tiles, tensor 'y' says IPU 0 but its only interval is on global tile 6.
  Executable exe = tiny_executable();
  exe.mutable_target()->set_num_ipus(2);
  exe.mutable_tensors(1)->mutable_mapping(0)->set_tile(6);
  ipu::Status status = verify_executable(exe);
  CHECK_FALSE(status.ok());
  CHECK(status.code() == StatusCode::kDataLoss);
}

TEST_CASE("verifier: initial values") {
  expect_accepted([](Executable& e) { e.mutable_tensors(1)->set_initial_value(std::string(32, '\1')); });
  expect_rejected([](Executable& e) { e.mutable_tensors(1)->set_initial_value(std::string(31, '\1')); },
                  "tensor 1 'y': initial value has 31 bytes, expected 32");
  expect_rejected([](Executable& e) { e.mutable_tensors(1)->set_initial_value(std::string(33, '\1')); },
                  "initial value has 33 bytes");
}

TEST_CASE("verifier: streams") {
  expect_rejected([](Executable& e) { e.mutable_streams(0)->set_direction(Stream::DIRECTION_UNSPECIFIED); },
                  "stream 0 'features': unknown direction");
  expect_rejected(
      [](Executable& e) { e.mutable_streams(0)->set_direction(static_cast<Stream::Direction>(3)); },
      "stream 0 'features': unknown direction");
  expect_rejected([](Executable& e) { e.mutable_streams(1)->set_dtype(fmt::DTYPE_UNSPECIFIED); },
                  "stream 1 'predictions': unknown dtype");
  expect_rejected([](Executable& e) { e.mutable_streams(1)->set_shape(0, 0); },
                  "stream 1 'predictions': dimension 0");
  expect_rejected([](Executable& e) { e.mutable_streams(1)->set_shape(0, -1); },
                  "stream 1 'predictions': dimension -1");
  expect_rejected(
      [](Executable& e) {
        for (int i = 0; i < 3; ++i)
          e.mutable_streams(1)->add_shape(int64_t{1} << 30);
      },
      "stream 1 'predictions': too many elements");
}

TEST_CASE("verifier: vertices name existing tiles and tensors") {
  auto vertex = [](Executable& e) { return e.mutable_compute_sets(0)->mutable_vertices(0); };
  expect_rejected([&](Executable& e) { vertex(e)->set_tile(4); },
                  "compute set 0 'relu' vertex 0: tile 4 of 4");
  expect_rejected([&](Executable& e) { vertex(e)->set_operands(1, 2); },
                  "compute set 0 'relu' vertex 0: operand names tensor 2 of 2");
  expect_rejected([&](Executable& e) { vertex(e)->set_operands(0, 0xffffffffu); },
                  "operand names tensor 4294967295");
  expect_rejected(
      [&](Executable& e) {
        auto* v = e.mutable_compute_sets(0)->add_vertices();
        *v = e.compute_sets(0).vertices(0);
        v->set_tile(9);
      },
      "compute set 0 'relu' vertex 1: tile 9");
}

TEST_CASE("verifier: vertices name an op of their compute set, or op 0 when it lists none") {
  auto vertex = [](Executable& e) { return e.mutable_compute_sets(0)->mutable_vertices(0); };
  expect_rejected([&](Executable& e) { vertex(e)->set_op(1); },
                  "compute set 0 'relu' vertex 0: names op 1 of 0");
  expect_accepted([&](Executable& e) { e.mutable_compute_sets(0)->add_ops("act"); });
  expect_accepted([&](Executable& e) {
    e.mutable_compute_sets(0)->add_ops("act");
    e.mutable_compute_sets(0)->add_ops("act2");
    vertex(e)->set_op(1);
  });
  expect_rejected(
      [&](Executable& e) {
        e.mutable_compute_sets(0)->add_ops("act");
        vertex(e)->set_op(1);
      },
      "compute set 0 'relu' vertex 0: names op 1 of 1");
}

TEST_CASE("verifier: program nodes") {
  expect_rejected([](Executable& e) { *e.add_programs() = e.programs(0); },
                  "program 'predict' defined twice");
  expect_rejected([](Executable& e) { predict_steps_add(e)->set_execute(1); },
                  "program 'predict': executes compute set 1 of 1");
  expect_rejected([](Executable& e) { predict_steps_add(e); }, "program 'predict': empty program node");
  expect_rejected([](Executable& e) { e.mutable_programs(0)->clear_program(); },
                  "program 'predict': empty program node");
  expect_rejected([](Executable& e) { predict_steps_add(e)->mutable_repeat()->set_count(2); },
                  "program 'predict': repeat without a body");
  expect_rejected(
      [](Executable& e) { predict_steps_add(e)->mutable_repeat()->mutable_body()->set_execute(5); },
      "executes compute set 5");
  expect_rejected([](Executable& e) { predict_steps_add(e)->mutable_repeat()->mutable_body(); },
                  "empty program node");
  // An all-reduce crosses the links as a float type: FLOAT16 or FLOAT32 (or unset).
  for (fmt::DType wire : {fmt::DTYPE_UNSPECIFIED, fmt::FLOAT32, fmt::FLOAT16}) {
    expect_accepted([wire](Executable& e) {
      auto* all_reduce = predict_steps_add(e)->mutable_all_reduce();
      all_reduce->add_tensors(0);
      all_reduce->set_wire_dtype(wire);
    });
  }
  expect_rejected(
      [](Executable& e) {
        auto* all_reduce = predict_steps_add(e)->mutable_all_reduce();
        all_reduce->add_tensors(0);
        all_reduce->set_wire_dtype(fmt::INT32);
      },
      "all-reduce over the links in type 2, not a float");
  expect_accepted([](Executable& e) {
    auto* r = predict_steps_add(e)->mutable_repeat();
    r->set_count(0);
    r->mutable_body()->mutable_sequence(); // an empty sequence is a valid no-op
  });
}

TEST_CASE("verifier: conditionals") {
  expect_rejected([](Executable& e) { predict_steps_add(e)->mutable_conditional()->set_condition(9); },
                  "program 'predict': a conditional names a missing tensor");
  expect_rejected(
      [](Executable& e) {
        const auto flag = static_cast<uint32_t>(e.tensors_size());
        add_tensor(e, "flag", fmt::INT32, {1}, 0);
        predict_steps_add(e)->mutable_conditional()->set_condition(flag);
      },
      "a conditional's condition must be a non-empty float32 tensor");
  expect_rejected(
      [](Executable& e) { predict_steps_add(e)->mutable_conditional()->mutable_then_body()->set_execute(5); },
      "executes compute set 5");
  expect_rejected(
      [](Executable& e) { predict_steps_add(e)->mutable_conditional()->mutable_else_body()->set_execute(5); },
      "executes compute set 5");
  // Either side may be empty.
  expect_accepted([](Executable& e) {
    auto* c = predict_steps_add(e)->mutable_conditional();
    c->set_condition(0);
    c->mutable_then_body()->set_execute(0);
  });
  expect_accepted([](Executable& e) { predict_steps_add(e)->mutable_conditional()->set_condition(1); });
}

TEST_CASE("verifier: copies") {
  auto copy = [](Executable& e, uint32_t source, uint32_t destination) {
    auto* c = predict_steps_add(e)->mutable_copy();
    c->set_source(source);
    c->set_destination(destination);
  };
  expect_accepted([&](Executable& e) { copy(e, 1, 0); });
  expect_rejected([&](Executable& e) { copy(e, 2, 0); }, "copy names a missing tensor");
  expect_rejected([&](Executable& e) { copy(e, 0, 2); }, "copy names a missing tensor");
  expect_rejected(
      [&](Executable& e) {
        add_tensor(e, "i", fmt::INT32, {2, 4});
        copy(e, 2, 0);
      },
      "copy between tensors of different type or size");
  expect_rejected(
      [&](Executable& e) {
        add_tensor(e, "small", fmt::FLOAT32, {7});
        copy(e, 0, 2);
      },
      "copy between tensors of different type or size");
  // Same element count, different shape: a flat copy is fine.
  expect_accepted([&](Executable& e) {
    add_tensor(e, "flat", fmt::FLOAT32, {8});
    copy(e, 0, 2);
  });
}

TEST_CASE("verifier: stream transfers") {
  auto stream_in = [](Executable& e, uint32_t stream, uint32_t tensor) {
    auto* st = predict_steps_add(e)->mutable_stream_in();
    st->set_stream(stream);
    st->set_tensor(tensor);
  };
  auto stream_out = [](Executable& e, uint32_t stream, uint32_t tensor) {
    auto* st = predict_steps_add(e)->mutable_stream_out();
    st->set_stream(stream);
    st->set_tensor(tensor);
  };
  expect_rejected([&](Executable& e) { stream_in(e, 2, 0); }, "names a missing stream or tensor");
  expect_rejected([&](Executable& e) { stream_in(e, 0, 2); }, "names a missing stream or tensor");
  expect_rejected([&](Executable& e) { stream_out(e, 7, 1); }, "names a missing stream or tensor");
  // Direction.
  expect_rejected([&](Executable& e) { stream_in(e, 1, 0); },
                  "stream 'predictions' used against its direction");
  expect_rejected([&](Executable& e) { stream_out(e, 0, 1); },
                  "stream 'features' used against its direction");
  // Dtype.
  expect_rejected([&](Executable& e) { e.mutable_streams(0)->set_dtype(fmt::INT32); },
                  "stream 'features' does not match tensor 0 'x'");
  // Size.
  expect_rejected([&](Executable& e) { e.mutable_streams(1)->set_shape(1, 5); },
                  "stream 'predictions' does not match tensor 1 'y'");
  expect_rejected([&](Executable& e) { e.mutable_streams(1)->add_shape(2); }, "does not match tensor 1 'y'");
}

TEST_CASE("verifier: a stream whose shape differs from its tensor's, with equal size") {
  // The session derives host sample shapes from streams, so f32[8] must not feed f32[2,4].
  Executable exe = tiny_executable();
  exe.mutable_streams(0)->clear_shape();
  exe.mutable_streams(0)->add_shape(8);
  ipu::Status status = verify_executable(exe);
  CHECK_FALSE(status.ok());
  // Float labels alone travel flattened per sample, the loss reading them in its own shape
  // (the host contract checks the stream is [batch, num_classes]); the element count must agree.
  exe.mutable_streams(0)->set_name(std::string(fmt::kLabelsStream));
  CHECK_MESSAGE(verify_executable(exe).ok(), verify_executable(exe).message());
  exe.mutable_streams(0)->set_shape(0, 6);
  CHECK(verify_executable(exe).message() == "program 'predict': stream 'labels' does not match tensor 0 'x'");
}

Program* nest(Program* p, int depth) {
  for (int i = 0; i < depth; ++i)
    p = p->mutable_sequence()->add_steps();
  return p;
}

TEST_CASE("verifier: program nesting depth is bounded") {
  // The node at depth d is wrapped in d sequences; kMaxProgramDepth is the deepest allowed.
  expect_accepted([](Executable& e) {
    nest(e.mutable_programs(0)->mutable_program(), fmt::kMaxProgramDepth)->set_execute(0);
  });
  expect_rejected(
      [](Executable& e) {
        nest(e.mutable_programs(0)->mutable_program(), fmt::kMaxProgramDepth + 1)->set_execute(0);
      },
      "programs nested deeper than 64");
  // Repeats count as nesting too.
  expect_rejected(
      [](Executable& e) {
        Program* p = e.mutable_programs(0)->mutable_program();
        for (int i = 0; i <= fmt::kMaxProgramDepth; ++i)
          p = p->mutable_repeat()->mutable_body();
        p->set_execute(0);
      },
      "programs nested deeper than 64");
}

TEST_CASE("verifier: sizes beyond what ipucc compile writes") {
  expect_rejected([](Executable& e) { e.set_batch_size(fmt::kMaxBatchSize + 1); },
                  "batch_size 1048577 is outside");
  expect_rejected([](Executable& e) { e.set_steps_per_execution(fmt::kMaxStepsPerExecution + 1); },
                  "steps_per_execution 16777217 is outside");
  expect_rejected([](Executable& e) { e.mutable_target()->set_bytes_per_tile(fmt::kMaxBytesPerTile + 1); },
                  "target: invalid bytes_per_tile");
  expect_rejected(
      [](Executable& e) {
        e.mutable_pipeline()->set_gradient_accumulation(fmt::kMaxGradientAccumulation + 1);
      },
      "gradient accumulation 65537");
}

TEST_CASE("verifier: tensors that live the whole program fit their tiles") {
  // x is 16 bytes on tiles 0 and 1; a weight of 2^14 floats on tile 3 fills its 64 KiB exactly.
  auto weight = [](Executable& e, int64_t elements) {
    add_tensor(e, "w", fmt::FLOAT32, {elements}, 3)->set_role(fmt::WEIGHT);
  };
  expect_accepted([&](Executable& e) { weight(e, 1 << 14); });
  expect_rejected(
      [&](Executable& e) {
        weight(e, 1 << 14);
        add_tensor(e, "state", fmt::FLOAT32, {1}, 3)->set_role(fmt::OPTIMIZER_STATE);
      },
      "tile 3 holds 65540 bytes of tensors that live the whole program");
  // Activations come and go: the compiler's memory plan, not a sum, bounds them; but no one
  // tensor fills a tile past its bytes (a 1.2 GB output cannot hide on one tile).
  expect_accepted([&](Executable& e) {
    add_tensor(e, "a", fmt::FLOAT32, {1 << 14}, 3);
    add_tensor(e, "b", fmt::FLOAT32, {1 << 14}, 3);
  });
  expect_rejected([&](Executable& e) { add_tensor(e, "a", fmt::FLOAT32, {(1 << 14) + 1}, 3); },
                  "tensor 2 'a': holds 65540 bytes on tile 3, more than its 65536");
}

TEST_CASE("verifier: checking parallel branches is linear, and bounded") {
  // 4,096 tensors named by one compute set that 20,000 Parallel nodes execute: 8.2e7 tensor
  // visits, past the bound, refused at once (each node once re-sorted a set of 4,096 names).
  Executable exe = tiny_executable();
  auto* wide = exe.add_compute_sets();
  wide->set_name("wide");
  for (int i = 0; i < 4096; ++i) {
    add_tensor(exe, "t" + std::to_string(i), fmt::FLOAT32, {1}, 3);
    auto* v = wide->add_vertices();
    v->set_codelet(kActivation);
    v->set_tile(3);
    v->add_operands(static_cast<uint32_t>(exe.tensors_size() - 1));
  }
  auto* seq = exe.mutable_programs(0)->mutable_program()->mutable_sequence();
  for (int i = 0; i < 20000; ++i)
    seq->add_steps()->mutable_parallel()->add_branches()->set_execute(1);
  ipu::Status status = verify_executable(exe);
  REQUIRE_FALSE(status.ok());
  CHECK(status.message().find("too large to verify") != std::string::npos);
  // Nested parallel nodes: an inner node's branches are disjoint, the outer node's share.
  expect_rejected(
      [](Executable& e) {
        auto* outer = predict_steps_add(e)->mutable_parallel();
        auto* inner = outer->add_branches()->mutable_parallel();
        inner->add_branches()->set_execute(0);
        outer->add_branches()->set_execute(0);
      },
      "parallel branches share tensor 0 'x'");
  expect_accepted([](Executable& e) {
    auto* outer = predict_steps_add(e)->mutable_parallel();
    outer->add_branches()->mutable_parallel()->add_branches()->set_execute(0);
    predict_steps_add(e)->mutable_parallel()->add_branches()->set_execute(
        0); // a later node may touch it again
  });
}

// ---- The host contract: what runtime/session copies, verified before the device exists. ----

void expect_contract_rejected(const std::function<void(Executable&)>& mutate, const std::string& fragment) {
  Executable exe = tiny_executable();
  mutate(exe);
  ipu::Status status = fmt::verify_host_contract(exe);
  INFO("expected a message containing: " << fragment);
  INFO("got: " << status.message());
  REQUIRE_FALSE(status.ok());
  CHECK(status.code() == StatusCode::kDataLoss);
  CHECK(status.message().find(fragment) != std::string::npos);
}

void expect_contract_accepted(const std::function<void(Executable&)>& mutate) {
  Executable exe = tiny_executable();
  mutate(exe);
  CHECK(verify_executable(exe).ok());
  ipu::Status status = fmt::verify_host_contract(exe);
  INFO(status.message());
  CHECK(status.ok());
}

// The predict program's steps wrapped in a Repeat of `count`.
void repeat_predict(Executable& e, uint64_t count) {
  Program body = e.programs(0).program();
  Program* p = e.mutable_programs(0)->mutable_program();
  p->Clear();
  p->mutable_repeat()->set_count(count);
  *p->mutable_repeat()->mutable_body() = body;
}

fmt::ModelIo* add_io(Executable& e, bool input, uint32_t stream, std::initializer_list<int64_t> shape,
                     bool batched) {
  fmt::ModelIo* io = input ? e.add_inputs() : e.add_outputs();
  io->set_name(input ? "x" : "y");
  io->set_dtype("f4");
  io->set_stream(stream);
  for (int64_t d : shape)
    io->add_shape(d);
  io->set_batched(batched);
  return io;
}

TEST_CASE("host contract: a run repeats nothing more than steps_per_execution times") {
  expect_contract_accepted([](Executable& e) { repeat_predict(e, 1); });
  expect_contract_accepted([](Executable& e) {
    e.set_steps_per_execution(4);
    repeat_predict(e, 4);
  });
  // The host holds S steps of features: a fifth would be read past them.
  expect_contract_rejected([](Executable& e) { repeat_predict(e, 2); },
                           "a Repeat of 2 makes its body run more than steps_per_execution (1)");
  expect_contract_rejected(
      [](Executable& e) {
        e.set_steps_per_execution(4);
        repeat_predict(e, 4);
        repeat_predict(e, 2);
      },
      "a Repeat of 4 inside Repeats of 2 in all makes its body run more than steps_per_execution (4)");
  // 2^62 iterations of nothing, and 40 nested Repeat(2), would run for ever.
  expect_contract_rejected(
      [](Executable& e) { predict_steps_add(e)->mutable_repeat()->set_count(uint64_t{1} << 62); },
      "a Repeat of 4611686018427387904");
  expect_contract_rejected(
      [](Executable& e) {
        e.set_steps_per_execution(fmt::kMaxStepsPerExecution);
        Program* p = predict_steps_add(e);
        for (int i = 0; i < 40; ++i) {
          p->mutable_repeat()->set_count(2);
          p = p->mutable_repeat()->mutable_body();
        }
        p->mutable_sequence();
      },
      "makes its body run more than steps_per_execution (16777216)");
  // Two transfers of a stream in one step are two steps' worth.
  expect_contract_rejected(
      [](Executable& e) { *predict_steps_add(e) = e.programs(0).program().sequence().steps(0); },
      "moves stream 'features' 2 times per run, more than 1");
}

TEST_CASE("host contract: the streams the host knows by name") {
  // features and predictions of a spec's model start with the micro-batch.
  expect_contract_rejected(
      [](Executable& e) {
        e.mutable_streams(0)->set_shape(0, 3);
        e.mutable_tensors(0)->set_shape(0, 3);
      },
      "stream 'features': the features of a data set must start with the micro-batch of 2 rows");
  expect_contract_rejected([](Executable& e) { e.mutable_streams(1)->set_shape(0, 1000000); },
                           "stream 'predictions': predictions must start with the micro-batch");
  auto add_stream = [](Executable& e, const char* name, Stream::Direction direction, fmt::DType dtype,
                       std::initializer_list<int64_t> shape) {
    auto* s = e.add_streams();
    s->set_name(name);
    s->set_direction(direction);
    s->set_dtype(dtype);
    for (int64_t d : shape)
      s->add_shape(d);
  };
  expect_contract_accepted(
      [&](Executable& e) { add_stream(e, "labels", Stream::HOST_TO_DEVICE, fmt::INT32, {2}); });
  expect_contract_rejected(
      [&](Executable& e) { add_stream(e, "labels", Stream::HOST_TO_DEVICE, fmt::INT32, {1000000}); },
      "stream 'labels': must be int32 [2] (a label per sample)");
  expect_contract_accepted(
      [&](Executable& e) { add_stream(e, "loss", Stream::DEVICE_TO_HOST, fmt::FLOAT32, {}); });
  expect_contract_rejected(
      [&](Executable& e) { add_stream(e, "loss", Stream::DEVICE_TO_HOST, fmt::INT32, {1}); },
      "stream 'loss': must carry one float to the host per step");
  expect_contract_rejected(
      [&](Executable& e) { add_stream(e, "correct", Stream::DEVICE_TO_HOST, fmt::FLOAT32, {4}); },
      "stream 'correct': must carry one float to the host per step");
  // Prediction returns its outputs through `predictions` (the fuzzer found a session reading a
  // stream that was not there).
  expect_contract_rejected([](Executable& e) { e.mutable_streams(1)->set_name("outputs"); },
                           "program 'predict' has no stream 'predictions' to return its outputs through");
  // Prediction has no labels to stream.
  expect_contract_rejected(
      [&](Executable& e) {
        add_stream(e, "labels", Stream::HOST_TO_DEVICE, fmt::INT32, {2});
        add_tensor(e, "l", fmt::INT32, {2}, 3);
        auto* st = predict_steps_add(e)->mutable_stream_in();
        st->set_stream(2);
        st->set_tensor(2);
      },
      "program 'predict': streams labels, which prediction has none of");
}

TEST_CASE("host contract: weights and optimizer state have names of their own") {
  auto weight = [](Executable& e, const char* name, fmt::TensorRole role) {
    add_tensor(e, name, fmt::FLOAT32, {1}, 3)->set_role(role);
  };
  expect_contract_accepted([&](Executable& e) {
    weight(e, "b", fmt::WEIGHT);
    weight(e, "b/momentum", fmt::OPTIMIZER_STATE);
  });
  expect_contract_rejected(
      [&](Executable& e) {
        weight(e, "b/momentum", fmt::WEIGHT);
        weight(e, "b/momentum", fmt::OPTIMIZER_STATE);
      },
      "two weights or optimizer states are named 'b/momentum'");
}

TEST_CASE("host contract: the optimizer's hyper-parameters") {
  // A stream of one row of slots into one tensor of them, and the names of those the optimizer reads.
  auto hyper = [](Executable& e, int64_t elements = fmt::kHyperParameterCount) {
    auto* s = e.add_streams();
    s->set_name(std::string(fmt::kHyperParametersStream));
    s->set_direction(Stream::HOST_TO_DEVICE);
    s->set_dtype(fmt::FLOAT32);
    s->add_shape(elements);
    add_tensor(e, std::string(fmt::kHyperParametersTensor), fmt::FLOAT32, {elements}, 3)
        ->set_role(fmt::HYPER_PARAMETERS);
    e.add_hyper_parameters("learning_rate");
  };
  expect_contract_accepted([&](Executable& e) { hyper(e); });
  expect_contract_accepted([&](Executable& e) {
    hyper(e);
    e.set_learning_rate_schedule("cosine:decay_steps=100");
  });
  expect_contract_rejected(
      [&](Executable& e) { hyper(e, 4); },
      "stream 'optimizer/hyper_parameters': must be float32 [9] (one value per hyper-parameter)");
  expect_contract_rejected(
      [&](Executable& e) {
        hyper(e);
        e.mutable_streams(2)->set_direction(Stream::DEVICE_TO_HOST);
      },
      "must carry the hyper-parameters to the device");
  expect_contract_rejected(
      [&](Executable& e) {
        hyper(e);
        e.mutable_tensors(e.tensors_size() - 1)->set_name("other");
      },
      "the hyper-parameters need both a stream 'optimizer/hyper_parameters' and one tensor");
  expect_contract_rejected(
      [&](Executable& e) {
        hyper(e);
        e.mutable_tensors(e.tensors_size() - 1)->set_initial_value(std::string(3, '\0'));
      },
      "its initial value is not 9 floats");
  expect_contract_rejected(
      [&](Executable& e) {
        hyper(e);
        e.add_hyper_parameters("amsgrad");
      },
      "hyper_parameters: unknown hyper-parameter 'amsgrad'");
  expect_contract_rejected(
      [&](Executable& e) {
        hyper(e);
        e.add_hyper_parameters("learning_rate");
      },
      "hyper_parameters: 'learning_rate' is named twice");
  expect_contract_rejected([&](Executable& e) { e.add_hyper_parameters("momentum"); },
                           "names hyper-parameters, but no stream carries them");
  expect_contract_rejected(
      [&](Executable& e) {
        hyper(e);
        e.set_learning_rate_schedule("cosine:decay_steps=0");
      },
      "decay_steps must be a number > 0");
}

TEST_CASE("host contract: model inputs and outputs match their streams") {
  auto both = [](Executable& e) {
    add_io(e, true, 0, {2, 4}, true);
    add_io(e, false, 1, {2, 4}, true);
  };
  expect_contract_accepted(both);
  // A reshape's output shares its input's tensor: the elements, not the shape, must agree.
  expect_contract_accepted([](Executable& e) {
    add_io(e, true, 0, {2, 2, 2}, true);
    add_io(e, false, 1, {8}, false);
  });
  expect_contract_rejected([](Executable& e) { add_io(e, false, 1, {int64_t{1} << 40}, false); },
                           "output 'y': too many elements");
  expect_contract_rejected([](Executable& e) { add_io(e, false, 1, {-1}, false); },
                           "output 'y': dimension -1 is not positive");
  expect_contract_rejected([](Executable& e) { add_io(e, true, 0, {}, true); },
                           "input 'x': is batched but its shape does not start with the micro-batch of 2");
  expect_contract_rejected([](Executable& e) { add_io(e, true, 0, {4}, false); },
                           "input 'x': stream 'features' does not carry its 4 floats");
  expect_contract_rejected(
      [](Executable& e) {
        add_io(e, true, 1, {2, 4}, true);
      },
      "input 'x': stream 'predictions' runs the wrong way");
  expect_contract_rejected(
      [](Executable& e) {
        add_io(e, false, 9, {2, 4}, true);
      },
      "output 'y': names stream 9 of 2");
  expect_contract_rejected(
      [](Executable& e) {
        add_io(e, true, 0, {2, 4}, true)->set_dtype("f8");
      },
      "input 'x': unknown dtype 'f8'");
  expect_contract_rejected(
      [](Executable& e) {
        add_io(e, true, 0, {2, 4}, true);
        add_io(e, true, 0, {2, 4}, true);
      },
      "shares its stream with another input or output");
}

// ---- Vertex parameters: Engine::create runs each kernel's validate function. ----

// Engine::create must reject the mutated executable with DataLoss naming the compute set, the
// vertex and `fragment`; the structural verifier alone accepts it.
void expect_vertex_rejected(const std::function<void(Executable&)>& mutate, const std::string& fragment,
                            const std::string& vertex = "compute set 0 'relu' vertex 0") {
  Executable exe = tiny_executable();
  mutate(exe);
  ipu::Status structural = verify_executable(exe);
  INFO("structural: " << structural.message());
  CHECK(structural.ok());
  auto engine = ipu::engine::Engine::create(exe, {});
  INFO("expected a message containing: " << fragment);
  INFO("got: " << engine.status().message());
  REQUIRE_FALSE(engine.ok());
  CHECK(engine.status().code() == StatusCode::kDataLoss);
  CHECK(engine.status().message().find(vertex) != std::string::npos);
  CHECK(engine.status().message().find(fragment) != std::string::npos);
}

fmt::Vertex* the_vertex(Executable& e) {
  return e.mutable_compute_sets(0)->mutable_vertices(0);
}

// Replaces the relu vertex by a fresh one of `codelet` on `operands` with `params`.
fmt::Vertex* replace_vertex(Executable& e, uint32_t codelet, std::initializer_list<uint32_t> operands,
                            std::initializer_list<int64_t> params,
                            std::initializer_list<float> fparams = {}) {
  fmt::Vertex* v = the_vertex(e);
  v->Clear();
  v->set_codelet(codelet);
  v->set_tile(1);
  for (uint32_t o : operands)
    v->add_operands(o);
  for (int64_t p : params)
    v->add_params(p);
  for (float f : fparams)
    v->add_fparams(f);
  return v;
}

void expect_vertex_accepted(const std::function<void(Executable&)>& mutate) {
  Executable exe = tiny_executable();
  mutate(exe);
  auto engine = ipu::engine::Engine::create(exe, {});
  INFO(engine.status().message());
  CHECK(engine.ok());
}

TEST_CASE("engine load: unknown codelets") {
  for (uint32_t id : {0u, 30u, 68u, 69u, 1000u, 0xffffffffu}) {
    CAPTURE(id);
    expect_vertex_rejected([id](Executable& e) { the_vertex(e)->set_codelet(id); },
                           "unknown codelet id " + std::to_string(id));
  }
}

TEST_CASE("engine load: element ranges of an elementwise vertex") {
  expect_vertex_accepted([](Executable& e) { the_vertex(e)->set_params(1, 8); }); // empty range [8, 8)
  expect_vertex_rejected([](Executable& e) { the_vertex(e)->set_params(2, 9); },
                         "element range [0, 9) is outside [0, 8)");
  expect_vertex_rejected([](Executable& e) { the_vertex(e)->set_params(1, -1); }, "element range [-1, 8)");
  expect_vertex_rejected(
      [](Executable& e) {
        the_vertex(e)->set_params(1, 5);
        the_vertex(e)->set_params(2, 4);
      },
      "element range [5, 4)");
  expect_vertex_rejected([](Executable& e) { the_vertex(e)->set_params(2, INT64_MAX); }, "element range");
  expect_vertex_rejected([](Executable& e) { the_vertex(e)->set_params(1, INT64_MIN); }, "element range");
  expect_vertex_rejected([](Executable& e) { the_vertex(e)->set_params(0, 3); }, "unknown activation kind");
  expect_vertex_rejected([](Executable& e) { the_vertex(e)->set_params(0, -1); }, "unknown activation kind");
}

TEST_CASE("engine load: operand and parameter counts") {
  expect_vertex_rejected([](Executable& e) { the_vertex(e)->add_operands(1); }, "expects 2 operands, got 3");
  expect_vertex_rejected([](Executable& e) { the_vertex(e)->mutable_operands()->RemoveLast(); },
                         "expects 2 operands, got 1");
  expect_vertex_rejected([](Executable& e) { the_vertex(e)->clear_operands(); }, "expects 2 operands, got 0");
  expect_vertex_rejected([](Executable& e) { the_vertex(e)->add_params(0); },
                         "expects 3 integer and 0 float parameters, got 4 and 0");
  expect_vertex_rejected([](Executable& e) { the_vertex(e)->add_fparams(1.0f); }, "got 3 and 1");
  expect_vertex_rejected([](Executable& e) { the_vertex(e)->clear_params(); }, "got 0 and 0");
  expect_vertex_rejected(
      [](Executable& e) {
        for (size_t i = 0; i <= ipu::kernels::kMaxOperands; ++i)
          the_vertex(e)->add_operands(0);
      },
      "too many operands or parameters");
  expect_vertex_rejected(
      [](Executable& e) {
        for (size_t i = 0; i <= ipu::kernels::kMaxParams; ++i)
          the_vertex(e)->add_params(0);
      },
      "too many operands or parameters");
  expect_vertex_rejected(
      [](Executable& e) {
        for (size_t i = 0; i <= ipu::kernels::kMaxFloatParams; ++i)
          the_vertex(e)->add_fparams(0);
      },
      "too many operands or parameters");
}

TEST_CASE("engine load: operand dtypes and sizes") {
  expect_vertex_rejected(
      [](Executable& e) {
        add_tensor(e, "labels", fmt::INT32, {2, 4});
        the_vertex(e)->set_operands(1, 2);
      },
      "operand 1 (tensor 2) has dtype INT32, expected FLOAT32");
  expect_vertex_rejected(
      [](Executable& e) {
        add_tensor(e, "other", fmt::FLOAT32, {9});
        the_vertex(e)->set_operands(1, 2);
        the_vertex(e)->set_params(2, 8);
      },
      "input and output sizes differ");
  // In place is allowed for elementwise kernels.
  expect_vertex_accepted([](Executable& e) { the_vertex(e)->set_operands(1, 0); });
}

TEST_CASE("engine load: row ranges") {
  // BiasAdd over x [2,4] + b [4] -> y [2,4].
  auto bias_add = [](Executable& e, int64_t row_begin, int64_t row_end) {
    add_tensor(e, "b", fmt::FLOAT32, {4});
    replace_vertex(e, kBiasAdd, {0, 2, 1}, {2, 4, row_begin, row_end});
  };
  expect_vertex_accepted([&](Executable& e) { bias_add(e, 0, 2); });
  expect_vertex_accepted([&](Executable& e) { bias_add(e, 1, 2); });
  expect_vertex_rejected([&](Executable& e) { bias_add(e, 0, 3); }, "row range [0, 3) is outside [0, 2)");
  expect_vertex_rejected([&](Executable& e) { bias_add(e, -1, 1); }, "row range [-1, 1)");
  expect_vertex_rejected([&](Executable& e) { bias_add(e, 2, 1); }, "row range [2, 1)");
  expect_vertex_rejected(
      [&](Executable& e) {
        bias_add(e, 0, 2);
        the_vertex(e)->set_params(1, 8);
        the_vertex(e)->set_params(0, 1);
      },
      "b has 4 elements, parameters say 8");
  // Softmax over [2,4].
  expect_vertex_accepted([](Executable& e) { replace_vertex(e, kSoftmax, {0, 1}, {2, 4, 0, 2}); });
  expect_vertex_rejected(
      [](Executable& e) {
        replace_vertex(e, kSoftmax, {0, 1}, {2, 4, 0, 3});
      },
      "row range [0, 3)");
  expect_vertex_rejected(
      [](Executable& e) {
        replace_vertex(e, kSoftmax, {0, 1}, {4, 4, 0, 2});
      },
      "scores has 8 elements, parameters say 16");
  expect_vertex_rejected(
      [](Executable& e) {
        replace_vertex(e, kSoftmax, {0, 1}, {0, 4, 0, 0});
      },
      "dimension 0 is invalid");
  expect_vertex_rejected(
      [](Executable& e) {
        replace_vertex(e, kSoftmax, {0, 1}, {-2, -4, 0, 0});
      },
      "dimension -2 is invalid");
  // ColumnSum of x [2,4] into c [4].
  expect_vertex_accepted([](Executable& e) {
    add_tensor(e, "c", fmt::FLOAT32, {4});
    replace_vertex(e, kColumnSum, {0, 2}, {2, 4, 1, 3});
  });
  expect_vertex_rejected(
      [](Executable& e) {
        add_tensor(e, "c", fmt::FLOAT32, {4});
        replace_vertex(e, kColumnSum, {0, 2}, {2, 4, 0, 5});
      },
      "column range [0, 5)");
}

TEST_CASE("engine load: losses and optimizers") {
  auto with_labels = [](Executable& e) {
    add_tensor(e, "labels", fmt::INT32, {2});
    add_tensor(e, "loss", fmt::FLOAT32, {1});
  };
  expect_vertex_accepted([&](Executable& e) {
    with_labels(e);
    replace_vertex(e, kSparseCrossEntropy, {0, 2, 3}, {2, 4, 1});
  });
  expect_vertex_rejected(
      [&](Executable& e) {
        with_labels(e);
        replace_vertex(e, kSparseCrossEntropy, {0, 3, 2}, {2, 4, 1});
      },
      "operand 1 (tensor 3) has dtype FLOAT32, expected INT32");
  expect_vertex_rejected(
      [&](Executable& e) {
        with_labels(e);
        replace_vertex(e, kSparseCrossEntropy, {0, 2, 1}, {2, 4, 1});
      },
      "loss has 8 elements, parameters say 1");
  expect_vertex_rejected(
      [&](Executable& e) {
        with_labels(e);
        replace_vertex(e, kSparseCrossEntropy, {0, 2, 3}, {1, 8, 1});
      },
      "labels has 2 elements, parameters say 1");
  // The optimizers' hyper-parameters: their last operand, one float32 per slot.
  auto hyper = [](Executable& e, int64_t elements = fmt::kHyperParameterCount) {
    add_tensor(e, "optimizer/hyper_parameters", fmt::FLOAT32, {elements});
    return static_cast<uint32_t>(e.tensors_size() - 1);
  };
  // SgdMomentum: W, G[, V] of equal size, then H.
  expect_vertex_accepted([&](Executable& e) {
    replace_vertex(e, kSgdMomentum, {0, 1, hyper(e)}, {0, 8, 0}, {1.0f});
  });
  expect_vertex_rejected(
      [&](Executable& e) {
        replace_vertex(e, kSgdMomentum, {0, 1, hyper(e)}, {0, 8, 0}, {0.1f, 0.9f, 1.0f});
      },
      "expects 3 integer and 1 float parameters");
  expect_vertex_rejected(
      [&](Executable& e) {
        add_tensor(e, "v", fmt::FLOAT32, {4});
        replace_vertex(e, kSgdMomentum, {0, 1, 2, hyper(e)}, {0, 8, 0}, {1.0f});
      },
      "gradient and state sizes differ from the weight");
  expect_vertex_rejected(
      [&](Executable& e) {
        replace_vertex(e, kSgdMomentum, {0, 1, hyper(e, 4)}, {0, 8, 0}, {1.0f});
      },
      "the hyper-parameters must be 9 values, got 4");
  expect_vertex_rejected(
      [](Executable& e) {
        replace_vertex(e, kSgdMomentum, {0}, {0, 8, 0}, {1.0f});
      },
      "expects 3 or 4 operands");
  // Adam: W, G, M, V of equal size, distinct, a one-element step count, then H.
  auto adam_state = [](Executable& e, std::initializer_list<int64_t> step_shape) {
    add_tensor(e, "m", fmt::FLOAT32, {8});
    add_tensor(e, "v", fmt::FLOAT32, {8});
    add_tensor(e, "step", fmt::FLOAT32, step_shape);
  };
  expect_vertex_accepted([&](Executable& e) {
    adam_state(e, {1});
    replace_vertex(e, kAdam, {0, 1, 2, 3, 4, hyper(e)}, {0, 8, 0, 0}, {1.0f});
  });
  expect_vertex_rejected(
      [&](Executable& e) {
        adam_state(e, {8});
        replace_vertex(e, kAdam, {0, 1, 2, 3, 4, hyper(e)}, {0, 8, 0, 0}, {1.0f});
      },
      "the step count must have one element");
  expect_vertex_rejected(
      [&](Executable& e) {
        adam_state(e, {1});
        replace_vertex(e, kAdam, {0, 1, 2, 2, 4, hyper(e)}, {0, 8, 0, 0}, {1.0f});
      },
      "must be distinct tensors");
  expect_vertex_rejected(
      [&](Executable& e) {
        adam_state(e, {1});
        replace_vertex(e, kAdam, {0, 1, 2, 3, 4, hyper(e)}, {0, 8, 0}, {1.0f});
      },
      "expects 4 integer and 1 float parameters");
  expect_vertex_rejected(
      [&](Executable& e) {
        adam_state(e, {1});
        replace_vertex(e, kAdam, {0, 1, 2, 3, 4}, {0, 8, 0, 0}, {1.0f});
      },
      "expects 6 operands, got 5");
  expect_vertex_accepted([&](Executable& e) {
    adam_state(e, {1});
    replace_vertex(e, kStepCount, {4}, {1});
  });
  expect_vertex_rejected([](Executable& e) { replace_vertex(e, kStepCount, {0}, {1}); },
                         "the step count must have one element");
  // Sgd: the velocity only with momentum state, the step count only with dampening too.
  expect_vertex_accepted([&](Executable& e) {
    adam_state(e, {1});
    replace_vertex(e, kSgd, {0, 1, 2, 4, hyper(e)}, {0, 8, 0, 1}, {1.0f});
  });
  expect_vertex_accepted([&](Executable& e) {
    replace_vertex(e, kSgd, {0, 1, hyper(e)}, {0, 8, 0, 0}, {1.0f});
  });
  expect_vertex_rejected(
      [&](Executable& e) {
        adam_state(e, {1});
        replace_vertex(e, kSgd, {0, 1, 4, hyper(e)}, {0, 8, 0, 0}, {1.0f});
      },
      "gradient and state sizes differ from the weight");
  // RmsProp: the momentum buffer and gradient average only when asked for.
  expect_vertex_accepted([&](Executable& e) {
    adam_state(e, {1});
    replace_vertex(e, kRmsProp, {0, 1, 2, 3, hyper(e)}, {0, 8, 0, 1}, {1.0f});
  });
  expect_vertex_rejected(
      [&](Executable& e) {
        adam_state(e, {1});
        replace_vertex(e, kRmsProp, {0, 1, 2, 4, hyper(e)}, {0, 8, 0, 0}, {1.0f});
      },
      "gradient and state sizes differ from the weight");
  expect_vertex_accepted([&](Executable& e) {
    adam_state(e, {1});
    replace_vertex(e, kAdagrad, {0, 1, 2, hyper(e)}, {0, 8, 0}, {1.0f});
  });
  expect_vertex_rejected(
      [&](Executable& e) {
        adam_state(e, {1});
        replace_vertex(e, kAdagrad, {0, 1, 1, hyper(e)}, {0, 8, 0}, {1.0f});
      },
      "must be distinct tensors");
  expect_vertex_accepted([&](Executable& e) {
    adam_state(e, {1});
    replace_vertex(e, kAdaMax, {0, 1, 2, 3, 4, hyper(e)}, {0, 8, 0}, {1.0f});
  });
  expect_vertex_rejected(
      [&](Executable& e) {
        adam_state(e, {8});
        replace_vertex(e, kAdaMax, {0, 1, 2, 3, 4, hyper(e)}, {0, 8, 0}, {1.0f});
      },
      "the step count must have one element");
}

TEST_CASE("engine load: matmul dimensions against tensor sizes") {
  // A = x [2,4], B = w [4,3], C = out [2,3]: M=2, N=3, K=4.
  auto matmul = [](Executable& e, std::initializer_list<int64_t> params) {
    add_tensor(e, "w", fmt::FLOAT32, {4, 3});
    add_tensor(e, "out", fmt::FLOAT32, {2, 3});
    replace_vertex(e, kMatMul, {0, 2, 3}, params);
  };
  expect_vertex_accepted([&](Executable& e) { matmul(e, {2, 3, 4, 0, 0, 0, 2, 0, 3, 0}); });
  expect_vertex_accepted([&](Executable& e) { matmul(e, {2, 3, 4, 0, 0, 1, 2, 1, 2, 1}); });
  expect_vertex_rejected(
      [&](Executable& e) {
        matmul(e, {2, 3, 3, 0, 0, 0, 2, 0, 3, 0});
      },
      "A has 8 elements, parameters say 6");
  expect_vertex_rejected(
      [&](Executable& e) {
        matmul(e, {4, 3, 2, 0, 0, 0, 2, 0, 3, 0});
      },
      "B has 12 elements, parameters say 6");
  expect_vertex_rejected(
      [&](Executable& e) {
        matmul(e, {1, 6, 8, 0, 0, 0, 1, 0, 6, 0});
      },
      "B has 12 elements, parameters say 48");
  expect_vertex_rejected(
      [&](Executable& e) {
        matmul(e, {2, 3, 4, 0, 0, 0, 3, 0, 3, 0});
      },
      "row range [0, 3) is outside [0, 2)");
  expect_vertex_rejected(
      [&](Executable& e) {
        matmul(e, {2, 3, 4, 0, 0, 0, 2, 2, 4, 0});
      },
      "column range [2, 4) is outside [0, 3)");
  expect_vertex_rejected(
      [&](Executable& e) {
        matmul(e, {2, 3, 4, 0, 0, 0, 2, 0, 3});
      },
      "expects 10 integer");
  expect_vertex_accepted([&](Executable& e) {
    matmul(e, {2, 3, 4, 0, 0, 0, 2, 0, 3, 0, 1});
  }); // a fused Relu
  expect_vertex_rejected(
      [&](Executable& e) {
        matmul(e, {2, 3, 4, 0, 0, 0, 2, 0, 3, 0, 2});
      },
      "fused_relu must be 0 or 1");
  expect_vertex_rejected(
      [&](Executable& e) {
        matmul(e, {2, 3, 4, 0, 0, 0, 2, 0, 3, 0, 0, 0});
      },
      "expects 10 integer");
  // A folded bias: operands A, B, bias [N], C.
  auto with_bias = [&](Executable& e, std::initializer_list<int64_t> params,
                       std::initializer_list<int64_t> bias_shape) {
    add_tensor(e, "w", fmt::FLOAT32, {4, 3});
    add_tensor(e, "out", fmt::FLOAT32, {2, 3});
    add_tensor(e, "bias", fmt::FLOAT32, bias_shape);
    replace_vertex(e, kMatMul, {0, 2, 4, 3}, params);
  };
  expect_vertex_accepted([&](Executable& e) { with_bias(e, {2, 3, 4, 0, 0, 0, 2, 0, 3, 0, 1}, {3}); });
  expect_vertex_rejected(
      [&](Executable& e) {
        with_bias(e, {2, 3, 4, 0, 0, 0, 2, 0, 3, 0}, {4});
      },
      "bias has 4 elements");
  expect_vertex_rejected(
      [&](Executable& e) {
        with_bias(e, {2, 3, 4, 0, 0, 0, 2, 0, 3, 1}, {3});
      },
      "a bias cannot be accumulated");
  expect_vertex_rejected(
      [&](Executable& e) {
        matmul(e, {2, 3, 4, 0, 0, 0, 2, 0, 3, 0});
        the_vertex(e)->set_operands(2, 1); // C = y [2,4], 8 elements, not M*N = 6
      },
      "C has 8 elements, parameters say 6");
  expect_vertex_rejected(
      [&](Executable& e) {
        add_tensor(e, "labels", fmt::INT32, {4, 3});
        matmul(e, {2, 3, 4, 0, 0, 0, 2, 0, 3, 0});
        the_vertex(e)->set_operands(1, 2);
      },
      "has dtype INT32");
}

TEST_CASE("engine load: a matmul output aliasing an input") {
  // A = x [2,4], B = square [4,4], C = x: sizes are consistent, but C overwrites A while reading it.
  auto square = [](Executable& e) { add_tensor(e, "square", fmt::FLOAT32, {4, 4}); };
  expect_vertex_accepted([&](Executable& e) {
    square(e);
    replace_vertex(e, kMatMul, {0, 2, 1}, {2, 4, 4, 0, 0, 0, 2, 0, 4, 0});
  });
  expect_vertex_rejected(
      [&](Executable& e) {
        square(e);
        replace_vertex(e, kMatMul, {0, 2, 0}, {2, 4, 4, 0, 0, 0, 2, 0, 4, 0});
      },
      "output aliases an input");
  expect_vertex_rejected(
      [&](Executable& e) {
        square(e);
        replace_vertex(e, kMatMul, {2, 2, 2}, {4, 4, 4, 0, 0, 0, 4, 0, 4, 1});
      },
      "output aliases an input");
}

TEST_CASE("engine load: the error names a later compute set and vertex") {
  Executable exe = tiny_executable();
  auto* cs = exe.add_compute_sets();
  cs->set_name("second");
  for (int i = 0; i < 3; ++i)
    *cs->add_vertices() = exe.compute_sets(0).vertices(0);
  cs->mutable_vertices(2)->set_params(2, 100);
  REQUIRE(verify_executable(exe).ok());
  auto engine = ipu::engine::Engine::create(exe, {});
  REQUIRE_FALSE(engine.ok());
  CHECK(engine.status().code() == StatusCode::kDataLoss);
  CHECK(engine.status().message().find(
            "compute set 1 'second' vertex 2: Activation vertex on tile 0: element range [0, 100)") !=
        std::string::npos);
}

} // namespace
