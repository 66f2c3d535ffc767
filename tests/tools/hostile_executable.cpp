// hostile_executable MUTATION IN OUT: decodes the executable IN, changes what MUTATION names, and
// writes it to OUT as a valid frame (correct checksum), as an attacker who can write a file, a
// cache entry or a remote cache's response would. The mutations are issue 12's findings; each
// one crashed ipurun, disclosed heap memory, or ran without bound before the verifier learnt the
// host's contract. `hostile_executable --list` prints their names; `--payload IN OUT` writes
// IN's message without its frame, weights or ONNX source (fuzz_executable's seeds), and
// `--codelets IN` the codelet ids its vertices use. Used by
// tests/e2e/test_hostile_executables.sh and tests/fuzz/make_executable_corpus.sh. Exits 0, or 2
// on bad usage or an executable the mutation does not apply to.
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "runtime/base/file_io.h"
#include "runtime/format/executable_file.h"
#include "runtime/format/executable_summary.h"
#include "runtime/format/host_contract.h"

namespace {

using ipu::format::Executable;
using ipu::format::Program;
namespace fmt = ipu::format;

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "hostile_executable: %s\n", message.c_str());
  std::exit(2);
}

int find_stream(const Executable& exe, std::string_view name) {
  for (int i = 0; i < exe.streams_size(); ++i) {
    if (exe.streams(i).name() == name) return i;
  }
  die("the executable has no stream '" + std::string(name) + "'");
}

Program& program(Executable& exe, std::string_view name) {
  for (auto& p : *exe.mutable_programs()) {
    if (p.name() == name) return *p.mutable_program();
  }
  die("the executable has no program '" + std::string(name) + "'");
}

// The body of a data program: Repeat(S) { steps }.
fmt::Sequence& step_body(Executable& exe, std::string_view name) {
  Program& p = program(exe, name);
  if (!p.has_repeat() || !p.repeat().body().has_sequence())
    die("program '" + std::string(name) + "' is not Repeat { Sequence }");
  return *p.mutable_repeat()->mutable_body()->mutable_sequence();
}

uint32_t stream_tensor(Executable& exe, std::string_view program_name, int stream) {
  for (const Program& step : step_body(exe, program_name).steps()) {
    if (step.has_stream_in() && step.stream_in().stream() == static_cast<uint32_t>(stream))
      return step.stream_in().tensor();
    if (step.has_stream_out() && step.stream_out().stream() == static_cast<uint32_t>(stream))
      return step.stream_out().tensor();
  }
  die("program '" + std::string(program_name) + "' does not move stream " + std::to_string(stream));
}

// Every transfer of `stream` in `program` moves `tensor` instead.
void retarget_transfers(Program& program, uint32_t stream, uint32_t tensor) {
  if (program.has_stream_in() && program.stream_in().stream() == stream)
    program.mutable_stream_in()->set_tensor(tensor);
  if (program.has_stream_out() && program.stream_out().stream() == stream)
    program.mutable_stream_out()->set_tensor(tensor);
  if (program.has_repeat()) retarget_transfers(*program.mutable_repeat()->mutable_body(), stream, tensor);
  if (program.has_sequence()) {
    for (auto& step : *program.mutable_sequence()->mutable_steps())
      retarget_transfers(step, stream, tensor);
  }
}

// Adds a tensor shaped like the one `stream` moves in `program` but `rows` rows long, spread over
// the tiles of its IPU (structurally valid, no vertex reads it), and makes every transfer of
// `stream` move it instead, the stream reshaped to match: a buffer larger than the micro-batch
// the host feeds or drains.
uint32_t stream_through_larger_tensor(Executable& exe, std::string_view program_name, int stream,
                                      int64_t rows) {
  const fmt::Tensor like = exe.tensors(static_cast<int>(stream_tensor(exe, program_name, stream)));
  fmt::Tensor* t = exe.add_tensors();
  t->set_name("hostile/" + like.name());
  t->set_dtype(like.dtype());
  t->set_role(like.role());
  t->set_ipu(like.ipu());
  *t->mutable_shape() = like.shape();
  t->set_shape(0, rows);
  uint64_t elements = 1;
  for (int64_t d : t->shape())
    elements *= static_cast<uint64_t>(d);
  const uint64_t tiles = exe.target().tiles_per_ipu(), chunk = (elements + tiles - 1) / tiles;
  for (uint64_t begin = 0, tile = 0; begin < elements; begin += chunk, ++tile) {
    fmt::Interval* iv = t->add_mapping();
    iv->set_tile(static_cast<uint32_t>(like.ipu() * tiles + tile));
    iv->set_begin(begin);
    iv->set_end(std::min(elements, begin + chunk));
  }
  const uint32_t index = static_cast<uint32_t>(exe.tensors_size() - 1);
  *exe.mutable_streams(stream)->mutable_shape() = t->shape();
  for (auto& p : *exe.mutable_programs())
    retarget_transfers(*p.mutable_program(), static_cast<uint32_t>(stream), index);
  return index;
}

fmt::ModelIo& first_io(Executable& exe, bool input) {
  if ((input ? exe.inputs_size() : exe.outputs_size()) == 0)
    die("the executable has no model inputs or outputs");
  return input ? *exe.mutable_inputs(0) : *exe.mutable_outputs(0);
}

const std::map<std::string, std::function<void(Executable&)>>& mutations() {
  static const std::map<std::string, std::function<void(Executable&)>> all = {
      // A predict program repeating past steps_per_execution reads past the host's features.
      {"predict-repeat-10000",
       [](Executable& e) { program(e, fmt::kPredictProgram).mutable_repeat()->set_count(10000); }},
      {"predict-repeat-50",
       [](Executable& e) { program(e, fmt::kPredictProgram).mutable_repeat()->set_count(50); }},
      // Streams larger than the micro-batch.
      {"features-1e6-rows",
       [](Executable& e) {
         stream_through_larger_tensor(e, fmt::kTrainProgram, find_stream(e, fmt::kFeaturesStream), 1000000);
       }},
      {"labels-1e6-rows",
       [](Executable& e) {
         stream_through_larger_tensor(e, fmt::kTrainProgram, find_stream(e, fmt::kLabelsStream), 1000000);
       }},
      // Prediction streaming labels the host does not have.
      {"predict-streams-labels",
       [](Executable& e) {
         const int labels = find_stream(e, fmt::kLabelsStream);
         auto* in = step_body(e, fmt::kPredictProgram).add_steps()->mutable_stream_in();
         in->set_stream(static_cast<uint32_t>(labels));
         in->set_tensor(stream_tensor(e, fmt::kTrainProgram, labels));
       }},
      // An evaluate program that streams no loss: the host read a loss per step it never got.
      {"evaluate-without-loss",
       [](Executable& e) {
         const int loss = find_stream(e, fmt::kLossStream);
         auto* steps = step_body(e, fmt::kEvaluateProgram).mutable_steps();
         for (auto it = steps->begin(); it != steps->end();) {
           const bool streams_loss =
               it->has_stream_out() && it->stream_out().stream() == static_cast<uint32_t>(loss);
           it = streams_loss ? steps->erase(it) : it + 1;
         }
       }},
      // A tensor larger than the batch streamed in, then out as the predictions: the host would
      // send back what lies past its buffer.
      {"heap-disclosure",
       [](Executable& e) {
         const int features = find_stream(e, fmt::kFeaturesStream),
                   predictions = find_stream(e, fmt::kPredictionsStream);
         const int64_t rows = int64_t{e.batch_size()} * 64;
         const uint32_t leak = stream_through_larger_tensor(e, fmt::kPredictProgram, features, rows);
         *e.mutable_streams(predictions)->mutable_shape() = e.tensors(static_cast<int>(leak)).shape();
         for (auto& step : *step_body(e, fmt::kPredictProgram).mutable_steps()) {
           if (step.has_stream_out() && step.stream_out().stream() == static_cast<uint32_t>(predictions)) {
             step.mutable_stream_out()->set_tensor(leak);
           }
         }
       }},
      // Model inputs and outputs that lie about their streams.
      {"input-batched-scalar", [](Executable& e) { first_io(e, true).clear_shape(); }},
      {"input-unbatched-small",
       [](Executable& e) {
         fmt::ModelIo& io = first_io(e, true);
         io.set_batched(false);
         io.clear_shape();
         io.add_shape(1);
       }},
      {"output-2^40",
       [](Executable& e) {
         first_io(e, false).clear_shape();
         first_io(e, false).add_shape(int64_t{1} << 40);
       }},
      {"output-negative",
       [](Executable& e) {
         first_io(e, false).clear_shape();
         first_io(e, false).add_shape(-1);
       }},
      {"output-3e8",
       [](Executable& e) {
         fmt::ModelIo& io = first_io(e, false);
         io.set_batched(false);
         io.clear_shape();
         io.add_shape(300000000);
       }},
      {"batch-2^31", [](Executable& e) { e.set_batch_size(uint32_t{1} << 31); }},
      // Unbounded time: 40 nested Repeat(2), and Repeat 2^62 of nothing.
      {"nested-repeats",
       [](Executable& e) {
         e.set_steps_per_execution(fmt::kMaxStepsPerExecution);
         Program* p = step_body(e, fmt::kPredictProgram).add_steps();
         for (int i = 0; i < 40; ++i) {
           p->mutable_repeat()->set_count(2);
           p = p->mutable_repeat()->mutable_body();
         }
         p->mutable_sequence();
       }},
      {"repeat-2^62",
       [](Executable& e) {
         step_body(e, fmt::kPredictProgram).add_steps()->mutable_repeat()->set_count(uint64_t{1} << 62);
       }},
      // Conditionals: on a tensor that does not exist, and hiding executions on their other side
      // (each side counts as if it always ran).
      {"conditional-missing-condition",
       [](Executable& e) {
         step_body(e, fmt::kPredictProgram).add_steps()->mutable_conditional()->set_condition(1u << 30);
       }},
      {"conditional-else-executions",
       [](Executable& e) {
         for (int i = 0; i < 3; ++i) {
           auto* c = step_body(e, fmt::kPredictProgram).add_steps()->mutable_conditional();
           c->mutable_else_body()->set_execute(0);
         }
       }},
      // 20,000 Parallel nodes each executing a compute set of 20,000 vertices.
      {"parallel-20k-by-20k",
       [](Executable& e) {
         fmt::ComputeSet* wide = e.add_compute_sets();
         *wide = e.compute_sets(0);
         wide->set_name("wide");
         for (int i = 0; wide->vertices_size() < 20000; ++i)
           *wide->add_vertices() = e.compute_sets(0).vertices(i % e.compute_sets(0).vertices_size());
         fmt::Sequence& body = step_body(e, fmt::kPredictProgram);
         for (int i = 0; i < 20000; ++i)
           body.add_steps()->mutable_parallel()->add_branches()->set_execute(
               static_cast<uint32_t>(e.compute_sets_size() - 1));
       }},
      // Unbounded memory: a weight of 2^28 elements (1 GB) on a 900 MB IPU, and 1 GiB of source.
      {"weight-2^28",
       [](Executable& e) {
         fmt::Tensor* t = e.add_tensors();
         t->set_name("hostile/weight");
         t->set_dtype(fmt::FLOAT32);
         t->set_role(fmt::WEIGHT);
         t->add_shape(int64_t{1} << 28);
         const uint64_t tiles = e.target().tiles_per_ipu(), chunk = (uint64_t{1} << 28) / tiles;
         for (uint64_t tile = 0; tile < tiles; ++tile) {
           fmt::Interval* iv = t->add_mapping();
           iv->set_tile(static_cast<uint32_t>(tile));
           iv->set_begin(tile * chunk);
           iv->set_end(tile + 1 == tiles ? uint64_t{1} << 28 : (tile + 1) * chunk);
         }
       }},
      {"empty-messages-16MiB", [](Executable&) {}}, // written by main, past the message
      {"source-onnx-1GiB",
       [](Executable& e) {
         e.set_source_onnx(std::string((uint64_t{1} << 30) - (uint64_t{1} << 20), '\0'));
       }},
  };
  return all;
}

} // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--list") {
    for (const auto& [name, mutate] : mutations())
      std::printf("%s\n", name.c_str());
    return 0;
  }
  // The codelet ids IN's vertices use, one per line: what a fuzzing seed covers.
  if (argc == 3 && std::string(argv[1]) == "--codelets") {
    auto exe = ipu::format::read_executable_file(argv[2]);
    if (!exe.ok()) die(exe.status().message());
    std::set<uint32_t> codelets;
    for (const auto& cs : exe->compute_sets()) {
      for (const auto& v : cs.vertices())
        codelets.insert(v.codelet());
    }
    for (uint32_t id : codelets)
      std::printf("%u\n", id);
    return 0;
  }
  // The payload alone: seeds for fuzz_executable, which frames what it mutates itself.
  if (argc == 4 && std::string(argv[1]) == "--payload") {
    auto exe = ipu::format::read_executable_file(argv[2]);
    if (!exe.ok()) die(exe.status().message());
    // Zero initial values (stored as none), and no ONNX source: small seeds mutate fast.
    for (auto& t : *exe->mutable_tensors())
      t.clear_initial_value();
    exe->clear_source_onnx();
    std::string payload;
    exe->SerializeToString(&payload);
    ipu::Status written = ipu::write_file_atomic(argv[3], payload);
    if (!written.ok()) die(written.message());
    return 0;
  }
  if (argc != 4) die("usage: hostile_executable MUTATION IN OUT | --payload IN OUT | --codelets IN | --list");
  auto found = mutations().find(argv[1]);
  if (found == mutations().end()) die(std::string("unknown mutation '") + argv[1] + "' (--list names them)");
  auto exe = ipu::format::read_executable_file(argv[2]);
  if (!exe.ok()) die(exe.status().message());
  found->second(*exe);
  std::string payload;
  exe->SerializeToString(&payload);
  // The summary of what was mutated, as a compiler that wrote this executable would have written it.
  const std::string summary = ipu::format::summarize(*exe).SerializeAsString();
  // 16 MiB of empty compute sets (2 bytes each on the wire: field 9, length 0), which protobuf
  // would parse into a gigabyte of objects: appended to the message's bytes, as a message's
  // repeated fields may be.
  if (std::string(argv[1]) == "empty-messages-16MiB") {
    for (int i = 0; i < (8 << 20); ++i)
      payload += std::string("\x4a\x00", 2);
  }
  ipu::Status written = ipu::write_file_atomic(argv[3], ipu::format::frame_payload(payload, summary));
  if (!written.ok()) die(written.message());
  return 0;
}
