#include "runtime/format/verifier.h"

#include <algorithm>
#include <set>
#include <vector>

#include "runtime/format/host_contract.h"
#include "runtime/format/hyper_parameters.h"
#include "runtime/format/verifier_internal.h"

namespace ipu::format {

std::string tensor_label(const Executable& exe, uint64_t index) {
  return "tensor " + std::to_string(index) + " '" + exe.tensors(static_cast<int>(index)).name() + "'";
}

uint64_t element_count_of(const Stream& stream) {
  uint64_t n = 1;
  for (int64_t d : stream.shape())
    n *= static_cast<uint64_t>(d);
  return n;
}

namespace {

Status check_shape(const google::protobuf::RepeatedField<int64_t>& shape, const std::string& what) {
  uint64_t elements = 1;
  for (int64_t d : shape) {
    if (d <= 0) return data_loss(what + ": dimension " + std::to_string(d) + " is not positive");
    if (elements > kMaxTensorElements / static_cast<uint64_t>(d))
      return data_loss(what + ": too many elements");
    elements *= static_cast<uint64_t>(d);
  }
  return Status();
}

Status verify_target(const Target& t) {
  if (t.num_ipus() == 0 || t.num_ipus() > 1024)
    return data_loss("target: invalid num_ipus " + std::to_string(t.num_ipus()));
  if (t.tiles_per_ipu() == 0 || t.tiles_per_ipu() > 65536) {
    return data_loss("target: invalid tiles_per_ipu " + std::to_string(t.tiles_per_ipu()));
  }
  if (t.bytes_per_tile() == 0 || t.bytes_per_tile() > kMaxBytesPerTile) {
    return data_loss("target: invalid bytes_per_tile " + std::to_string(t.bytes_per_tile()));
  }
  if (t.worker_threads_per_tile() == 0 || t.worker_threads_per_tile() > 64) {
    return data_loss("target: invalid worker_threads_per_tile");
  }
  return Status();
}

Status verify_tensor(const Executable& exe, int index, uint64_t total_tiles) {
  const Tensor& t = exe.tensors(index);
  const std::string label = tensor_label(exe, static_cast<uint64_t>(index));
  if (dtype_size(t.dtype()) == 0) return data_loss(label + ": unknown dtype " + std::to_string(t.dtype()));
  IPU_RETURN_IF_ERROR(check_shape(t.shape(), label));
  const uint32_t ipus = ipus_per_replica(exe);
  if (t.ipu() >= ipus) {
    return data_loss(label + ": on IPU " + std::to_string(t.ipu()) + " of the replica's " +
                     std::to_string(ipus));
  }
  const uint64_t elements = element_count(t);
  uint64_t next = 0;
  for (int i = 0; i < t.mapping_size(); ++i) {
    const Interval& iv = t.mapping(i);
    const bool on_its_ipu = iv.tile() / exe.target().tiles_per_ipu() == t.ipu();
    if (iv.begin() != next || iv.end() <= iv.begin() || iv.end() > elements || iv.tile() >= total_tiles ||
        !on_its_ipu) {
      return data_loss(label + ": mapping interval " + std::to_string(i) + " [" + std::to_string(iv.begin()) +
                       ", " + std::to_string(iv.end()) + ") on tile " + std::to_string(iv.tile()) +
                       " does not continue a cover of its " + std::to_string(elements) + " elements on IPU " +
                       std::to_string(t.ipu()));
    }
    next = iv.end();
  }
  if (next != elements)
    return data_loss(label + ": mapping covers " + std::to_string(next) + " of " + std::to_string(elements) +
                     " elements");
  // Inline, or in the data section (initial_data.h, which proved the range lies inside it).
  const uint64_t initial_bytes = t.has_initial_data() ? t.initial_data().size() : t.initial_value().size();
  if (initial_bytes != 0 && initial_bytes != elements * dtype_size(t.dtype())) {
    return data_loss(label + ": initial value has " + std::to_string(initial_bytes) + " bytes, expected " +
                     std::to_string(elements * dtype_size(t.dtype())));
  }
  return Status();
}

// The compiler's memory plan never lets a tile hold more than its bytes at any moment: nor may a
// file, whose tensors the host then allocates. No one tensor may fill a tile past them, nor may
// the tensors that stay on their tiles for the whole program (weights, optimizer state,
// accumulators, constants, stream buffers; activations and gradients come and go) together.
Status verify_tile_bytes(const Executable& exe, uint64_t total_tiles) {
  const uint64_t limit = exe.target().bytes_per_tile();
  std::vector<uint64_t> resident(total_tiles, 0), own(total_tiles, 0);
  for (int i = 0; i < exe.tensors_size(); ++i) {
    const Tensor& t = exe.tensors(i);
    const bool stays = t.role() != ACTIVATION && t.role() != GRADIENT;
    for (const Interval& iv : t.mapping()) {
      const uint64_t bytes = (iv.end() - iv.begin()) * dtype_size(t.dtype());
      own[iv.tile()] += bytes;
      if (own[iv.tile()] > limit) {
        return data_loss(tensor_label(exe, static_cast<uint64_t>(i)) + ": holds " +
                         std::to_string(own[iv.tile()]) + " bytes on tile " + std::to_string(iv.tile()) +
                         ", more than its " + std::to_string(limit));
      }
      if (stays) resident[iv.tile()] += bytes;
    }
    for (const Interval& iv : t.mapping())
      own[iv.tile()] = 0;
  }
  for (uint64_t tile = 0; tile < total_tiles; ++tile) {
    if (resident[tile] > limit) {
      return data_loss(
          "tile " + std::to_string(tile) + " holds " + std::to_string(resident[tile]) +
          " bytes of tensors that live the whole program (weights, state, stream buffers), more than its " +
          std::to_string(limit));
    }
  }
  return Status();
}

// The rounded ranges of compute set `c`: sorted and disjoint ranges of FLOAT16 tensors its
// vertices touch, so rounding them stays inside the tensors the set may write (the Parallel
// disjointness check sees them).
Status verify_rounded(const Executable& exe, int c, const std::vector<uint32_t>& touched) {
  const ComputeSet& cs = exe.compute_sets(c);
  const std::string label = "compute set " + std::to_string(c) + " '" + cs.name() + "'";
  const TensorRange* previous = nullptr;
  for (const TensorRange& range : cs.rounded()) {
    const std::string what = label + ": rounded range of tensor " + std::to_string(range.tensor()) + " [" +
                             std::to_string(range.begin()) + ", " + std::to_string(range.end()) + ")";
    if (!std::binary_search(touched.begin(), touched.end(), range.tensor()))
      return data_loss(what + " names a tensor none of its vertices touches");
    const Tensor& t = exe.tensors(static_cast<int>(range.tensor()));
    if (t.dtype() != FLOAT16) return data_loss(what + " names a tensor that is not FLOAT16");
    if (range.begin() >= range.end() || range.end() > element_count(t))
      return data_loss(what + " is empty or leaves its " + std::to_string(element_count(t)) + " elements");
    if (previous != nullptr && (previous->tensor() > range.tensor() ||
                                (previous->tensor() == range.tensor() && previous->end() > range.begin())))
      return data_loss(what + " is out of order or overlaps the one before");
    previous = &range;
  }
  return Status();
}

const Stream* find_stream(const Executable& exe, std::string_view name, uint32_t* index = nullptr) {
  for (int i = 0; i < exe.streams_size(); ++i) {
    if (exe.streams(i).name() == name) {
      if (index != nullptr) *index = static_cast<uint32_t>(i);
      return &exe.streams(i);
    }
  }
  return nullptr;
}

std::string stream_label(const Stream& s) {
  return "stream '" + s.name() + "'";
}

Status expect_stream(const Stream& s, DType dtype, const std::vector<int64_t>& shape,
                     const std::string& why) {
  if (s.dtype() != dtype || !std::equal(s.shape().begin(), s.shape().end(), shape.begin(), shape.end())) {
    std::string text = "[";
    for (size_t i = 0; i < shape.size(); ++i)
      text += (i ? "," : "") + std::to_string(shape[i]);
    return data_loss(stream_label(s) + ": must be " + (dtype == FLOAT32 ? "float32 " : "int32 ") + text +
                     "]" + " (" + why + ")");
  }
  return Status();
}

Status expect_batched(const Stream& s, uint32_t batch_size, const std::string& what) {
  if (s.shape_size() < 1 || s.shape(0) != batch_size) {
    return data_loss(stream_label(s) + ": " + what + " must start with the micro-batch of " +
                     std::to_string(batch_size) + " rows");
  }
  return Status();
}

// A model input or output: its stream exists, runs the right way, holds floats of its shape; a
// batched one starts with the micro-batch.
Status verify_model_io(const Executable& exe, const ModelIo& io, bool input,
                       std::set<uint32_t>& streams_used) {
  const std::string label = std::string(input ? "input" : "output") + " '" + io.name() + "'";
  if (io.stream() >= static_cast<uint32_t>(exe.streams_size())) {
    return data_loss(label + ": names stream " + std::to_string(io.stream()) + " of " +
                     std::to_string(exe.streams_size()));
  }
  if (!streams_used.insert(io.stream()).second)
    return data_loss(label + ": shares its stream with another input or output");
  const Stream& s = exe.streams(static_cast<int>(io.stream()));
  if (s.direction() != (input ? Stream::HOST_TO_DEVICE : Stream::DEVICE_TO_HOST)) {
    return data_loss(label + ": " + stream_label(s) + " runs the wrong way");
  }
  if (!is_model_io_dtype(io.dtype())) return data_loss(label + ": unknown dtype '" + io.dtype() + "'");
  IPU_RETURN_IF_ERROR(check_shape(io.shape(), label));
  if (io.batched() && (io.shape_size() < 1 || io.shape(0) != exe.batch_size())) {
    return data_loss(label + ": is batched but its shape does not start with the micro-batch of " +
                     std::to_string(exe.batch_size()));
  }
  // The stream may be the tensor of a reshape's input: the host copies elements, not shapes.
  uint64_t elements = 1;
  for (int64_t d : io.shape())
    elements *= static_cast<uint64_t>(d);
  if (!is_float(s.dtype()) || element_count_of(s) != elements) {
    return data_loss(label + ": " + stream_label(s) + " does not carry its " + std::to_string(elements) +
                     " floats");
  }
  return Status();
}

// The optimizer's hyper-parameters (host_contract.h): the host writes kHyperParameterCount floats
// per update through their stream, into the tensor named kHyperParametersTensor, whose initial
// value it reads as the defaults; the names of the slots the optimizer reads are known ones.
Status verify_hyper_parameters(const Executable& exe) {
  const Stream* stream = find_stream(exe, kHyperParametersStream);
  const std::vector<int64_t> shape = {int64_t{kHyperParameterCount}};
  if (stream != nullptr) {
    IPU_RETURN_IF_ERROR(expect_stream(*stream, FLOAT32, shape, "one value per hyper-parameter"));
    if (stream->direction() != Stream::HOST_TO_DEVICE)
      return data_loss(stream_label(*stream) + ": must carry the hyper-parameters to the device");
  }
  int named = 0;
  for (const Tensor& t : exe.tensors()) {
    if (t.role() != HYPER_PARAMETERS) continue;
    const std::string label = "hyper-parameter tensor '" + t.name() + "'";
    if (t.dtype() != FLOAT32 || !std::equal(t.shape().begin(), t.shape().end(), shape.begin(), shape.end()))
      return data_loss(label + ": must be float32 [" + std::to_string(kHyperParameterCount) + "]");
    // hyper_parameter_defaults reads the message: the loader keeps this value out of the data section.
    if (t.has_initial_data()) return data_loss(label + ": its initial value must be in the message");
    if (!t.initial_value().empty() && t.initial_value().size() != kHyperParameterCount * sizeof(float))
      return data_loss(label + ": its initial value is not " + std::to_string(kHyperParameterCount) +
                       " floats");
    if (t.name() == kHyperParametersTensor) ++named;
  }
  if ((stream != nullptr) != (named == 1)) {
    return data_loss("the hyper-parameters need both a stream '" + std::string(kHyperParametersStream) +
                     "' and one tensor '" + std::string(kHyperParametersTensor) + "', got " +
                     (stream != nullptr ? "the stream" : "no stream") + " and " + std::to_string(named) +
                     " such tensors");
  }
  std::set<std::string_view> names;
  for (const std::string& name : exe.hyper_parameters()) {
    if (std::find(kHyperParameterNames.begin(), kHyperParameterNames.end(), name) ==
        kHyperParameterNames.end())
      return data_loss("hyper_parameters: unknown hyper-parameter '" + name + "'");
    if (!names.insert(name).second) return data_loss("hyper_parameters: '" + name + "' is named twice");
  }
  if (!names.empty() && stream == nullptr)
    return data_loss("hyper_parameters: names hyper-parameters, but no stream carries them");
  if (!exe.learning_rate_schedule().empty()) {
    if (!names.count(kHyperParameterNames[HyperParameter::kLearningRate]))
      return data_loss("learning_rate_schedule: the executable's optimizer reads no learning rate");
    StatusOr<LearningRateSchedule> schedule = parse_learning_rate_schedule(exe.learning_rate_schedule());
    if (!schedule.ok()) return data_loss(schedule.status().message());
  }
  return Status();
}

} // namespace

Status verify_host_contract(const Executable& exe) {
  const uint32_t B = exe.batch_size();
  std::set<uint32_t> io_streams;
  for (const ModelIo& io : exe.inputs())
    IPU_RETURN_IF_ERROR(verify_model_io(exe, io, true, io_streams));
  for (const ModelIo& io : exe.outputs())
    IPU_RETURN_IF_ERROR(verify_model_io(exe, io, false, io_streams));
  uint32_t features_index = 0;
  if (const Stream* features = find_stream(exe, kFeaturesStream, &features_index)) {
    if (features->direction() != Stream::HOST_TO_DEVICE || !is_float(features->dtype())) {
      return data_loss(stream_label(*features) + ": must carry floats to the device");
    }
    if (exe.inputs_size() > 0 && exe.inputs(0).stream() != features_index) {
      return data_loss("input '" + exe.inputs(0).name() + "': the first input must be fed through " +
                       stream_label(*features));
    }
    // A data set feeds batched samples through it (a spec's input, or a model's batched first input).
    if (exe.inputs_size() == 0)
      IPU_RETURN_IF_ERROR(expect_batched(*features, B, "the features of a data set"));
  }
  const bool has_predict = std::any_of(exe.programs().begin(), exe.programs().end(),
                                       [](const NamedProgram& p) { return p.name() == kPredictProgram; });
  if (has_predict && find_stream(exe, kPredictionsStream) == nullptr) {
    return data_loss("program 'predict' has no stream '" + std::string(kPredictionsStream) +
                     "' to return its outputs through");
  }
  if (exe.outputs_size() == 0) {
    if (const Stream* predictions = find_stream(exe, kPredictionsStream)) {
      IPU_RETURN_IF_ERROR(expect_batched(*predictions, B, "predictions"));
      if (predictions->direction() != Stream::DEVICE_TO_HOST || !is_float(predictions->dtype())) {
        return data_loss(stream_label(*predictions) + ": must carry floats to the host");
      }
    }
  }
  const Stream* labels = find_stream(exe, kLabelsStream);
  // Class indices, one per sample, or float labels of the num_classes outputs of each sample.
  if (labels != nullptr && labels->dtype() == FLOAT32) {
    IPU_RETURN_IF_ERROR(expect_stream(*labels, FLOAT32, {B, int64_t{exe.num_classes()}},
                                      "a float label per output of each sample"));
  } else if (labels != nullptr) {
    IPU_RETURN_IF_ERROR(expect_stream(*labels, INT32, {B}, "a label per sample"));
  }
  for (const Stream& s : exe.streams()) {
    const bool per_step_value =
        s.name() == kLossStream || s.name() == kCorrectStream || s.name().rfind(kMetricStreamPrefix, 0) == 0;
    if (per_step_value &&
        (s.dtype() != FLOAT32 || s.direction() != Stream::DEVICE_TO_HOST || element_count_of(s) != 1)) {
      return data_loss(stream_label(s) + ": must carry one float to the host per step");
    }
  }
  if (const Stream* loss_scale = find_stream(exe, kLossScaleStream)) {
    IPU_RETURN_IF_ERROR(
        expect_stream(*loss_scale, FLOAT32, {2}, "the scale of each update and whether it skipped"));
    if (loss_scale->direction() != Stream::DEVICE_TO_HOST)
      return data_loss(stream_label(*loss_scale) + ": must carry the loss scale to the host");
  }

  // Weights and optimizer state travel to the host and into checkpoints by name.
  std::set<std::string_view> state_names;
  for (const Tensor& t : exe.tensors()) {
    const bool travels = t.role() == WEIGHT || t.role() == OPTIMIZER_STATE || t.role() == RUNNING_STATISTICS;
    if (travels && !state_names.insert(t.name()).second) {
      return data_loss("two weights or optimizer states are named '" + t.name() + "'");
    }
  }

  IPU_RETURN_IF_ERROR(verify_hyper_parameters(exe));

  // Each run moves each stream at most S times per replica: the host holds S steps of data.
  for (const NamedProgram& p : exe.programs()) {
    const std::string where = "program '" + p.name() + "'";
    RunCounts counts;
    IPU_RETURN_IF_ERROR(count_runs(exe, p.program(), 1, where, counts));
    for (const auto& [stream, count] : counts.transfers) {
      if (stream >= static_cast<uint32_t>(exe.streams_size())) continue; // verify_executable's to reject
      const Stream& s = exe.streams(static_cast<int>(stream));
      const bool weights =
          s.name().rfind(kToDeviceStreamPrefix, 0) == 0 || s.name().rfind(kToHostStreamPrefix, 0) == 0;
      const uint64_t limit = weights ? 1 : exe.steps_per_execution();
      if (count > limit) {
        return data_loss(where + ": moves " + stream_label(s) + " " + std::to_string(count) +
                         " times per run, more than " + std::to_string(limit));
      }
    }
    uint32_t labels_index = 0;
    if (p.name() == kPredictProgram && find_stream(exe, kLabelsStream, &labels_index) &&
        counts.transfers.count(labels_index)) {
      return data_loss(where + ": streams labels, which prediction has none of");
    }
  }
  return Status();
}

uint32_t replica_count(const Executable& exe) {
  return std::max<uint32_t>(1, exe.pipeline().replicas());
}

uint32_t ipus_per_replica(const Executable& exe) {
  return exe.target().num_ipus() / replica_count(exe);
}

uint64_t dtype_size(DType dtype) {
  switch (dtype) {
  case FLOAT32:
  case INT32:
    return 4;
  case FLOAT16:
    return 2;
  default:
    return 0;
  }
}

bool is_float(DType dtype) {
  return dtype == FLOAT32 || dtype == FLOAT16;
}

uint64_t host_element_size(DType dtype) {
  return dtype_size(dtype) == 0 ? 0 : 4;
}

uint64_t element_count(const Tensor& tensor) {
  uint64_t n = 1;
  for (int64_t d : tensor.shape())
    n *= static_cast<uint64_t>(d);
  return n;
}

Status verify_executable(const Executable& exe) {
  IPU_RETURN_IF_ERROR(verify_target(exe.target()));
  if (exe.batch_size() == 0 || exe.batch_size() > kMaxBatchSize) {
    return data_loss("batch_size " + std::to_string(exe.batch_size()) + " is outside [1, " +
                     std::to_string(kMaxBatchSize) + "]");
  }
  if (exe.steps_per_execution() == 0 || exe.steps_per_execution() > kMaxStepsPerExecution) {
    return data_loss("steps_per_execution " + std::to_string(exe.steps_per_execution()) + " is outside [1, " +
                     std::to_string(kMaxStepsPerExecution) + "]");
  }
  const uint32_t replicas = replica_count(exe);
  if (replicas > kMaxReplicas || exe.target().num_ipus() % replicas != 0) {
    return data_loss("invalid replica count " + std::to_string(replicas) + " for " +
                     std::to_string(exe.target().num_ipus()) + " IPUs");
  }
  const uint32_t accumulation = std::max<uint32_t>(1, exe.pipeline().gradient_accumulation());
  if (accumulation > kMaxGradientAccumulation)
    return data_loss("gradient accumulation " + std::to_string(accumulation) + " is too large");
  if (exe.steps_per_execution() % accumulation != 0) {
    return data_loss("gradient accumulation " + std::to_string(accumulation) +
                     " does not divide steps_per_execution " + std::to_string(exe.steps_per_execution()));
  }
  const uint64_t total_tiles = uint64_t{ipus_per_replica(exe)} * exe.target().tiles_per_ipu();
  for (int i = 0; i < exe.tensors_size(); ++i)
    IPU_RETURN_IF_ERROR(verify_tensor(exe, i, total_tiles));
  for (int i = 0; i < exe.streams_size(); ++i) {
    const Stream& s = exe.streams(i);
    const std::string label = "stream " + std::to_string(i) + " '" + s.name() + "'";
    if (s.direction() != Stream::HOST_TO_DEVICE && s.direction() != Stream::DEVICE_TO_HOST) {
      return data_loss(label + ": unknown direction");
    }
    if (dtype_size(s.dtype()) == 0) return data_loss(label + ": unknown dtype");
    IPU_RETURN_IF_ERROR(check_shape(s.shape(), label));
  }
  for (int c = 0; c < exe.compute_sets_size(); ++c) {
    const ComputeSet& cs = exe.compute_sets(c);
    for (int v = 0; v < cs.vertices_size(); ++v) {
      const Vertex& vertex = cs.vertices(v);
      const std::string label =
          "compute set " + std::to_string(c) + " '" + cs.name() + "' vertex " + std::to_string(v);
      if (vertex.tile() >= total_tiles)
        return data_loss(label + ": tile " + std::to_string(vertex.tile()) + " of " +
                         std::to_string(total_tiles));
      // Without op names every vertex says op 0 (the field's default).
      const auto ops = static_cast<uint32_t>(cs.ops_size());
      if (ops > 0 ? vertex.op() >= ops : vertex.op() != 0) {
        return data_loss(label + ": names op " + std::to_string(vertex.op()) + " of " +
                         std::to_string(cs.ops_size()));
      }
      for (uint32_t operand : vertex.operands()) {
        if (operand >= static_cast<uint32_t>(exe.tensors_size())) {
          return data_loss(label + ": operand names tensor " + std::to_string(operand) + " of " +
                           std::to_string(exe.tensors_size()));
        }
      }
    }
  }
  IPU_RETURN_IF_ERROR(verify_tile_bytes(exe, total_tiles));
  const ComputeSetTensors cs_tensors = compute_set_tensors(exe);
  for (int c = 0; c < exe.compute_sets_size(); ++c)
    IPU_RETURN_IF_ERROR(verify_rounded(exe, c, cs_tensors[static_cast<size_t>(c)]));
  IPU_RETURN_IF_ERROR(verify_programs(exe, cs_tensors));
  return Status();
}

} // namespace ipu::format
