// The program interpreter (runtime/engine): order of steps, Repeat, host stream callbacks,
// Copy, error propagation, and bitwise-identical results for any thread count. Executables are
// built by hand (runtime tests do not link the compiler).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "runtime/base/half.h"
#include "runtime/engine/engine.h"
#include "runtime/format/codelet.h"
#include "runtime/format/host_contract.h"
#include "runtime/format/verifier.h"

namespace {

using ipu::Status;
using ipu::StatusCode;
using ipu::engine::Engine;
using ipu::engine::EngineOptions;
using ipu::engine::HostStreams;
using ipu::format::Executable;
using ipu::format::Stream;
namespace fmt = ipu::format;

constexpr uint32_t id(fmt::Codelet c) {
  return static_cast<uint32_t>(c);
}

class Builder {
public:
  explicit Builder(uint32_t tiles = 4) {
    auto* t = m_exe.mutable_target();
    t->set_arch("custom");
    t->set_num_ipus(1);
    t->set_tiles_per_ipu(tiles);
    t->set_bytes_per_tile(1 << 20);
    t->set_worker_threads_per_tile(6);
    t->set_clock_hz(1.33e9);
    m_exe.set_format_version(1);
    m_exe.set_batch_size(2);
    m_exe.set_steps_per_execution(1);
  }

  uint32_t tensor(const std::string& name, fmt::DType dtype, const std::vector<int64_t>& shape,
                  const std::vector<float>& init = {}) {
    auto* t = m_exe.add_tensors();
    t->set_name(name);
    t->set_dtype(dtype);
    uint64_t n = 1;
    for (int64_t d : shape) {
      t->add_shape(d);
      n *= static_cast<uint64_t>(d);
    }
    // Spread over the tiles in equal parts.
    const uint64_t tiles = std::min<uint64_t>(m_exe.target().tiles_per_ipu(), n);
    for (uint64_t i = 0; i < tiles; ++i) {
      auto* iv = t->add_mapping();
      iv->set_tile(static_cast<uint32_t>(i));
      iv->set_begin(n * i / tiles);
      iv->set_end(n * (i + 1) / tiles);
    }
    if (!init.empty()) t->set_initial_value(init.data(), init.size() * sizeof(float));
    return static_cast<uint32_t>(m_exe.tensors_size() - 1);
  }

  uint32_t stream(const std::string& name, Stream::Direction direction, uint32_t like) {
    auto* s = m_exe.add_streams();
    s->set_name(name);
    s->set_direction(direction);
    s->set_dtype(m_exe.tensors(static_cast<int>(like)).dtype());
    *s->mutable_shape() = m_exe.tensors(static_cast<int>(like)).shape();
    return static_cast<uint32_t>(m_exe.streams_size() - 1);
  }

  uint32_t compute_set(const std::string& name) {
    m_exe.add_compute_sets()->set_name(name);
    return static_cast<uint32_t>(m_exe.compute_sets_size() - 1);
  }

  void vertex(uint32_t cs, fmt::Codelet codelet, std::initializer_list<uint32_t> operands,
              std::initializer_list<int64_t> params, std::initializer_list<float> fparams = {},
              uint64_t cycles = 100, uint32_t tile = 0) {
    auto* v = m_exe.mutable_compute_sets(static_cast<int>(cs))->add_vertices();
    v->set_codelet(id(codelet));
    v->set_tile(tile % m_exe.target().tiles_per_ipu());
    for (uint32_t o : operands)
      v->add_operands(o);
    for (int64_t p : params)
      v->add_params(p);
    for (float f : fparams)
      v->add_fparams(f);
    v->set_cycles(cycles);
  }

  fmt::Sequence* program(const std::string& name) {
    auto* p = m_exe.add_programs();
    p->set_name(name);
    return p->mutable_program()->mutable_sequence();
  }

  Executable& exe() { return m_exe; }

private:
  Executable m_exe;
};

void stream_in(fmt::Sequence* seq, uint32_t stream, uint32_t tensor) {
  auto* st = seq->add_steps()->mutable_stream_in();
  st->set_stream(stream);
  st->set_tensor(tensor);
}
void stream_out(fmt::Sequence* seq, uint32_t stream, uint32_t tensor) {
  auto* st = seq->add_steps()->mutable_stream_out();
  st->set_stream(stream);
  st->set_tensor(tensor);
}
void execute(fmt::Sequence* seq, uint32_t cs) {
  seq->add_steps()->set_execute(cs);
}
void copy(fmt::Sequence* seq, uint32_t source, uint32_t destination) {
  auto* c = seq->add_steps()->mutable_copy();
  c->set_source(source);
  c->set_destination(destination);
}
fmt::Sequence* repeat(fmt::Sequence* seq, uint64_t count) {
  auto* r = seq->add_steps()->mutable_repeat();
  r->set_count(count);
  return r->mutable_body()->mutable_sequence();
}

std::unique_ptr<Engine> load(const Executable& exe, EngineOptions options = {}) {
  auto engine = Engine::create(exe, options);
  INFO(engine.status().message());
  REQUIRE(engine.ok());
  return std::move(*engine);
}

std::vector<float> floats(std::span<const std::byte> bytes) {
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

// Records every callback: which stream, how many bytes, and what was pushed.
struct Recorder {
  struct Event {
    bool pull;
    uint32_t stream;
    size_t bytes;
    std::vector<float> data; // pushed values, or the values supplied to a pull
  };
  std::vector<Event> events;
  // Values handed out by pulls: the n-th pull of any stream fills with `next_pull(n)`.
  std::function<std::vector<float>(size_t n, size_t count)> next_pull = [](size_t n, size_t count) {
    std::vector<float> v(count);
    for (size_t i = 0; i < count; ++i)
      v[i] = static_cast<float>(n * 10 + i) - 3.5f;
    return v;
  };
  size_t pulls = 0;

  HostStreams streams() {
    HostStreams s;
    s.pull = [this](uint32_t stream, uint32_t, std::span<std::byte> dst) -> Status {
      std::vector<float> v = next_pull(pulls++, dst.size() / sizeof(float));
      std::memcpy(dst.data(), v.data(), dst.size());
      events.push_back({true, stream, dst.size(), v});
      return Status();
    };
    s.push = [this](uint32_t stream, uint32_t, std::span<const std::byte> src) -> Status {
      events.push_back({false, stream, src.size(), floats(src)});
      return Status();
    };
    return s;
  }
};

std::vector<float> relu(std::vector<float> v) {
  for (float& x : v)
    x = x > 0 ? x : 0;
  return v;
}

// x f32[2,4] --relu--> y; z accumulates y.
struct Tiny {
  Builder b;
  uint32_t x, y, z, in, out_y, out_z, relu_cs, acc_cs;
  Tiny() {
    x = b.tensor("x", fmt::FLOAT32, {2, 4});
    y = b.tensor("y", fmt::FLOAT32, {2, 4});
    z = b.tensor("z", fmt::FLOAT32, {2, 4});
    in = b.stream("features", Stream::HOST_TO_DEVICE, x);
    out_y = b.stream("y", Stream::DEVICE_TO_HOST, y);
    out_z = b.stream("z", Stream::DEVICE_TO_HOST, z);
    relu_cs = b.compute_set("relu");
    b.vertex(relu_cs, fmt::Codelet::kActivation, {x, y}, {0, 0, 5});
    b.vertex(relu_cs, fmt::Codelet::kActivation, {x, y}, {0, 5, 8}, {}, 100, 1);
    acc_cs = b.compute_set("accumulate");
    b.vertex(acc_cs, fmt::Codelet::kAccumulate, {z, y}, {0, 8}, {});
  }
};

TEST_CASE("engine: lookups and initial values") {
  Builder b;
  const std::vector<float> init = {1, 2, 3, 4, 5, 6};
  const uint32_t w = b.tensor("w", fmt::FLOAT32, {2, 3}, init);
  const uint32_t zero = b.tensor("zero", fmt::FLOAT32, {5});
  b.stream("weights", Stream::DEVICE_TO_HOST, w);
  b.program("first");
  b.program("second");
  auto engine = load(b.exe());
  CHECK(engine->find_tensor("w") == w);
  CHECK(engine->find_tensor("zero") == zero);
  CHECK_FALSE(engine->find_tensor("nope").has_value());
  CHECK(engine->find_program("second") == 1u);
  CHECK_FALSE(engine->find_program("third").has_value());
  CHECK(engine->find_stream("weights") == 0u);
  CHECK_FALSE(engine->find_stream("features").has_value());
  CHECK(floats(engine->tensor_bytes(w)) == init);
  CHECK(floats(engine->tensor_bytes(zero)) == std::vector<float>(5, 0.0f));
  CHECK(engine->executable().tensors_size() == 2);
  HostStreams none;
  CHECK(engine->run(2, none).code() == StatusCode::kInvalidArgument);
  CHECK(engine->run(0, none).ok()); // an empty sequence
}

// The device's memory is one block (huge pages advised once, runtime/base/huge_pages.h): each
// replica's tensors still start on their own cache lines, apart, with their initial values.
TEST_CASE("engine: tensors of one memory block start on cache lines, apart, each replica its own") {
  Builder b{16}; // room for the large tensor
  b.exe().mutable_target()->set_num_ipus(2);
  b.exe().mutable_pipeline()->set_replicas(2);
  const std::vector<float> init = {1, 2, 3};
  const uint32_t odd = b.tensor("odd", fmt::FLOAT32, {3}, init);     // 12 bytes
  const uint32_t line = b.tensor("line", fmt::FLOAT32, {16});        // one whole line
  const uint32_t large = b.tensor("large", fmt::FLOAT32, {1 << 20}); // 4 MiB: huge pages
  const uint32_t last = b.tensor("last", fmt::FLOAT32, {1}, {7});
  auto engine = load(b.exe());
  std::vector<std::span<std::byte>> spans;
  for (uint32_t r = 0; r < 2; ++r) {
    for (uint32_t t : {odd, line, large, last}) {
      const std::span<std::byte> bytes = engine->tensor_bytes(t, r);
      CHECK(reinterpret_cast<uintptr_t>(bytes.data()) % 64 == 0);
      spans.push_back(bytes);
    }
    CHECK(floats(engine->tensor_bytes(odd, r)) == init);
    CHECK(floats(engine->tensor_bytes(line, r)) == std::vector<float>(16, 0.0f));
    CHECK(floats(engine->tensor_bytes(last, r)) == std::vector<float>{7});
  }
  std::sort(spans.begin(), spans.end(), [](const auto& x, const auto& y) { return x.data() < y.data(); });
  for (size_t i = 1; i < spans.size(); ++i)
    CHECK(spans[i - 1].data() + spans[i - 1].size() <= spans[i].data());
  // Writing one replica's tensor leaves the other's alone.
  engine->tensor_bytes(odd, 1)[0] = std::byte{0xff};
  CHECK(floats(engine->tensor_bytes(odd, 0)) == init);
}

TEST_CASE("engine: an executable larger than host memory is refused before allocating") {
  // Four tensors of 2^32 floats (64 GiB): each passes the verifier's per-tensor bound, spread
  // over the largest target a file may declare.
  Builder b{65536};
  b.exe().mutable_target()->set_bytes_per_tile(fmt::kMaxBytesPerTile);
  for (int i = 0; i < 4; ++i) {
    const uint32_t huge = b.tensor("huge" + std::to_string(i), fmt::FLOAT32, {65536, 65536});
    b.exe().mutable_tensors(static_cast<int>(huge))->set_role(fmt::ACTIVATION); // not resident on one tile
  }
  auto engine = Engine::create(b.exe(), EngineOptions{});
  REQUIRE_FALSE(engine.ok());
  CHECK(engine.status().code() == StatusCode::kResourceExhausted);
  CHECK(engine.status().message().find("bytes of memory; this machine has") != std::string::npos);
  CHECK(engine.status().message().find("(the largest, tensor 'huge0', 17179869184 bytes)") !=
        std::string::npos);
}

TEST_CASE("engine: steps run in program order") {
  Tiny t;
  auto* seq = t.b.program("ordered");
  stream_in(seq, t.in, t.x);
  execute(seq, t.relu_cs);
  stream_out(seq, t.out_y, t.y);
  stream_in(seq, t.in, t.x);
  stream_out(seq, t.out_y, t.y); // y not recomputed yet: still relu of the first input
  execute(seq, t.relu_cs);
  stream_out(seq, t.out_y, t.y);
  auto engine = load(t.b.exe());
  Recorder rec;
  HostStreams streams = rec.streams();
  REQUIRE(engine->run(*engine->find_program("ordered"), streams).ok());
  REQUIRE(rec.events.size() == 5);
  const bool kinds[] = {true, false, true, false, false};
  for (size_t i = 0; i < 5; ++i) {
    CAPTURE(i);
    CHECK(rec.events[i].pull == kinds[i]);
    CHECK(rec.events[i].stream == (kinds[i] ? t.in : t.out_y));
    CHECK(rec.events[i].bytes == 8 * sizeof(float));
  }
  CHECK(rec.events[1].data == relu(rec.events[0].data));
  CHECK(rec.events[3].data == relu(rec.events[0].data));
  CHECK(rec.events[4].data == relu(rec.events[2].data));
  CHECK(rec.events[0].data != rec.events[2].data);
}

TEST_CASE("engine: Repeat runs its body count times") {
  for (uint64_t count : {0u, 1u, 5u}) {
    CAPTURE(count);
    Tiny t;
    auto* seq = t.b.program("accumulate");
    auto* body = repeat(seq, count);
    stream_in(body, t.in, t.x);
    execute(body, t.relu_cs);
    execute(body, t.acc_cs);
    stream_out(body, t.out_y, t.y);
    stream_out(seq, t.out_z, t.z);
    auto engine = load(t.b.exe());
    Recorder rec;
    HostStreams streams = rec.streams();
    REQUIRE(engine->run(0, streams).ok());
    REQUIRE(rec.events.size() == 2 * count + 1);
    std::vector<float> sum(8, 0.0f);
    for (uint64_t i = 0; i < count; ++i) {
      CHECK(rec.events[2 * i].pull);
      CHECK(rec.events[2 * i].stream == t.in);
      CHECK_FALSE(rec.events[2 * i + 1].pull);
      CHECK(rec.events[2 * i + 1].stream == t.out_y);
      const auto r = relu(rec.events[2 * i].data);
      CHECK(rec.events[2 * i + 1].data == r);
      for (size_t k = 0; k < 8; ++k)
        sum[k] += r[k];
    }
    CHECK(rec.events.back().stream == t.out_z);
    CHECK(rec.events.back().data == sum);
    // State persists across runs: a second run accumulates on top.
    REQUIRE(engine->run(0, streams).ok());
    CHECK(rec.events.size() == 4 * count + 2);
  }
}

TEST_CASE("engine: a Conditional runs one side by the first element of its condition") {
  for (float first : {0.0f, 2.0f}) {
    CAPTURE(first);
    Tiny t;
    auto* seq = t.b.program("branch");
    stream_in(seq, t.in, t.x);
    auto* c = seq->add_steps()->mutable_conditional();
    c->set_condition(t.x);
    execute(c->mutable_then_body()->mutable_sequence(), t.relu_cs);
    execute(c->mutable_else_body()->mutable_sequence(), t.acc_cs); // z += y (zero)
    stream_out(seq, t.out_y, t.y);
    auto engine = load(t.b.exe());
    Recorder rec;
    rec.next_pull = [first](size_t, size_t count) {
      std::vector<float> v(count, 1.5f);
      v[0] = first;
      return v;
    };
    HostStreams streams = rec.streams();
    REQUIRE(engine->run(*engine->find_program("branch"), streams).ok());
    REQUIRE(rec.events.size() == 2);
    // Taken: y = relu(x); not: y as it started, zeros.
    CHECK(rec.events[1].data == (first != 0.0f ? relu(rec.events[0].data) : std::vector<float>(8, 0.0f)));
  }
}

TEST_CASE("engine: nested repeats multiply") {
  Tiny t;
  auto* seq = t.b.program("nested");
  auto* inner = repeat(repeat(seq, 3), 4);
  stream_out(inner, t.out_y, t.y);
  auto engine = load(t.b.exe());
  Recorder rec;
  HostStreams streams = rec.streams();
  REQUIRE(engine->run(0, streams).ok());
  CHECK(rec.events.size() == 12);
}

TEST_CASE("engine: stream callbacks receive the right stream indices and sizes") {
  Builder b;
  const uint32_t big = b.tensor("big", fmt::FLOAT32, {3, 5, 2});
  const uint32_t labels = b.tensor("labels", fmt::INT32, {7});
  const uint32_t scalar = b.tensor("scalar", fmt::FLOAT32, {});
  const uint32_t s_labels = b.stream("labels", Stream::HOST_TO_DEVICE, labels);
  const uint32_t s_big_in = b.stream("big_in", Stream::HOST_TO_DEVICE, big);
  const uint32_t s_scalar = b.stream("scalar", Stream::DEVICE_TO_HOST, scalar);
  const uint32_t s_big_out = b.stream("big_out", Stream::DEVICE_TO_HOST, big);
  auto* seq = b.program("io");
  stream_in(seq, s_big_in, big);
  stream_in(seq, s_labels, labels);
  stream_out(seq, s_scalar, scalar);
  stream_out(seq, s_big_out, big);
  auto engine = load(b.exe());

  std::vector<std::pair<uint32_t, size_t>> calls;
  std::vector<std::byte> big_payload(30 * sizeof(float));
  for (size_t i = 0; i < big_payload.size(); ++i)
    big_payload[i] = static_cast<std::byte>(i * 3 + 1);
  std::vector<std::byte> pushed;
  HostStreams streams;
  streams.pull = [&](uint32_t stream, uint32_t, std::span<std::byte> dst) -> Status {
    calls.emplace_back(stream, dst.size());
    if (stream == s_big_in)
      std::memcpy(dst.data(), big_payload.data(), std::min(dst.size(), big_payload.size()));
    return Status();
  };
  streams.push = [&](uint32_t stream, uint32_t, std::span<const std::byte> src) -> Status {
    calls.emplace_back(stream, src.size());
    if (stream == s_big_out) pushed.assign(src.begin(), src.end());
    return Status();
  };
  REQUIRE(engine->run(0, streams).ok());
  const std::vector<std::pair<uint32_t, size_t>> want = {
      {s_big_in, 30 * 4}, {s_labels, 7 * 4}, {s_scalar, 4}, {s_big_out, 30 * 4}};
  CHECK(calls == want);
  CHECK(pushed == big_payload);
}

TEST_CASE("engine: a stream-out without a push callback is skipped; a stream-in without pull fails") {
  Tiny t;
  auto* out_only = t.b.program("out_only");
  stream_out(out_only, t.out_y, t.y);
  auto* in = t.b.program("in");
  stream_in(in, t.in, t.x);
  auto engine = load(t.b.exe());
  HostStreams none;
  CHECK(engine->run(0, none).ok());
  Status s = engine->run(1, none);
  CHECK(s.code() == StatusCode::kFailedPrecondition);
  CHECK(s.message().find("stream 0") != std::string::npos);
}

TEST_CASE("engine: Copy moves whole tensors, including across shapes of equal size") {
  Builder b;
  const std::vector<float> init = {1, -2, 3, -4, 5, -6};
  const uint32_t src = b.tensor("src", fmt::FLOAT32, {2, 3}, init);
  const uint32_t dst = b.tensor("dst", fmt::FLOAT32, {2, 3});
  const uint32_t flat = b.tensor("flat", fmt::FLOAT32, {6}, std::vector<float>(6, 9.0f));
  const uint32_t out = b.stream("out", Stream::DEVICE_TO_HOST, dst);
  auto* seq = b.program("copy");
  stream_out(seq, out, dst);
  copy(seq, src, dst);
  stream_out(seq, out, dst);
  copy(seq, flat, src);
  copy(seq, src, flat); // flat keeps 9s: src was overwritten with them first
  auto engine = load(b.exe());
  Recorder rec;
  HostStreams streams = rec.streams();
  REQUIRE(engine->run(0, streams).ok());
  REQUIRE(rec.events.size() == 2);
  CHECK(rec.events[0].data == std::vector<float>(6, 0.0f));
  CHECK(rec.events[1].data == init);
  CHECK(floats(engine->tensor_bytes(src)) == std::vector<float>(6, 9.0f));
  CHECK(floats(engine->tensor_bytes(flat)) == std::vector<float>(6, 9.0f));
  CHECK(floats(engine->tensor_bytes(dst)) == init);
}

TEST_CASE("engine: an error from a pull callback propagates and stops the program") {
  Tiny t;
  auto* seq = t.b.program("train");
  auto* body = repeat(seq, 10);
  stream_in(body, t.in, t.x);
  execute(body, t.relu_cs);
  stream_out(body, t.out_y, t.y);
  stream_out(seq, t.out_z, t.z);
  auto engine = load(t.b.exe());

  int pulls = 0, pushes = 0;
  HostStreams streams;
  streams.pull = [&](uint32_t, uint32_t, std::span<std::byte> dst) -> Status {
    if (++pulls == 3) return ipu::io_error("features.npy: read failed");
    std::vector<float> ones(dst.size() / sizeof(float), 1.0f);
    std::memcpy(dst.data(), ones.data(), dst.size());
    return Status();
  };
  streams.push = [&](uint32_t, uint32_t, std::span<const std::byte>) -> Status {
    ++pushes;
    return Status();
  };
  Status s = engine->run(0, streams);
  CHECK(s.code() == StatusCode::kIoError);
  CHECK(s.message() == "features.npy: read failed");
  CHECK(pulls == 3);
  CHECK(pushes == 2); // the failing iteration pushes nothing, and the final stream-out never runs

  SUBCASE("so does an error from a push callback") {
    pulls = pushes = 0;
    streams.pull = [&](uint32_t, uint32_t, std::span<std::byte>) -> Status {
      ++pulls;
      return Status();
    };
    streams.push = [&](uint32_t, uint32_t, std::span<const std::byte>) -> Status {
      return ++pushes == 2 ? ipu::resource_exhausted("host buffer full") : Status();
    };
    Status p = engine->run(0, streams);
    CHECK(p.code() == StatusCode::kResourceExhausted);
    CHECK(p.message() == "host buffer full");
    CHECK(pulls == 2);
    CHECK(pushes == 2);
  }
}

// A workload big enough to run in parallel: a 64x48 by 48x40 matmul in 40 blocks, a softmax of
// its rows in 64 vertices and a tanh in 80, each compute set well above the engine's
// parallelism threshold.
Executable parallel_workload() {
  Builder b(16);
  const int64_t M = 64, K = 48, N = 40;
  std::vector<float> a(M * K), w(K * N);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = std::sin(0.37f * static_cast<float>(i));
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = std::cos(0.11f * static_cast<float>(i)) * 0.3f;
  const uint32_t ta = b.tensor("a", fmt::FLOAT32, {M, K}, a);
  const uint32_t tw = b.tensor("w", fmt::FLOAT32, {K, N}, w);
  const uint32_t tc = b.tensor("c", fmt::FLOAT32, {M, N});
  const uint32_t ts = b.tensor("s", fmt::FLOAT32, {M, N});
  const uint32_t tt = b.tensor("t", fmt::FLOAT32, {M, N});
  const uint32_t out = b.stream("out", Stream::DEVICE_TO_HOST, ts);
  const uint32_t in = b.stream("in", Stream::HOST_TO_DEVICE, ta);
  const uint32_t mm = b.compute_set("matmul");
  uint32_t tile = 0;
  for (int64_t r = 0; r < M; r += 8) {
    for (int64_t c = 0; c < N; c += 8) {
      b.vertex(mm, fmt::Codelet::kMatMul, {ta, tw, tc}, {M, N, K, 0, 0, r, r + 8, c, c + 8, 0}, {}, 3000,
               tile++);
    }
  }
  const uint32_t sm = b.compute_set("softmax");
  for (int64_t r = 0; r < M; ++r)
    b.vertex(sm, fmt::Codelet::kSoftmax, {tc, ts}, {M, N, r, r + 1}, {}, 1000, tile++);
  const uint32_t th = b.compute_set("tanh");
  for (int64_t i = 0; i < 80; ++i) {
    b.vertex(th, fmt::Codelet::kActivation, {tc, tt}, {2, i * 32, (i + 1) * 32}, {}, 500, tile++);
  }
  auto* seq = b.program("run");
  auto* body = repeat(seq, 3);
  execute(body, mm);
  execute(body, sm);
  execute(body, th);
  stream_out(body, out, ts);
  stream_in(body, in, ta); // the next iteration multiplies a perturbed input
  return b.exe();
}

std::vector<std::vector<float>> run_workload(int threads) {
  auto engine = load(parallel_workload(), EngineOptions{threads, nullptr, {}});
  std::vector<std::vector<float>> outputs;
  HostStreams streams;
  int step = 0;
  streams.pull = [&](uint32_t, uint32_t, std::span<std::byte> dst) -> Status {
    std::vector<float> v(dst.size() / sizeof(float));
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = std::sin(0.01f * static_cast<float>(i) + static_cast<float>(step));
    ++step;
    std::memcpy(dst.data(), v.data(), dst.size());
    return Status();
  };
  streams.push = [&](uint32_t, uint32_t, std::span<const std::byte> src) -> Status {
    outputs.push_back(floats(src));
    return Status();
  };
  REQUIRE(engine->run(0, streams).ok());
  outputs.push_back(floats(engine->tensor_bytes(*engine->find_tensor("c"))));
  outputs.push_back(floats(engine->tensor_bytes(*engine->find_tensor("t"))));
  return outputs;
}

bool all_bitwise_equal(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].size() != b[i].size() || std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(float)) != 0)
      return false;
  }
  return true;
}

TEST_CASE("engine: results are bitwise identical with 1 and 2 threads") {
  const auto one = run_workload(1);
  REQUIRE(one.size() == 5);
  // Sanity: the softmax rows sum to one and the matmul is right at one spot.
  for (size_t r = 0; r < 64; ++r) {
    double sum = 0;
    for (size_t c = 0; c < 40; ++c)
      sum += one[0][r * 40 + c];
    CHECK(std::abs(sum - 1.0) < 1e-4);
  }
  {
    // The first iteration's softmax of row 0, against a double-precision reference of a . w.
    const Executable exe = parallel_workload();
    const std::string& abytes = exe.tensors(0).initial_value();
    const std::string& wbytes = exe.tensors(1).initial_value();
    std::vector<float> a(abytes.size() / 4), w(wbytes.size() / 4);
    std::memcpy(a.data(), abytes.data(), abytes.size());
    std::memcpy(w.data(), wbytes.data(), wbytes.size());
    std::vector<double> row(40);
    double max = -1e300, sum = 0;
    for (size_t c = 0; c < 40; ++c) {
      for (size_t k = 0; k < 48; ++k)
        row[c] += static_cast<double>(a[k]) * w[k * 40 + c];
      max = std::max(max, row[c]);
    }
    for (double v : row)
      sum += std::exp(v - max);
    for (size_t c = 0; c < 40; ++c)
      CHECK(std::abs(one[0][c] - std::exp(row[c] - max) / sum) < 1e-5);
    CHECK(one[3].size() == 64 * 40);
  }
  for (int threads : {2, 0}) {
    CAPTURE(threads);
    for (int attempt = 0; attempt < 3; ++attempt)
      CHECK(all_bitwise_equal(run_workload(threads), one));
  }
}

} // namespace

namespace {

TEST_CASE("engine: replicas pull their own data and an all-reduce leaves every replica with the mean") {
  Tiny t;
  t.b.exe().mutable_target()->set_num_ipus(2);
  t.b.exe().mutable_pipeline()->set_replicas(2);
  auto* main = t.b.program("main");
  stream_in(main, t.in, t.x);
  execute(main, t.relu_cs);
  main->add_steps()->mutable_all_reduce()->add_tensors(t.y);
  stream_out(main, t.out_y, t.y);
  auto engine = load(t.b.exe());
  REQUIRE(engine->replicas() == 2);

  std::vector<std::vector<float>> pulled(2), pushed(2);
  HostStreams streams;
  streams.pull = [&](uint32_t, uint32_t replica, std::span<std::byte> dst) -> Status {
    std::vector<float> v(dst.size() / sizeof(float));
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = static_cast<float>(replica * 8 + i) - 6.0f;
    pulled[replica] = v;
    std::memcpy(dst.data(), v.data(), dst.size());
    return Status();
  };
  streams.push = [&](uint32_t, uint32_t replica, std::span<const std::byte> src) -> Status {
    pushed[replica] = floats(src);
    return Status();
  };
  REQUIRE(engine->run(*engine->find_program("main"), streams).ok());
  const std::vector<float> a = relu(pulled[0]), b = relu(pulled[1]);
  for (uint32_t r = 0; r < 2; ++r) {
    REQUIRE(pushed[r].size() == 8);
    for (size_t i = 0; i < 8; ++i)
      CHECK(pushed[r][i] == (a[i] + b[i]) * 0.5f);
  }
}

// Under fp16 and mixed training the gradients cross the links in binary16: each replica's values
// round before the sum, and the mean after. Values between binary16 neighbours show it: 1 + 2^-12
// rounds to 1 on the way out (fp32 would keep it).
TEST_CASE("engine: an all-reduce in binary16 on the links rounds each replica's values and the mean") {
  for (bool half_wire : {false, true}) {
    CAPTURE(half_wire);
    Tiny t;
    t.b.exe().mutable_target()->set_num_ipus(2);
    t.b.exe().mutable_pipeline()->set_replicas(2);
    auto* main = t.b.program("main");
    stream_in(main, t.in, t.x);
    execute(main, t.relu_cs);
    auto* all_reduce = main->add_steps()->mutable_all_reduce();
    all_reduce->add_tensors(t.y);
    if (half_wire) all_reduce->set_wire_dtype(fmt::FLOAT16);
    stream_out(main, t.out_y, t.y);
    auto engine = load(t.b.exe());
    const float fine = 1.0f + std::ldexp(1.0f, -12), coarse = 3.0f + std::ldexp(1.0f, -10);
    std::vector<std::vector<float>> pushed(2);
    HostStreams streams;
    streams.pull = [&](uint32_t, uint32_t replica, std::span<std::byte> dst) -> Status {
      std::vector<float> v(dst.size() / sizeof(float), replica == 0 ? fine : coarse);
      std::memcpy(dst.data(), v.data(), dst.size());
      return Status();
    };
    streams.push = [&](uint32_t, uint32_t replica, std::span<const std::byte> src) -> Status {
      pushed[replica] = floats(src);
      return Status();
    };
    REQUIRE(engine->run(*engine->find_program("main"), streams).ok());
    // binary16: 1 + 2^-12 → 1, 3 + 2^-10 → 3 (ties to even; its spacing there is 2^-9): the mean 2.
    const float want = half_wire ? 2.0f : (fine + coarse) * 0.5f;
    for (uint32_t r = 0; r < 2; ++r) {
      REQUIRE(pushed[r].size() == 8);
      for (float v : pushed[r])
        CHECK(v == want);
    }
  }
}

TEST_CASE("engine: parallel branches run on their own tensors") {
  Builder b;
  const uint32_t x1 = b.tensor("x1", fmt::FLOAT32, {8}, {-1, 2, -3, 4, -5, 6, -7, 8});
  const uint32_t y1 = b.tensor("y1", fmt::FLOAT32, {8});
  const uint32_t x2 = b.tensor("x2", fmt::FLOAT32, {8}, {1, -2, 3, -4, 5, -6, 7, -8});
  const uint32_t y2 = b.tensor("y2", fmt::FLOAT32, {8});
  const uint32_t cs1 = b.compute_set("stage0"), cs2 = b.compute_set("stage1");
  b.vertex(cs1, fmt::Codelet::kActivation, {x1, y1}, {0, 0, 8});
  b.vertex(cs2, fmt::Codelet::kActivation, {x2, y2}, {0, 0, 8});
  auto* main = b.program("main");
  auto* parallel = main->add_steps()->mutable_parallel();
  parallel->add_branches()->set_execute(cs1);
  parallel->add_branches()->set_execute(cs2);
  auto engine = load(b.exe());
  HostStreams none;
  REQUIRE(engine->run(*engine->find_program("main"), none).ok());
  CHECK(floats(engine->tensor_bytes(y1)) == std::vector<float>{0, 2, 0, 4, 0, 6, 0, 8});
  CHECK(floats(engine->tensor_bytes(y2)) == std::vector<float>{1, 0, 3, 0, 5, 0, 7, 0});

  SUBCASE("branches that share a tensor are refused") {
    Executable bad = b.exe();
    auto* branch =
        bad.mutable_programs(0)->mutable_program()->mutable_sequence()->mutable_steps(0)->mutable_parallel();
    auto* c = branch->add_branches()->mutable_copy();
    c->set_source(x1);
    c->set_destination(x2);
    auto refused = Engine::create(bad, {});
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().message().find("parallel branches share") != std::string::npos);
  }
  SUBCASE("a host transfer inside a branch is refused") {
    Executable bad = b.exe();
    const uint32_t in = static_cast<uint32_t>(bad.streams_size());
    auto* s = bad.add_streams();
    s->set_name("features");
    s->set_direction(Stream::HOST_TO_DEVICE);
    s->set_dtype(fmt::FLOAT32);
    s->add_shape(8);
    auto* branch =
        bad.mutable_programs(0)->mutable_program()->mutable_sequence()->mutable_steps(0)->mutable_parallel();
    auto* st = branch->mutable_branches(0)->mutable_stream_in();
    st->set_stream(in);
    st->set_tensor(x1);
    auto refused = Engine::create(bad, {});
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().message().find("may only execute compute sets and copy tensors") !=
          std::string::npos);
  }
}

} // namespace

namespace {

// Gather of a table [n = 8, inner = 64] by 16 indices streamed in, one vertex per index, heavy
// enough that the set runs in parallel, in several host tasks.
struct GatherFaults {
  Builder b{16};
  uint32_t cs = 0;
  GatherFaults() {
    std::vector<float> table(8 * 64);
    for (size_t i = 0; i < table.size(); ++i)
      table[i] = static_cast<float>(i);
    const uint32_t x = b.tensor("table", fmt::FLOAT32, {8, 64}, table);
    const uint32_t idx = b.tensor("indices", fmt::FLOAT32, {16});
    const uint32_t y = b.tensor("rows", fmt::FLOAT32, {16, 64});
    const uint32_t in = b.stream("features", Stream::HOST_TO_DEVICE, idx);
    const uint32_t out = b.stream("predictions", Stream::DEVICE_TO_HOST, y);
    cs = b.compute_set("forward/0/0");
    for (int64_t j = 0; j < 16; ++j) {
      b.vertex(cs, fmt::Codelet::kGather, {x, idx, y}, {1, 8, 64, 16, j, j + 1, 0, 64}, {}, 30000,
               static_cast<uint32_t>(j));
    }
    auto* seq = b.program("predict");
    stream_in(seq, in, idx);
    execute(seq, cs);
    stream_out(seq, out, y);
  }
  void name_ops() { b.exe().mutable_compute_sets(static_cast<int>(cs))->add_ops("Gather_3"); }
};

// Runs `engine`'s only program with indices `make(replica)`, counting pushes.
Status run_gather(Engine& engine, const std::function<std::vector<float>(uint32_t)>& make, int& pushes) {
  HostStreams streams;
  streams.pull = [&](uint32_t, uint32_t replica, std::span<std::byte> dst) -> Status {
    const std::vector<float> v = make(replica);
    std::memcpy(dst.data(), v.data(), dst.size());
    return Status();
  };
  streams.push = [&](uint32_t, uint32_t, std::span<const std::byte>) -> Status {
    ++pushes;
    return Status();
  };
  return engine.run(0, streams);
}

std::vector<float> valid_indices(uint32_t = 0) {
  std::vector<float> v(16);
  for (size_t j = 0; j < v.size(); ++j)
    v[j] = static_cast<float>(j % 16) - 8.0f;
  return v;
}

TEST_CASE("engine: a kernel fault stops the run with the lowest faulting vertex, for any thread count") {
  GatherFaults g;
  g.name_ops();
  auto bad = [](uint32_t) {
    std::vector<float> v = valid_indices();
    v[5] = 50;  // vertex 5
    v[11] = -9; // vertex 11, which a second thread may well reach first
    v[14] = 8;
    return v;
  };
  for (int threads : {1, 2, 0}) {
    CAPTURE(threads);
    auto engine = load(g.b.exe(), EngineOptions{threads, nullptr, {}});
    for (int attempt = 0; attempt < 5; ++attempt) {
      int pushes = 0;
      const Status s = run_gather(*engine, bad, pushes);
      CHECK(s.code() == StatusCode::kOutOfRange);
      CHECK(
          s.message() ==
          "node 'Gather_3' (Gather in compute set 'forward/0/0'): index 50 at indices[5] is outside [-8, 8)");
      CHECK(pushes == 0); // nothing after the faulting compute set runs
    }
    // The engine is left clean: a run with valid data succeeds.
    int pushes = 0;
    CHECK(run_gather(*engine, valid_indices, pushes).ok());
    CHECK(pushes == 1);
  }
}

TEST_CASE("engine: a fault without op names names the compute set, and the replica when there are several") {
  GatherFaults g;
  int pushes = 0;
  auto bad_in_replica_1 = [](uint32_t replica) {
    std::vector<float> v = valid_indices();
    if (replica == 1) v[2] = 1e30f;
    return v;
  };
  Status s = run_gather(
      *load(g.b.exe()), [&](uint32_t) { return bad_in_replica_1(1); }, pushes);
  CHECK(s.message() == "Gather in compute set 'forward/0/0': index 1e+30 at indices[2] is outside [-8, 8)");

  g.b.exe().mutable_target()->set_num_ipus(2);
  g.b.exe().mutable_pipeline()->set_replicas(2);
  s = run_gather(*load(g.b.exe()), bad_in_replica_1, pushes);
  CHECK(s.message() ==
        "Gather in compute set 'forward/0/0', replica 1: index 1e+30 at indices[2] is outside [-8, 8)");
  CHECK(pushes == 0);
}

} // namespace

namespace {

// x --relu--> y; z += y; mask += y, where the mask starts at -inf (an attention mask's kind of
// constant: non-finite by design).
struct Overflowing {
  Builder b;
  uint32_t x, y, z, mask;
  Overflowing() {
    x = b.tensor("x", fmt::FLOAT32, {8});
    y = b.tensor("y", fmt::FLOAT32, {8});
    z = b.tensor("z", fmt::FLOAT32, {8});
    mask = b.tensor("mask", fmt::FLOAT32, {8}, std::vector<float>(8, -INFINITY));
    const uint32_t in = b.stream("features", Stream::HOST_TO_DEVICE, x);
    const uint32_t relu_cs = b.compute_set("relu");
    b.vertex(relu_cs, fmt::Codelet::kActivation, {x, y}, {0, 0, 8});
    const uint32_t acc_cs = b.compute_set("accumulate");
    b.vertex(acc_cs, fmt::Codelet::kAccumulate, {mask, y}, {0, 8});
    b.vertex(acc_cs, fmt::Codelet::kAccumulate, {z, y}, {0, 8});
    b.exe().mutable_compute_sets(static_cast<int>(acc_cs))->add_ops("z/accumulate");
    auto* seq = b.program("train");
    stream_in(seq, in, x);
    execute(seq, relu_cs);
    execute(seq, acc_cs);
  }
};

Status run_with(Engine& engine, float x3) {
  HostStreams streams;
  streams.pull = [&](uint32_t, uint32_t, std::span<std::byte> dst) -> Status {
    std::vector<float> v(8, 1.0f);
    v[3] = x3;
    std::memcpy(dst.data(), v.data(), dst.size());
    return Status();
  };
  return engine.run(0, streams);
}

} // namespace

TEST_CASE("engine: the finite check names the first tensor a compute set made non-finite") {
  Overflowing o;
  SUBCASE("off, an overflow goes unnoticed") {
    auto engine = load(o.b.exe());
    CHECK(run_with(*engine, 3e38f).ok());
    CHECK(run_with(*engine, 3e38f).ok());
    CHECK(std::isinf(floats(engine->tensor_bytes(o.z))[3]));
  }
  SUBCASE("on, it stops the run at the overflow, not at the -inf the mask held from the start") {
    auto engine = load(o.b.exe());
    engine->set_finite_check(true);
    CHECK(run_with(*engine, 3e38f).ok()); // z[3] = 3e38: finite
    const Status s = run_with(*engine, 3e38f);
    CHECK(s.code() == StatusCode::kNonFinite);
    CHECK(s.message() == "tensor 'z' went non-finite in compute set 'accumulate' (node 'z/accumulate', "
                         "Accumulate): inf at element 3");
    // Reset to its initial value, z is finite again, and a later run with the check off is not checked.
    engine->reset_tensor(o.z);
    CHECK(floats(engine->tensor_bytes(o.z)) == std::vector<float>(8, 0.0f));
    CHECK(floats(engine->tensor_bytes(o.mask)) == std::vector<float>(8, -INFINITY));
    engine->set_finite_check(false);
    CHECK(run_with(*engine, NAN).ok());
  }
}

namespace {

// x (FLOAT32, streamed in) → tanh → y32 (FLOAT32) and y16 (FLOAT16, rounded as written), over
// 24 vertices on 4 tiles; w16 (FLOAT16) starts from a binary16 initial value.
struct HalfGraph {
  Builder b;
  uint32_t x = 0, y32 = 0, y16 = 0, w16 = 0, in = 0, in16 = 0;
  static constexpr int64_t kN = 24 * 4096;
  HalfGraph() {
    x = b.tensor("x", fmt::FLOAT32, {kN});
    y32 = b.tensor("y32", fmt::FLOAT32, {kN});
    y16 = b.tensor("y16", fmt::FLOAT16, {kN});
    w16 = b.tensor("w16", fmt::FLOAT16, {2});
    const std::vector<uint16_t> w_bits = {0x3c00, 0xc500}; // 1, -5
    b.exe().mutable_tensors(static_cast<int>(w16))->set_initial_value(w_bits.data(), 4);
    in = b.stream("x", Stream::HOST_TO_DEVICE, x);
    in16 = b.stream("w16", Stream::HOST_TO_DEVICE, w16);
    const uint32_t cs = b.compute_set("tanh");
    const auto tanh = static_cast<int64_t>(fmt::ActivationKind::kTanh);
    for (int64_t i = 0; i < 24; ++i) {
      b.vertex(cs, fmt::Codelet::kActivation, {x, y32}, {tanh, i * 4096, (i + 1) * 4096}, {}, 50000,
               static_cast<uint32_t>(i));
      b.vertex(cs, fmt::Codelet::kActivation, {x, y16}, {tanh, i * 4096, (i + 1) * 4096}, {}, 50000,
               static_cast<uint32_t>(i));
    }
    auto* range = b.exe().mutable_compute_sets(static_cast<int>(cs))->add_rounded();
    range->set_tensor(y16);
    range->set_begin(0);
    range->set_end(kN);
    auto* seq = b.program("run");
    stream_in(seq, in, x);
    execute(seq, cs);
    auto* load_w = b.program("load_w");
    stream_in(load_w, in16, w16);
  }
};

HostStreams feed_x() {
  HostStreams streams;
  streams.pull = [](uint32_t, uint32_t, std::span<std::byte> dst) -> Status {
    std::vector<float> v(dst.size() / sizeof(float));
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = std::sin(0.37f * static_cast<float>(i)) * 1.7f;
    std::memcpy(dst.data(), v.data(), dst.size());
    return Status();
  };
  return streams;
}

std::vector<float> run_half(ipu::engine::RoundingOptions rounding, int threads) {
  HalfGraph g;
  auto engine = load(g.b.exe(), EngineOptions{threads, nullptr, rounding});
  HostStreams streams = feed_x();
  REQUIRE(engine->run(*engine->find_program("run"), streams).ok());
  return floats(engine->tensor_bytes(g.y16));
}

} // namespace

TEST_CASE("engine: a FLOAT16 tensor holds binary16 values, rounded to nearest as written") {
  HalfGraph g;
  CHECK(ipu::format::dtype_size(fmt::FLOAT16) == 2);
  CHECK(ipu::format::host_element_size(fmt::FLOAT16) == 4);
  auto engine = load(g.b.exe());
  CHECK(engine->tensor_bytes(g.y16).size() == HalfGraph::kN * sizeof(float));
  CHECK(floats(engine->tensor_bytes(g.w16)) == std::vector<float>{1.0f, -5.0f}); // decoded
  HostStreams streams = feed_x();
  REQUIRE(engine->run(*engine->find_program("run"), streams).ok());
  const std::vector<float> y32 = floats(engine->tensor_bytes(g.y32));
  const std::vector<float> y16 = floats(engine->tensor_bytes(g.y16));
  int changed = 0;
  for (size_t i = 0; i < y16.size(); ++i) {
    REQUIRE(y16[i] == ipu::round_to_half(y32[i]));
    changed += y16[i] != y32[i] ? 1 : 0;
  }
  CHECK(changed > HalfGraph::kN / 2); // tanh of most inputs is no binary16 value

  // What the host streams into a FLOAT16 tensor arrives rounded.
  HostStreams w_streams;
  w_streams.pull = [](uint32_t, uint32_t, std::span<std::byte> dst) -> Status {
    const std::vector<float> w = {0.1f, 70000.0f};
    std::memcpy(dst.data(), w.data(), dst.size());
    return Status();
  };
  REQUIRE(engine->run(*engine->find_program("load_w"), w_streams).ok());
  CHECK(floats(engine->tensor_bytes(g.w16)) == std::vector<float>{0.0999755859375f, INFINITY});
}

TEST_CASE(
    "engine: stochastic rounding is unbiased, reproducible for a seed, and the same for any --threads") {
  const std::vector<float> nearest = run_half({}, 1);
  const std::vector<float> one = run_half({true, 42}, 1);
  CHECK(one == run_half({true, 42}, 4));
  CHECK(one == run_half({true, 42}, 0));
  CHECK(one != run_half({true, 43}, 1));
  CHECK(one != nearest);
  // Each element is one of the binary16 neighbours of the fp32 tanh, and the mean error is much
  // smaller than nearest rounding's worst case would allow.
  HalfGraph g;
  auto engine = load(g.b.exe());
  HostStreams streams = feed_x();
  REQUIRE(engine->run(*engine->find_program("run"), streams).ok());
  const std::vector<float> y32 = floats(engine->tensor_bytes(g.y32));
  double error = 0, spread = 0;
  for (size_t i = 0; i < one.size(); ++i) {
    REQUIRE(ipu::round_to_half(one[i]) == one[i]);
    REQUIRE(std::abs(one[i] - y32[i]) < std::ldexp(1.0f, -10)); // within one ulp of [0.5, 1)
    error += static_cast<double>(one[i]) - y32[i];
    spread += std::abs(static_cast<double>(one[i]) - y32[i]);
  }
  CHECK(std::abs(error) < 0.05 * spread);
}

TEST_CASE("verifier: a compute set rounds only FLOAT16 tensors its vertices touch, in order and in range") {
  HalfGraph g;
  auto* cs = g.b.exe().mutable_compute_sets(0);
  SUBCASE("a FLOAT32 tensor") {
    cs->mutable_rounded(0)->set_tensor(g.y32);
    CHECK(ipu::format::verify_executable(g.b.exe()).message() ==
          "compute set 0 'tanh': rounded range of tensor 1 [0, 98304) names a tensor that is not FLOAT16");
  }
  SUBCASE("a tensor it does not touch") {
    cs->mutable_rounded(0)->set_tensor(g.w16);
    CHECK(ipu::format::verify_executable(g.b.exe()).message() ==
          "compute set 0 'tanh': rounded range of tensor 3 [0, 98304) names a tensor none of its vertices "
          "touches");
  }
  SUBCASE("past the end") {
    cs->mutable_rounded(0)->set_end(HalfGraph::kN + 1);
    CHECK(ipu::format::verify_executable(g.b.exe()).code() == StatusCode::kDataLoss);
  }
  SUBCASE("overlapping") {
    cs->mutable_rounded(0)->set_end(10);
    auto* second = cs->add_rounded();
    second->set_tensor(g.y16);
    second->set_begin(5);
    second->set_end(20);
    CHECK(
        ipu::format::verify_executable(g.b.exe()).message() ==
        "compute set 0 'tanh': rounded range of tensor 2 [5, 20) is out of order or overlaps the one before");
  }
}
