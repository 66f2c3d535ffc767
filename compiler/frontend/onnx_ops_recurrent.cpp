// ONNX's recurrent ops, RNN, GRU and LSTM (docs/onnx.md), unrolled over their sequence at import.
// The sequence length is static, so every time step becomes ops the IR already has (MatMul,
// Binary, Unary, StridedCopy, Concat), and training differentiates through them: backpropagation
// through time with nothing new on the device. As cuDNN and poplibs' LSTM do, the input
// projection of all the steps is one MatMul over the whole sequence; only the recurrent one is a
// MatMul per step.
#include <onnx/onnx_pb.h>

#include <array>
#include <string>
#include <vector>

#include "compiler/frontend/onnx_tensor_helpers.h"

namespace ipu::frontend {
namespace {

using format::BinaryKind;
using format::UnaryKind;

enum class Cell { kRnn, kGru, kLstm };

// Gates per cell, in ONNX's order of W's rows: RNN i; GRU z, r, h; LSTM i, o, f, c.
int gate_count(Cell cell) {
  return cell == Cell::kRnn ? 1 : cell == Cell::kGru ? 3 : 4;
}

struct Activation {
  UnaryKind kind = UnaryKind::kIdentity;
  float alpha = 0.0f;
  float beta = 0.0f;
};

// ONNX's activations list, one per function (f; f, g; f, g, h) and direction; alpha and beta are
// consumed in order by the functions that take them, as ONNX Runtime reads them, with each
// function's own defaults after the list runs out.
StatusOr<std::vector<Activation>> activations(OnnxImportContext& ctx, Cell cell, int directions) {
  const std::vector<std::string> defaults = cell == Cell::kRnn ? std::vector<std::string>{"Tanh"}
                                            : cell == Cell::kGru
                                                ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  std::vector<std::string> names;
  if (const onnx::AttributeProto* given = ctx.attribute("activations")) {
    names.assign(given->strings().begin(), given->strings().end());
  }
  if (names.empty()) names = defaults;
  if (names.size() == defaults.size() && directions == 2) {
    const std::vector<std::string> forward = names; // the reverse direction takes the same functions
    names.insert(names.end(), forward.begin(), forward.end());
  }
  if (names.size() != defaults.size() * static_cast<size_t>(directions)) {
    return invalid_argument("activations has " + std::to_string(names.size()) + " functions, " +
                            std::to_string(defaults.size() * static_cast<size_t>(directions)) +
                            " expected (" + std::to_string(defaults.size()) + " per direction)");
  }
  std::vector<float> alphas, betas;
  if (const onnx::AttributeProto* a = ctx.attribute("activation_alpha"))
    alphas.assign(a->floats().begin(), a->floats().end());
  if (const onnx::AttributeProto* b = ctx.attribute("activation_beta"))
    betas.assign(b->floats().begin(), b->floats().end());
  size_t next_alpha = 0, next_beta = 0;
  auto take = [](const std::vector<float>& list, size_t& next, float fallback) {
    return next < list.size() ? list[next++] : fallback;
  };
  std::vector<Activation> out;
  for (const std::string& name : names) {
    Activation a;
    if (name == "Sigmoid") {
      a.kind = UnaryKind::kSigmoid;
    } else if (name == "Tanh") {
      a.kind = UnaryKind::kTanh;
    } else if (name == "Relu") {
      a.kind = UnaryKind::kRelu;
    } else if (name == "Softsign") {
      a.kind = UnaryKind::kSoftsign;
    } else if (name == "Softplus") {
      a.kind = UnaryKind::kSoftplus;
    } else if (name == "LeakyRelu") {
      a = {UnaryKind::kLeakyRelu, take(alphas, next_alpha, 0.01f), 0.0f};
    } else if (name == "Elu") {
      a = {UnaryKind::kElu, take(alphas, next_alpha, 1.0f), 0.0f};
    } else if (name == "HardSigmoid") {
      a.kind = UnaryKind::kHardSigmoid;
      a.alpha = take(alphas, next_alpha, 0.2f);
      a.beta = take(betas, next_beta, 0.5f);
    } else if (name == "Affine") {
      a.kind = UnaryKind::kAffine;
      a.alpha = take(alphas, next_alpha, 1.0f);
      a.beta = take(betas, next_beta, 0.0f);
    } else {
      return unsupported(
          "activation '" + name +
          "' (supported: Sigmoid, Tanh, Relu, LeakyRelu, Elu, HardSigmoid, Softsign, Softplus, "
          "Affine)");
    }
    out.push_back(a);
  }
  return out;
}

// One direction of the node: its slices of the weights, its activations, and the state it
// carries from step to step.
struct Direction {
  int index = 0; // 0: forward (or the node's only direction), 1: the reverse of a bidirectional node
  bool reverse = false;
  int input_projection = -1; // [T·B, G·H]: X·Wᵀ (+ biases), every step at once
  int recurrence = -1;       // R [G·H, H] (GRU without linear_before_reset: z's and r's rows)
  int recurrence_bias = -1;  // GRU: Rb (the same rows), added to h·Rᵀ (-1: none)
  // GRU without linear_before_reset: the candidate's rows of R and Rb, [H, H] and [H] (-1: none).
  int candidate_recurrence = -1, candidate_bias = -1;
  std::array<int, 3> peepholes = {-1, -1, -1}; // LSTM: Pi, Po, Pf, [H] each (-1: none)
  int h = -1, c = -1;                          // the state entering the next step, [B, H]
  std::vector<Activation> functions;
};

// Everything the steps share.
struct Recurrence {
  Cell cell = Cell::kRnn;
  int64_t steps = 0, batch = 0, hidden = 0;
  float clip = 0.0f;                // 0: no clipping of the gates' inputs
  bool input_forget = false;        // LSTM: f = 1 − i
  bool linear_before_reset = false; // GRU
};

// Block `index` of `count` equal blocks along axis 0, as [rows/count, ...].
StatusOr<int> block(OnnxImportContext& ctx, int value, int64_t index, int64_t count,
                    const std::string& suffix) {
  if (count == 1) return value;
  std::vector<int64_t> shape = ctx.shape(value);
  const int64_t elements = product(shape, 0, shape.size()) / count;
  shape[0] /= count;
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t k = shape.size() - 1; k > 0; --k)
    strides[k - 1] = strides[k] * shape[k];
  return add_strided_copy(ctx, value, shape, strides, index * elements, suffix);
}

// Direction d's part of a [D, ...] input, without the direction axis.
StatusOr<int> of_direction(OnnxImportContext& ctx, int value, int d, int directions,
                           const std::string& suffix) {
  IPU_ASSIGN_OR_RETURN(int part, block(ctx, value, d, directions, suffix));
  const std::vector<int64_t> shape = ctx.shape(part);
  return ctx.reshape(part, std::vector<int64_t>(shape.begin() + 1, shape.end()), suffix + "_shape");
}

// Columns [g·H, (g+1)·H) of a [B, width] value: gate g.
StatusOr<int> gate(OnnxImportContext& ctx, const Recurrence& r, int value, int64_t g,
                   const std::string& suffix) {
  const int64_t width = ctx.shape(value)[1];
  return add_strided_copy(ctx, value, {r.batch, r.hidden}, {width, 1}, g * r.hidden, suffix);
}

StatusOr<int> activate(OnnxImportContext& ctx, const Recurrence& r, int x, const Activation& f,
                       const std::string& suffix) {
  if (r.clip > 0.0f) {
    IPU_ASSIGN_OR_RETURN(x, add_unary(ctx, x, UnaryKind::kClip, -r.clip, r.clip, suffix + "_clip"));
  }
  return add_unary(ctx, x, f.kind, f.alpha, f.beta, suffix);
}

// One time step of direction `d`: reads d.h (and d.c) and replaces them with the step's state.
Status step(OnnxImportContext& ctx, const Recurrence& r, Direction& d, int64_t t) {
  const std::string at = "/d" + std::to_string(d.index) + "/t" + std::to_string(t);
  const int64_t width = static_cast<int64_t>(gate_count(r.cell)) * r.hidden;
  IPU_ASSIGN_OR_RETURN(int x, add_strided_copy(ctx, d.input_projection, {r.batch, width}, {width, 1},
                                               t * r.batch * width, at + "/x"));
  ir::MatMulAttrs transposed;
  transposed.trans_b = true;
  IPU_ASSIGN_OR_RETURN(int h, ctx.add_op(ir::OpKind::kMatMul, {d.h, d.recurrence}, transposed, at + "/h_r"));
  if (d.recurrence_bias >= 0) {
    IPU_ASSIGN_OR_RETURN(h, ctx.add_op(ir::OpKind::kBiasAdd, {h, d.recurrence_bias}, {}, at + "/h_r_bias"));
  }
  switch (r.cell) {
  case Cell::kRnn: {
    IPU_ASSIGN_OR_RETURN(int sum, add_binary(ctx, x, h, BinaryKind::kAdd, at + "/sum"));
    IPU_ASSIGN_OR_RETURN(d.h, activate(ctx, r, sum, d.functions[0], at + "/h"));
    return Status();
  }
  case Cell::kGru: {
    // z and r read x + h·R; the candidate reads r ⊙ (h·Rh + Rbh) with linear_before_reset, else
    // (r ⊙ h)·Rh + Rbh, and h·R then has z's and r's columns only.
    int x_zr = x;
    if (!r.linear_before_reset) {
      IPU_ASSIGN_OR_RETURN(x_zr,
                           add_strided_copy(ctx, x, {r.batch, 2 * r.hidden}, {width, 1}, 0, at + "/x_zr"));
    }
    IPU_ASSIGN_OR_RETURN(int sum, add_binary(ctx, x_zr, h, BinaryKind::kAdd, at + "/sum"));
    IPU_ASSIGN_OR_RETURN(int z, gate(ctx, r, sum, 0, at + "/z_in"));
    IPU_ASSIGN_OR_RETURN(z, activate(ctx, r, z, d.functions[0], at + "/z"));
    IPU_ASSIGN_OR_RETURN(int reset, gate(ctx, r, sum, 1, at + "/r_in"));
    IPU_ASSIGN_OR_RETURN(reset, activate(ctx, r, reset, d.functions[0], at + "/r"));
    IPU_ASSIGN_OR_RETURN(int candidate, gate(ctx, r, x, 2, at + "/x_h"));
    int recurrent = -1;
    if (r.linear_before_reset) {
      IPU_ASSIGN_OR_RETURN(int hh, gate(ctx, r, h, 2, at + "/h_h"));
      IPU_ASSIGN_OR_RETURN(recurrent, add_binary(ctx, reset, hh, BinaryKind::kMul, at + "/r_h_h"));
    } else {
      IPU_ASSIGN_OR_RETURN(int reset_h, add_binary(ctx, reset, d.h, BinaryKind::kMul, at + "/r_h"));
      IPU_ASSIGN_OR_RETURN(recurrent, ctx.add_op(ir::OpKind::kMatMul, {reset_h, d.candidate_recurrence},
                                                 transposed, at + "/r_h_r"));
      if (d.candidate_bias >= 0) {
        IPU_ASSIGN_OR_RETURN(recurrent, ctx.add_op(ir::OpKind::kBiasAdd, {recurrent, d.candidate_bias}, {},
                                                   at + "/r_h_r_bias"));
      }
    }
    IPU_ASSIGN_OR_RETURN(candidate, add_binary(ctx, candidate, recurrent, BinaryKind::kAdd, at + "/n_in"));
    IPU_ASSIGN_OR_RETURN(candidate, activate(ctx, r, candidate, d.functions[1], at + "/n"));
    // H = (1 − z) ⊙ n + z ⊙ h = n + z ⊙ (h − n).
    IPU_ASSIGN_OR_RETURN(int kept, add_binary(ctx, d.h, candidate, BinaryKind::kSub, at + "/h_minus_n"));
    IPU_ASSIGN_OR_RETURN(kept, add_binary(ctx, z, kept, BinaryKind::kMul, at + "/z_h_minus_n"));
    IPU_ASSIGN_OR_RETURN(d.h, add_binary(ctx, candidate, kept, BinaryKind::kAdd, at + "/h"));
    return Status();
  }
  case Cell::kLstm: {
    IPU_ASSIGN_OR_RETURN(int sum, add_binary(ctx, x, h, BinaryKind::kAdd, at + "/sum"));
    // Peepholes P = [Pi, Po, Pf]: i and f read the previous cell state, o the new one.
    auto peep = [&](int pre, size_t p, int state, const std::string& name) -> StatusOr<int> {
      if (d.peepholes[p] < 0) return pre;
      IPU_ASSIGN_OR_RETURN(int product,
                           add_binary(ctx, d.peepholes[p], state, BinaryKind::kMul, at + "/p" + name + "_c"));
      return add_binary(ctx, pre, product, BinaryKind::kAdd, at + "/" + name + "_peep");
    };
    IPU_ASSIGN_OR_RETURN(int input, gate(ctx, r, sum, 0, at + "/i_in"));
    IPU_ASSIGN_OR_RETURN(input, peep(input, 0, d.c, "i"));
    IPU_ASSIGN_OR_RETURN(input, activate(ctx, r, input, d.functions[0], at + "/i"));
    int forget = -1;
    if (r.input_forget) {
      IPU_ASSIGN_OR_RETURN(forget, add_unary(ctx, input, UnaryKind::kAffine, -1.0f, 1.0f, at + "/f"));
    } else {
      IPU_ASSIGN_OR_RETURN(forget, gate(ctx, r, sum, 2, at + "/f_in"));
      IPU_ASSIGN_OR_RETURN(forget, peep(forget, 2, d.c, "f"));
      IPU_ASSIGN_OR_RETURN(forget, activate(ctx, r, forget, d.functions[0], at + "/f"));
    }
    IPU_ASSIGN_OR_RETURN(int cell_in, gate(ctx, r, sum, 3, at + "/c_in"));
    IPU_ASSIGN_OR_RETURN(cell_in, activate(ctx, r, cell_in, d.functions[1], at + "/c_candidate"));
    IPU_ASSIGN_OR_RETURN(int kept, add_binary(ctx, forget, d.c, BinaryKind::kMul, at + "/f_c"));
    IPU_ASSIGN_OR_RETURN(int added, add_binary(ctx, input, cell_in, BinaryKind::kMul, at + "/i_c"));
    IPU_ASSIGN_OR_RETURN(d.c, add_binary(ctx, kept, added, BinaryKind::kAdd, at + "/c"));
    IPU_ASSIGN_OR_RETURN(int output, gate(ctx, r, sum, 1, at + "/o_in"));
    IPU_ASSIGN_OR_RETURN(output, peep(output, 1, d.c, "o"));
    IPU_ASSIGN_OR_RETURN(output, activate(ctx, r, output, d.functions[0], at + "/o"));
    IPU_ASSIGN_OR_RETURN(int shown, add_unary(ctx, d.c, d.functions[2].kind, d.functions[2].alpha,
                                              d.functions[2].beta, at + "/h_c"));
    IPU_ASSIGN_OR_RETURN(d.h, add_binary(ctx, output, shown, BinaryKind::kMul, at + "/h"));
    return Status();
  }
  }
  return Status();
}

// `input` ([D, B, H], or [B, D, H] with layout 1) for direction d as [B, H]; zeros when absent.
StatusOr<int> initial_state(OnnxImportContext& ctx, const Recurrence& r, int index, int d, int directions,
                            bool batch_first, const std::string& name) {
  const std::string suffix = "/d" + std::to_string(d) + "/" + name;
  if (!ctx.has_input(index)) {
    return ctx.add_constant_tensor(suffix, {r.batch, r.hidden},
                                   std::vector<float>(static_cast<size_t>(r.batch * r.hidden), 0.0f));
  }
  IPU_ASSIGN_OR_RETURN(int state, ctx.input(index));
  const std::vector<int64_t> want = batch_first ? std::vector<int64_t>{r.batch, directions, r.hidden}
                                                : std::vector<int64_t>{directions, r.batch, r.hidden};
  if (ctx.shape(state) != want)
    return invalid_argument(name + " " + shape_text(ctx.shape(state)) + " must be " + shape_text(want));
  if (batch_first) {
    return add_strided_copy(ctx, state, {r.batch, r.hidden}, {directions * r.hidden, 1}, d * r.hidden,
                            suffix);
  }
  return of_direction(ctx, state, d, directions, suffix);
}

// The outputs: Y [T, D, B, H] (layout 1: [B, T, D, H]) from every step's h, Y_h and Y_c [D, B, H]
// (layout 1: [B, D, H]) from the last.
Status set_outputs(OnnxImportContext& ctx, const Recurrence& r, const std::vector<std::vector<int>>& hs,
                   const std::vector<Direction>& directions, bool batch_first) {
  const int64_t D = static_cast<int64_t>(directions.size()), T = r.steps, B = r.batch, H = r.hidden;
  auto wanted = [&](int index) {
    return index < ctx.node().output_size() && !ctx.node().output(index).empty();
  };
  // Stacks pieces of [B, H] along a new leading axis; `batch_first` puts B first.
  auto stack = [&](const std::vector<int>& pieces, std::vector<int64_t> leading,
                   const std::string& suffix) -> StatusOr<int> {
    std::vector<int> rows;
    rows.reserve(pieces.size());
    for (size_t i = 0; i < pieces.size(); ++i) {
      IPU_ASSIGN_OR_RETURN(int row, ctx.reshape(pieces[i], {1, B, H}, suffix + "/" + std::to_string(i)));
      rows.push_back(row);
    }
    int stacked = rows[0];
    if (rows.size() > 1) {
      ir::AxisAttrs axis;
      IPU_ASSIGN_OR_RETURN(stacked, ctx.add_op(ir::OpKind::kConcat, rows, axis, suffix));
    }
    const int64_t count = static_cast<int64_t>(pieces.size());
    if (!batch_first) {
      std::vector<int64_t> shape = leading;
      shape.insert(shape.end(), {B, H});
      return ctx.reshape(stacked, shape, suffix + "/shape");
    }
    // [count, B, H] read as [B, count, H].
    IPU_ASSIGN_OR_RETURN(
        int moved, add_strided_copy(ctx, stacked, {B, count, H}, {H, B * H, 1}, 0, suffix + "/batch_first"));
    std::vector<int64_t> shape = {B};
    shape.insert(shape.end(), leading.begin(), leading.end());
    shape.push_back(H);
    return ctx.reshape(moved, shape, suffix + "/shape");
  };
  if (wanted(0)) {
    std::vector<int> pieces; // t-major, then direction: Y's [T, D] order
    pieces.reserve(static_cast<size_t>(T * D));
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t d = 0; d < D; ++d)
        pieces.push_back(hs[static_cast<size_t>(d)][static_cast<size_t>(t)]);
    }
    IPU_ASSIGN_OR_RETURN(int y, stack(pieces, {T, D}, "/y"));
    ctx.set_output(0, y);
  }
  for (int index : {1, 2}) {
    if (!wanted(index)) continue;
    std::vector<int> pieces;
    pieces.reserve(directions.size());
    for (const Direction& d : directions)
      pieces.push_back(index == 1 ? d.h : d.c);
    IPU_ASSIGN_OR_RETURN(int last, stack(pieces, {D}, index == 1 ? "/y_h" : "/y_c"));
    ctx.set_output(index, last);
  }
  return Status();
}

// The node's operands as every direction reads them (-1: absent).
struct RecurrentOperands {
  int x_rows = -1;                 // X as [T·B, I], time-major
  int w = -1, rw = -1;             // W [D, G·H, I] and R [D, G·H, H]
  int biases = -1, peepholes = -1; // B [D, 2·G·H] and LSTM's P [D, 3·H]
  int directions = 1;
  bool batch_first = false; // layout 1
};

// Everything direction `dir` (its index, reverse and functions set) reads before its first step:
// X·Wᵀ (+ biases) for every step at once, its slices of R, the biases and peepholes, and its
// initial state.
Status prepare_direction(OnnxImportContext& ctx, const Recurrence& r, const RecurrentOperands& operands,
                         Direction& dir) {
  const int d = dir.index, D = operands.directions;
  const int64_t G = gate_count(r.cell);
  const std::string at = "/d" + std::to_string(d);
  ir::MatMulAttrs transposed;
  transposed.trans_b = true;
  IPU_ASSIGN_OR_RETURN(int wd, of_direction(ctx, operands.w, d, D, at + "/w"));
  IPU_ASSIGN_OR_RETURN(dir.recurrence, of_direction(ctx, operands.rw, d, D, at + "/r"));
  IPU_ASSIGN_OR_RETURN(dir.input_projection,
                       ctx.add_op(ir::OpKind::kMatMul, {operands.x_rows, wd}, transposed, at + "/x_w"));
  if (operands.biases >= 0) {
    IPU_ASSIGN_OR_RETURN(int b, of_direction(ctx, operands.biases, d, D, at + "/b"));
    IPU_ASSIGN_OR_RETURN(int wb, add_strided_copy(ctx, b, {G * r.hidden}, {1}, 0, at + "/wb"));
    IPU_ASSIGN_OR_RETURN(int rb, add_strided_copy(ctx, b, {G * r.hidden}, {1}, G * r.hidden, at + "/rb"));
    // GRU's candidate reads Rbh inside the reset gate's product: Rb goes with h·Rᵀ. Elsewhere
    // both biases are one row added to the input projection.
    if (r.cell == Cell::kGru) {
      dir.recurrence_bias = rb;
    } else {
      IPU_ASSIGN_OR_RETURN(wb, add_binary(ctx, wb, rb, BinaryKind::kAdd, at + "/bias"));
    }
    IPU_ASSIGN_OR_RETURN(dir.input_projection,
                         ctx.add_op(ir::OpKind::kBiasAdd, {dir.input_projection, wb}, {}, at + "/x_w_bias"));
  }
  if (operands.peepholes >= 0) {
    IPU_ASSIGN_OR_RETURN(int p, of_direction(ctx, operands.peepholes, d, D, at + "/p"));
    for (int64_t k = 0; k < 3; ++k) {
      IPU_ASSIGN_OR_RETURN(
          dir.peepholes[static_cast<size_t>(k)],
          add_strided_copy(ctx, p, {r.hidden}, {1}, k * r.hidden, at + "/p" + std::string(1, "iof"[k])));
    }
  }
  if (r.cell == Cell::kGru && !r.linear_before_reset) {
    // R's and Rb's rows split: z and r in the recurrence, h in the candidate's own product.
    const int64_t H = r.hidden;
    IPU_ASSIGN_OR_RETURN(dir.candidate_recurrence, block(ctx, dir.recurrence, 2, 3, at + "/r_h"));
    IPU_ASSIGN_OR_RETURN(dir.recurrence,
                         add_strided_copy(ctx, dir.recurrence, {2 * H, H}, {H, 1}, 0, at + "/r_zr"));
    if (dir.recurrence_bias >= 0) {
      IPU_ASSIGN_OR_RETURN(dir.candidate_bias, block(ctx, dir.recurrence_bias, 2, 3, at + "/rb_h"));
      IPU_ASSIGN_OR_RETURN(dir.recurrence_bias,
                           add_strided_copy(ctx, dir.recurrence_bias, {2 * H}, {1}, 0, at + "/rb_zr"));
    }
  }
  IPU_ASSIGN_OR_RETURN(dir.h, initial_state(ctx, r, 5, d, D, operands.batch_first, "initial_h"));
  if (r.cell == Cell::kLstm) {
    IPU_ASSIGN_OR_RETURN(dir.c, initial_state(ctx, r, 6, d, D, operands.batch_first, "initial_c"));
  }
  return Status();
}

Status convert_recurrent(OnnxImportContext& ctx, Cell cell) {
  const int64_t G = gate_count(cell);
  IPU_ASSIGN_OR_RETURN(int x, ctx.input(0));
  IPU_ASSIGN_OR_RETURN(int w, ctx.input(1));
  IPU_ASSIGN_OR_RETURN(int rw, ctx.input(2));
  const bool batch_first = ctx.int_attr("layout", 0) != 0;
  std::vector<int64_t> xs = ctx.shape(x);
  if (xs.size() != 3) return invalid_argument("X " + shape_text(xs) + " must have rank 3");
  IPU_RETURN_IF_ERROR(check_not_empty(xs, "X"));
  Recurrence r;
  r.cell = cell;
  r.steps = batch_first ? xs[1] : xs[0];
  r.batch = batch_first ? xs[0] : xs[1];
  const int64_t I = xs[2];
  const std::string direction =
      ctx.attribute("direction") ? ctx.attribute("direction")->s() : std::string("forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    return invalid_argument("direction '" + direction + "' is not forward, reverse or bidirectional");
  const int D = direction == "bidirectional" ? 2 : 1;
  const std::vector<int64_t> rs = ctx.shape(rw);
  if (rs.size() != 3 || rs[0] != D || rs[1] % G != 0 || rs[1] / G != rs[2])
    return invalid_argument("R " + shape_text(rs) + " must be [" + std::to_string(D) + ", " +
                            std::to_string(G) + "·hidden_size, hidden_size]");
  r.hidden = rs[2];
  if (ctx.int_attr("hidden_size", r.hidden) != r.hidden)
    return invalid_argument("hidden_size " + std::to_string(ctx.int_attr("hidden_size", 0)) +
                            " does not match R " + shape_text(rs));
  if (ctx.shape(w) != std::vector<int64_t>{D, G * r.hidden, I})
    return invalid_argument("W " + shape_text(ctx.shape(w)) + " must be " + shape_text({D, G * r.hidden, I}));
  r.clip = ctx.float_attr("clip", 0.0f);
  if (ctx.attribute("clip") && !(r.clip > 0.0f)) return invalid_argument("clip must be positive");
  r.input_forget = cell == Cell::kLstm && ctx.int_attr("input_forget", 0) != 0;
  r.linear_before_reset = cell == Cell::kGru && ctx.int_attr("linear_before_reset", 0) != 0;
  if (ctx.has_input(4)) {
    // Every sequence as long as X: what the unrolled steps compute. Shorter ones would need a mask.
    IPU_ASSIGN_OR_RETURN(std::vector<int64_t> lengths, ctx.int_constant_input(4));
    for (int64_t length : lengths) {
      if (length != r.steps)
        return unsupported("sequence_lens holds " + std::to_string(length) + ", not the sequence length " +
                           std::to_string(r.steps) + ": sequences shorter than X are not supported");
    }
  }
  IPU_ASSIGN_OR_RETURN(std::vector<Activation> functions, activations(ctx, cell, D));
  const size_t per_direction = functions.size() / static_cast<size_t>(D);

  // X as [T·B, I], time-major.
  if (batch_first) {
    IPU_ASSIGN_OR_RETURN(
        x, add_strided_copy(ctx, x, {r.steps, r.batch, I}, {I, r.steps * I, 1}, 0, "/time_major"));
  }
  IPU_ASSIGN_OR_RETURN(x, ctx.reshape(x, {r.steps * r.batch, I}, "/x_rows"));
  // The optional biases B [D, 2·G·H] and LSTM's peepholes P [D, 3·H] (-1: absent).
  int biases = -1, peepholes = -1;
  if (ctx.has_input(3)) {
    IPU_ASSIGN_OR_RETURN(biases, ctx.input(3));
    if (ctx.shape(biases) != std::vector<int64_t>{D, 2 * G * r.hidden})
      return invalid_argument("B " + shape_text(ctx.shape(biases)) + " must be " +
                              shape_text({D, 2 * G * r.hidden}));
  }
  if (cell == Cell::kLstm && ctx.has_input(7)) {
    IPU_ASSIGN_OR_RETURN(peepholes, ctx.input(7));
    if (ctx.shape(peepholes) != std::vector<int64_t>{D, 3 * r.hidden})
      return invalid_argument("P " + shape_text(ctx.shape(peepholes)) + " must be " +
                              shape_text({D, 3 * r.hidden}));
  }
  const RecurrentOperands operands{x, w, rw, biases, peepholes, D, batch_first};
  std::vector<Direction> directions(static_cast<size_t>(D));
  std::vector<std::vector<int>> hs(static_cast<size_t>(D));
  for (int d = 0; d < D; ++d) {
    Direction& dir = directions[static_cast<size_t>(d)];
    dir.index = d;
    dir.reverse = d == 1 || direction == "reverse";
    dir.functions.assign(
        functions.begin() + static_cast<std::ptrdiff_t>(per_direction * static_cast<size_t>(d)),
        functions.begin() + static_cast<std::ptrdiff_t>(per_direction * static_cast<size_t>(d + 1)));
    IPU_RETURN_IF_ERROR(prepare_direction(ctx, r, operands, dir));
    hs[static_cast<size_t>(d)].assign(static_cast<size_t>(r.steps), -1);
    for (int64_t k = 0; k < r.steps; ++k) {
      const int64_t t = dir.reverse ? r.steps - 1 - k : k;
      IPU_RETURN_IF_ERROR(step(ctx, r, dir, t));
      hs[static_cast<size_t>(d)][static_cast<size_t>(t)] = dir.h;
    }
  }
  return set_outputs(ctx, r, hs, directions, batch_first);
}

template <Cell kCell> Status convert_cell(OnnxImportContext& ctx) {
  return convert_recurrent(ctx, kCell);
}

} // namespace

std::vector<OnnxOpDef> recurrent_onnx_ops() {
  return {
      {"GRU",
       {7, 14, 22},
       {"activation_alpha", "activation_beta", "activations", "clip", "direction", "hidden_size", "layout",
        "linear_before_reset"},
       convert_cell<Cell::kGru>},
      {"LSTM",
       {7, 14, 22},
       {"activation_alpha", "activation_beta", "activations", "clip", "direction", "hidden_size",
        "input_forget", "layout"},
       convert_cell<Cell::kLstm>},
      {"RNN",
       {7, 14, 22},
       {"activation_alpha", "activation_beta", "activations", "clip", "direction", "hidden_size", "layout"},
       convert_cell<Cell::kRnn>},
  };
}

} // namespace ipu::frontend
