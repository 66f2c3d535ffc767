#!/usr/bin/python3
"""Independent float64 PyTorch reference for `ipurun train`.

Run with /usr/bin/python3 (Debian's python3-torch and python3-numpy; see scripts/setup-peers.sh).

    torch_reference.py train --model models/mlp_functional.json --init INIT_DIR \
        --batch-size 16 --steps 20 --out tests/data/torch_reference/mlp_functional_b16
    torch_reference.py check-init --model models/mlp_functional.json --init INIT_DIR \
        --batch-size 16 --trick-lr 1e-30

`train` starts from the weights of a checkpoint directory as `ipurun train --save-weights` writes
it (index.json mapping tensor names such as 'dense1/kernel' to float32 .npy files), builds the
model of a Keras-like JSON spec (Sequential or Functional; Flatten and Dense layers with
activations none/linear, relu, sigmoid, tanh, softmax; use_bias; Add and Concatenate in the
functional form), and trains it in float64 on the
synthetic MNIST set (synthetic_mnist.make(), the peers' definition that ipurun re-implements
bit-exactly), batches in order, no shuffling -- what `ipurun train --data synthetic:N
--steps-per-epoch STEPS` does. It writes OUT as a checkpoint directory in ipurun's layout
(index.json + one float32 .npy per tensor, '/' and ':' in names replaced by '.', which is ipurun's
file name for the plain names of these models; ipurun reads each file from the index, docs/outputs.md),
so OUT can also be given to `ipurun --weights`, plus OUT/reference.json: the configuration and the loss of every
step (float64; the loss of step k is computed with the weights before update k, as ipurun's
--step-log records it).

Semantics mirrored from ipucc (runtime/kernels/row_kernels.cpp, optimizer_kernels.cpp):
  * Dense: y = act(x @ kernel + bias), kernel [in, out] (Keras layout); Flatten is a row-major
    reshape of the NHWC sample.
  * loss = sparse categorical cross-entropy, mean over the batch.
      from_logits true:  F.cross_entropy(output, label).
      from_logits false: mean(-log(clamp(output[label], eps, 1 - eps))) with eps = float32(1e-7)
        and 1 - eps computed in float32 (0.99999988...), the constants of ipucc's kernel (and
        Keras's). Its gradient is zero where the clamp is active (ipucc: strictly inside
        (eps, 1-eps); torch.clamp: inclusive -- they differ only when p equals a bound exactly).
        reference.json counts the clamped samples.
  * The losses on float labels (the spec's loss, or --loss NAME like ipucc's, which keeps the
    spec's from_logits and delta; data from --data-npy FEATURES,LABELS): categorical and binary
    cross-entropy, mean squared and absolute error, Huber; see float_label_loss.
  * SGD, Keras form, done by hand (default --optimizer manual):  v = m*v - lr*g;  w += v, with
    v = 0 at the start; with momentum 0: w -= lr*g (no state). --optimizer torch uses
    torch.optim.SGD instead (b = m*b + g; w -= lr*b), identical for a constant learning rate
    (v = -lr*b); the optimizer state written with --optimizer-state is v in both cases, the
    'NAME/momentum' tensors of ipurun's checkpoints.
  * Adam and AdamW (--update adam|adamw): torch.optim.Adam / torch.optim.AdamW in float64 with
    betas (--beta1, --beta2), eps (--epsilon) and weight_decay (--weight-decay), Keras's defaults
    as ipucc's (lr 0.001, 0.9, 0.999, 1e-7; weight decay 0, AdamW 0.004), the spec's optimizer
    arguments not used (as `ipucc compile --optimizer adam` does with an SGD spec). The state
    written with --optimizer-state is exp_avg, exp_avg_sq and step, ipurun's 'NAME/adam_m',
    'NAME/adam_v' and 'NAME/adam_step'.
  * SGD with dampening, Nesterov momentum or weight decay (--dampening, --nesterov,
    --weight-decay with --update sgd): torch.optim.SGD with those arguments and the spec's (or
    given) learning rate and momentum; its state is written as ipurun's Keras-form velocity
    'NAME/momentum' = -lr*momentum_buffer, and 'NAME/momentum_step' (the step count) when dampening
    is set.
  * RMSProp, Adagrad and AdaMax (--update rmsprop|adagrad|adamax): torch.optim.RMSprop (Keras's
    rho as alpha; --rho, --momentum, --centered), torch.optim.Adagrad (lr_decay 0;
    --initial-accumulator-value) and torch.optim.Adamax (--beta1, --beta2), each with --epsilon and
    --weight-decay, at Keras's defaults as ipucc's (lr 0.001; rho 0.9; initial accumulator 0.1;
    epsilon 1e-7). State: 'NAME/rmsprop_v', 'NAME/rmsprop_momentum', 'NAME/rmsprop_mean_grad';
    'NAME/adagrad_sum'; 'NAME/adamax_m', 'NAME/adamax_u', 'NAME/adamax_step'.
  * LAMB (--update lamb): torch.optim has no LAMB, so class Lamb below computes the paper's
    equations (You et al. 2019, Algorithm 2, φ the identity) in float64: Adam's moments and bias
    corrections, u = m̂/(sqrt(v̂) + eps) + weight_decay·W, W -= lr·(‖W‖/‖u‖)·u (ratio 1 when either
    norm is 0), at Keras's defaults as ipucc's (lr 0.001, 0.9, 0.999, epsilon 1e-6). State:
    'NAME/lamb_m', 'NAME/lamb_v', 'NAME/lamb_step'.
  * --global-clipnorm C (any update): torch.nn.utils.clip_grad_norm_ on all gradients after the
    backward pass, before the update (ipucc --global-clipnorm).
  * The learning rate and momentum are the float32 values ipucc stores (the spec's numbers, or
    --learning-rate/--momentum, rounded to float32 then used in float64), unless
    --exact-hyperparameters.

Initial weights: ipurun cannot dump an executable's initial weights without training, so the
fixture generator (make_fixture.sh) and tests/e2e/test_torch_parity.sh use a trick: compile the
same model with `--learning-rate 1e-30 --momentum 0`, train ONE step and save. Each weight becomes
float32(w0 - 1e-30*g). For |w0| far above 1e-30*|g|, that rounds back to w0 exactly; the
zero-initialised biases become -1e-30*g (|.| ~ 1e-32 instead of 0). `check-init` verifies this
numerically for a given checkpoint: it recomputes g (float64, on the batch that trick step used)
and checks that for every non-tiny weight 1e-30*|g| is below 1e-6 of half an ulp of the weight
(so the step rounded back to w0 exactly), and that the tiny entries are bounded by 2*1e-30*|g|
(they were exact zeros, now off by ~1e-31 absolute -- invisible at float32 precision next to the
~1e-3 magnitudes they reach after one real step). Measured on models/mlp_functional.json, batch
16: all 244,032 kernel entries are exact (max (1e-30*|g|)/ulp(w) = 2.6e-19, and they are
bit-identical to an independent re-implementation of ipucc's glorot_uniform); the 490 biases are
<= 2.6e-31 in magnitude; and 20 steps of the real executable started from the trick checkpoint
give bit-identical losses and weights to 20 steps started from its built-in initial weights.

Kinks: ReLU makes the trajectory non-smooth. When a pre-activation of some sample sits within the
float32 noise of zero, float32 and float64 take different branches and the runs separate by far
more than rounding (a 1e-5 relative change of the learning rate does this at step 7 of the
committed fixture: losses differ by 1e-3 from step 8). reference.json therefore records, per step,
the smallest |pre-activation| of every ReLU layer over the batch ("relu_margin"); compare it with
the float32 noise of pre-activations (~1e-7 for these models) before blaming a mismatch on a bug.
"""
import argparse
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
ACTIVATIONS = ("none", "linear", "relu", "sigmoid", "tanh", "softmax")
LOSSES = ("sparse_categorical_crossentropy", "categorical_crossentropy", "binary_crossentropy",
          "mean_squared_error", "mean_absolute_error", "huber")
LOSS_ALIASES = {"mse": "mean_squared_error", "mae": "mean_absolute_error"}
EPS32 = float(np.float32(1e-7))
ONE_MINUS_EPS32 = float(np.float32(1.0) - np.float32(1e-7))


def peers_dir():
    return os.environ.get("IPUCC_PEERS_DIR") or os.path.normpath(os.path.join(ROOT, "..", "shared", "peers"))


def load_synthetic_module(path):
    import importlib.util
    if not os.path.isfile(path):
        sys.exit("torch_reference: %s not found (set IPUCC_PEERS_DIR or --synthetic-module)" % path)
    spec = importlib.util.spec_from_file_location("synthetic_mnist", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ----------------------------------------------------------------------------------------------
# Model spec

class Layer:
    def __init__(self, name, type_, inputs, units=None, activation="none", use_bias=True, axis=-1):
        self.name, self.type, self.inputs = name, type_, inputs
        self.units, self.activation, self.use_bias, self.axis = units, activation, use_bias, axis


def parse_spec(path):
    with open(path) as f:
        spec = json.load(f)
    kind = spec.get("type", "sequential")
    layers = []
    if kind == "sequential":
        inp = spec["input"]
        input_name, input_shape = inp.get("name", "input"), list(inp["shape"])
        prev = input_name
        for i, l in enumerate(spec["layers"]):
            name = l.get("name", "layer%d" % i)
            layers.append(make_layer(l, name, [prev]))
            prev = name
        output = prev
    elif kind == "functional":
        if len(spec["inputs"]) != 1:
            sys.exit("torch_reference: exactly one input supported")
        inp = spec["inputs"][0]
        input_name, input_shape = inp.get("name", "input"), list(inp["shape"])
        for i, l in enumerate(spec["nodes"]):
            name = l.get("name", "layer%d" % i)
            layers.append(make_layer(l, name, list(l["inputs"])))
        if len(spec["outputs"]) != 1:
            sys.exit("torch_reference: exactly one output supported")
        output = spec["outputs"][0]
    else:
        sys.exit("torch_reference: unknown model type %r" % kind)
    loss = spec.get("loss", {"type": "sparse_categorical_crossentropy", "from_logits": False})
    if isinstance(loss, str):
        loss = {"type": loss}
    if LOSS_ALIASES.get(loss.get("type"), loss.get("type")) not in LOSSES:
        sys.exit("torch_reference: unsupported loss %r" % loss)
    opt = spec.get("optimizer", {"type": "sgd"})
    if opt.get("type") != "sgd":
        sys.exit("torch_reference: unsupported optimizer %r" % opt)
    return {
        "name": spec.get("name", os.path.basename(path)),
        "input_name": input_name,
        "input_shape": input_shape,
        "layers": layers,
        "output": output,
        "loss": LOSS_ALIASES.get(loss["type"], loss["type"]),
        "from_logits": bool(loss.get("from_logits", False)),
        "delta": float(np.float32(loss.get("delta", 1.0))),
        "learning_rate": opt.get("learning_rate"),
        "momentum": opt.get("momentum"),
    }


def make_layer(l, name, inputs):
    t = l["type"]
    merge = t in ("Add", "Concatenate")
    if merge != (len(inputs) > 1):
        sys.exit("torch_reference: layer %s: %s takes %s" % (name, t, "several inputs" if merge else "one input"))
    if t in ("Flatten", "Add"):
        return Layer(name, t, inputs)
    if t == "Concatenate":
        return Layer(name, t, inputs, axis=int(l.get("axis", -1)))
    if t == "Dense":
        act = l.get("activation", "none")
        if act not in ACTIVATIONS:
            sys.exit("torch_reference: layer %s: unsupported activation %r" % (name, act))
        return Layer(name, t, inputs, int(l["units"]), "none" if act == "linear" else act, bool(l.get("use_bias", True)))
    sys.exit("torch_reference: layer %s: unsupported type %r (Flatten, Dense, Add, Concatenate)" % (name, t))


def weight_names(model):
    names = []
    for layer in model["layers"]:
        if layer.type == "Dense":
            names.append(layer.name + "/kernel")
            if layer.use_bias:
                names.append(layer.name + "/bias")
    return names


def forward(model, params, x, relu_margin=None):
    """The model's output; appends min |pre-activation| of every ReLU layer to relu_margin."""
    values = {model["input_name"]: x}
    for layer in model["layers"]:
        for name in layer.inputs:
            if name not in values:
                sys.exit("torch_reference: layer %s reads %r, not computed before it" % (layer.name, name))
        h = values[layer.inputs[0]]
        if layer.type == "Flatten":
            h = h.reshape(h.shape[0], -1)
        elif layer.type == "Add":
            for name in layer.inputs[1:]:
                h = h + values[name]
        elif layer.type == "Concatenate":
            h = torch.cat([values[name] for name in layer.inputs], dim=layer.axis)
        else:
            if h.dim() != 2:
                sys.exit("torch_reference: Dense %s needs a rank-2 input (add a Flatten)" % layer.name)
            h = h @ params[layer.name + "/kernel"]
            if layer.use_bias:
                h = h + params[layer.name + "/bias"]
            if layer.activation == "relu":
                if relu_margin is not None:
                    relu_margin.append(float(h.detach().abs().min()))
                h = torch.relu(h)
            elif layer.activation == "sigmoid":
                h = torch.sigmoid(h)
            elif layer.activation == "tanh":
                h = torch.tanh(h)
            elif layer.activation == "softmax":
                h = torch.softmax(h, dim=1)
        values[layer.name] = h
    return values[model["output"]]


def loss_fn(model, output, labels):
    """Returns (mean loss, number of samples whose probability the clamp changed)."""
    kind = model["loss"]
    if kind != "sparse_categorical_crossentropy":
        return float_label_loss(model, output, labels)
    if model["from_logits"]:
        return F.cross_entropy(output, labels), 0
    p = output.gather(1, labels[:, None]).squeeze(1)
    clamped = int(((p < EPS32) | (p > ONE_MINUS_EPS32)).sum())
    return (-torch.log(torch.clamp(p, EPS32, ONE_MINUS_EPS32))).mean(), clamped


def float_label_loss(model, output, labels):
    """The Keras losses on float labels [B, C], Keras's "sum over batch size" reduction, with
    torch's own functions where they have the same definition (cross_entropy with probability
    targets, binary_cross_entropy_with_logits, mse_loss, l1_loss, huber_loss: each a mean over
    every element, which equals the mean over rows of Keras's per-row mean); the probability forms
    clip like Keras (keras/src/backend/*/nn.py). Returns (loss, number of clamped probabilities)."""
    kind, y = model["loss"], labels
    if kind == "categorical_crossentropy":
        if model["from_logits"]:
            return F.cross_entropy(output, y), 0
        q = output / output.sum(dim=1, keepdim=True)
        clamped = int(((q < EPS32) | (q > ONE_MINUS_EPS32)).sum())
        return (-(y * torch.log(torch.clamp(q, EPS32, ONE_MINUS_EPS32))).sum(dim=1)).mean(), clamped
    if kind == "binary_crossentropy":
        if model["from_logits"]:
            return F.binary_cross_entropy_with_logits(output, y), 0
        clamped = int(((output < EPS32) | (output > ONE_MINUS_EPS32)).sum())
        p = torch.clamp(output, EPS32, ONE_MINUS_EPS32)
        return (-(y * torch.log(p) + (1 - y) * torch.log(1 - p))).mean(), clamped
    if kind == "mean_squared_error":
        return F.mse_loss(output, y), 0
    if kind == "mean_absolute_error":
        return F.l1_loss(output, y), 0
    return F.huber_loss(output, y, delta=model["delta"]), 0


# ----------------------------------------------------------------------------------------------
# Checkpoints in ipurun's layout

def file_name(tensor):
    return tensor.replace("/", ".").replace(":", ".") + ".npy"


def read_checkpoint(directory):
    with open(os.path.join(directory, "index.json")) as f:
        index = json.load(f)
    out = {}
    for name, fname in index.items():
        a = np.load(os.path.join(directory, fname))
        if a.dtype != np.float32:
            sys.exit("torch_reference: %s/%s: expected float32, got %s" % (directory, fname, a.dtype))
        out[name] = a
    return out


def write_checkpoint(directory, tensors):
    os.makedirs(directory, exist_ok=True)
    index = {}
    for name in sorted(tensors):
        fname = file_name(name)
        np.save(os.path.join(directory, fname), np.ascontiguousarray(tensors[name], dtype=np.float32))
        index[name] = fname
    with open(os.path.join(directory, "index.json"), "w") as f:
        f.write(json.dumps(index, indent=1, sort_keys=True) + "\n")


def load_params(model, init_dir):
    ckpt = read_checkpoint(init_dir)
    params = {}
    for layer in model["layers"]:
        if layer.type != "Dense":
            continue
        for suffix in ("kernel", "bias") if layer.use_bias else ("kernel",):
            name = layer.name + "/" + suffix
            if name not in ckpt:
                sys.exit("torch_reference: %s has no tensor %r" % (init_dir, name))
            params[name] = torch.from_numpy(ckpt[name].astype(np.float64)).requires_grad_(True)
        if params[layer.name + "/kernel"].dim() != 2 or (layer.units and params[layer.name + "/kernel"].shape[1] != layer.units):
            sys.exit("torch_reference: %s has shape %s, the spec says %d units"
                     % (layer.name + "/kernel", tuple(params[layer.name + "/kernel"].shape), layer.units))
    return params


def hyper(value, exact):
    return float(value) if exact else float(np.float32(value))


class Lamb:
    """LAMB in float64 from the paper's equations (torch.optim has none); the state per weight is
    named as torch.optim.Adam's (exp_avg, exp_avg_sq, step), and the learning rate is
    param_groups[0]["lr"], which a schedule sets before each step as for torch.optim's."""

    def __init__(self, params, lr, betas, eps, weight_decay):
        self.params, self.betas, self.eps, self.weight_decay = params, betas, eps, weight_decay
        self.param_groups = [{"lr": lr}]
        self.state = {p: {"exp_avg": torch.zeros_like(p.detach()), "exp_avg_sq": torch.zeros_like(p.detach()),
                          "step": 0} for p in params}

    @torch.no_grad()
    def step(self):
        b1, b2 = self.betas
        lr = self.param_groups[0]["lr"]
        for p in self.params:
            st = self.state[p]
            st["step"] += 1
            t = st["step"]
            g = p.grad
            st["exp_avg"].mul_(b1).add_((1 - b1) * g)
            st["exp_avg_sq"].mul_(b2).add_((1 - b2) * g * g)
            m_hat = st["exp_avg"] / (1 - b1 ** t)
            v_hat = st["exp_avg_sq"] / (1 - b2 ** t)
            u = m_hat / (v_hat.sqrt() + self.eps) + self.weight_decay * p
            w_norm, u_norm = float(p.norm()), float(u.norm())
            ratio = w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0
            p.sub_(lr * ratio * u)


def make_data(args, count):
    if args.data_npy:
        # `ipurun --data npy:F,L`: features, then class indices (integers) or float labels.
        features, labels = args.data_npy.split(",")
        X, y = np.load(features)[:count], np.load(labels)[:count]
        if len(X) < count or len(y) < count:
            sys.exit("torch_reference: %s has fewer than %d samples" % (args.data_npy, count))
        y = y.astype(np.float64 if y.dtype.kind == "f" else np.int64)
        return torch.from_numpy(X.astype(np.float64)), torch.from_numpy(y)
    module = load_synthetic_module(args.synthetic_module or os.path.join(peers_dir(), "synthetic_mnist.py"))
    X, y = module.make(count)
    return torch.from_numpy(X.astype(np.float64)), torch.from_numpy(y.astype(np.int64))


def apply_loss_override(model, args):
    """`--loss NAME` as ipucc compile takes it: the kind changes, from_logits and delta stay."""
    if args.loss:
        name = LOSS_ALIASES.get(args.loss, args.loss)
        if name not in LOSSES:
            sys.exit("torch_reference: unsupported --loss %r" % args.loss)
        model["loss"] = name
    return model


# ----------------------------------------------------------------------------------------------
# Commands

def keras_schedule(text, step, base):
    """The learning rate at update `step` (0 first) of an ipucc --lr-schedule (per update), with
    keras.optimizers.schedules' formulas, in float64; `base` stands for an unset
    initial_learning_rate."""
    kind, _, rest = text.partition(":")
    c = dict(item.split("=", 1) for item in rest.split(",")) if rest else {}
    num = lambda k, d=None: float(c[k]) if k in c else d
    flag = lambda k: c.get(k, "0") in ("1", "true")
    initial, t = num("initial_learning_rate", base), float(step)
    if kind == "constant":
        return initial
    if kind == "exponential":
        p = t / num("decay_steps")
        return initial * num("decay_rate") ** (math.floor(p) if flag("staircase") else p)
    if kind == "piecewise":
        bounds, values = [float(b) for b in c["boundaries"].split("/")], [float(v) for v in c["values"].split("/")]
        return next((v for b, v in zip(bounds, values) if t <= b), values[-1])
    if kind == "cosine":
        d, alpha, target, w = num("decay_steps"), num("alpha", 0.0), num("warmup_target"), num("warmup_steps", 0.0)
        decayed = lambda s, start: start * ((1 - alpha) * 0.5 * (1 + math.cos(math.pi * s / d)) + alpha)
        if target is None:
            return decayed(min(t, d), initial)
        t = min(t, d + w)
        return initial + (target - initial) * t / w if t < w else decayed(t - w, target)
    if kind == "polynomial":
        d, end, power = num("decay_steps"), num("end_learning_rate", 0.0001), num("power", 1.0)
        if flag("cycle"):
            d *= 1.0 if t == 0 else math.ceil(t / d)
        else:
            t = min(t, d)
        return (initial - end) * (1 - t / d) ** power + end
    sys.exit("torch_reference: unknown schedule " + text)


def cmd_train(args):
    torch.set_num_threads(args.threads)
    model = apply_loss_override(parse_spec(args.model), args)
    adam = args.update != "sgd"
    torch_sgd = not adam and (args.dampening or args.nesterov or args.weight_decay)
    if adam:
        epsilon = args.epsilon if args.epsilon is not None else 1e-6 if args.update == "lamb" else 1e-7
        defaults = {"learning_rate": 0.001, "beta_1": args.beta1, "beta_2": args.beta2, "epsilon": epsilon,
                    "weight_decay": 0.004 if args.update == "adamw" else 0.0, "rho": args.rho,
                    "momentum": 0.0, "centered": args.centered,
                    "initial_accumulator_value": args.initial_accumulator_value}
        used = {"adam": ("beta_1", "beta_2", "epsilon", "weight_decay"),
                "adamw": ("beta_1", "beta_2", "epsilon", "weight_decay"),
                "adamax": ("beta_1", "beta_2", "epsilon", "weight_decay"),
                "lamb": ("beta_1", "beta_2", "epsilon", "weight_decay"),
                "rmsprop": ("rho", "momentum", "epsilon", "centered", "weight_decay"),
                "adagrad": ("initial_accumulator_value", "epsilon", "weight_decay")}[args.update]
        given = {"weight_decay": args.weight_decay, "momentum": args.momentum}
        adam_spec = {k: given[k] if given.get(k) is not None else defaults[k] for k in used}
        adam_hyper = {k: v if isinstance(v, bool) else hyper(v, args.exact_hyperparameters) for k, v in adam_spec.items()}
        lr_spec, m_spec = (args.learning_rate if args.learning_rate is not None else 0.001), 0.0
    else:
        lr_spec = args.learning_rate if args.learning_rate is not None else model["learning_rate"]
        m_spec = args.momentum if args.momentum is not None else model["momentum"]
    if lr_spec is None:
        sys.exit("torch_reference: the spec has no learning_rate; pass --learning-rate")
    m_spec = 0.0 if m_spec is None else m_spec
    lr, momentum = hyper(lr_spec, args.exact_hyperparameters), hyper(m_spec, args.exact_hyperparameters)
    B, steps = args.batch_size, args.steps
    X, y = make_data(args, B * steps)
    params = load_params(model, args.init)
    names = weight_names(model)
    zeroed = 0
    if args.update == "lamb":
        # The trick's initial weights hold zero-initialised biases as ~1e-31, which LAMB's trust
        # ratio ‖W‖/‖u‖ would turn into steps 1e-30 times too small, where ipucc's float32 ‖W‖²
        # (1e-62) is 0 and its ratio 1, as for the exact zeros ipucc's own initial weights hold.
        with torch.no_grad():
            for n in names:
                tiny = params[n].abs() < args.tiny_init
                zeroed += int(tiny.sum())
                params[n][tiny] = 0.0
    velocity = {n: torch.zeros_like(params[n], requires_grad=False) for n in names}
    opt = None
    weights = [params[n] for n in names]
    if adam:
        h = adam_hyper
        if args.update in ("adam", "adamw", "adamax"):
            kind = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW, "adamax": torch.optim.Adamax}[args.update]
            opt = kind(weights, lr=lr, betas=(h["beta_1"], h["beta_2"]), eps=h["epsilon"], weight_decay=h["weight_decay"])
        elif args.update == "lamb":
            kind = Lamb
            opt = kind(weights, lr=lr, betas=(h["beta_1"], h["beta_2"]), eps=h["epsilon"], weight_decay=h["weight_decay"])
        elif args.update == "rmsprop":
            kind = torch.optim.RMSprop
            opt = kind(weights, lr=lr, alpha=h["rho"], eps=h["epsilon"], weight_decay=h["weight_decay"],
                       momentum=h["momentum"], centered=h["centered"])
        else:
            kind = torch.optim.Adagrad
            opt = kind(weights, lr=lr, eps=h["epsilon"], weight_decay=h["weight_decay"],
                       initial_accumulator_value=h["initial_accumulator_value"])
    elif args.optimizer == "torch" or torch_sgd:
        sgd_hyper = {"dampening": hyper(args.dampening or 0.0, args.exact_hyperparameters),
                     "nesterov": bool(args.nesterov),
                     "weight_decay": hyper(args.weight_decay or 0.0, args.exact_hyperparameters)}
        opt = torch.optim.SGD(weights, lr=lr, momentum=momentum, **sgd_hyper)
    rates = [float(np.float32(keras_schedule(args.lr_schedule, s, lr))) if args.lr_schedule else lr
             for s in range(steps)]
    if args.lr_schedule and opt is not None and not adam:
        sys.exit("torch_reference: --lr-schedule with SGD takes the Keras form by hand (--optimizer manual): "
                 "torch.optim.SGD scales its accumulated buffer by the current rate, Keras and ipucc each gradient")
    losses, margins, clamped_total = [], [], 0
    clip = hyper(args.global_clipnorm, args.exact_hyperparameters) if args.global_clipnorm else None
    norms = []
    for s in range(steps):
        rate = rates[s]
        if opt is not None:
            for group in opt.param_groups:
                group["lr"] = rate
        xb, yb = X[s * B:(s + 1) * B], y[s * B:(s + 1) * B]
        for n in names:
            params[n].grad = None
        margins.append([])
        loss, clamped = loss_fn(model, forward(model, params, xb, margins[-1]), yb)
        clamped_total += clamped
        loss.backward()
        losses.append(float(loss))
        if clip is not None:
            # torch's factor min(1, clip / (norm + 1e-6)), applied to every gradient in place.
            norms.append(float(torch.nn.utils.clip_grad_norm_(weights, clip)))
        if opt is not None:
            opt.step()
            continue
        with torch.no_grad():
            for n in names:
                g = params[n].grad
                if momentum > 0:
                    velocity[n].mul_(momentum).sub_(rate * g)
                    params[n].add_(velocity[n])
                else:
                    params[n].sub_(rate * g)
    if opt is not None and not adam and momentum > 0:
        for n in names:
            velocity[n] = -lr * opt.state[params[n]]["momentum_buffer"]
    out = {n: params[n].detach().numpy().astype(np.float32) for n in names}
    if args.optimizer_state and adam:
        state_names = {"adam": (("adam_m", "exp_avg"), ("adam_v", "exp_avg_sq")),
                       "adamw": (("adam_m", "exp_avg"), ("adam_v", "exp_avg_sq")),
                       "adamax": (("adamax_m", "exp_avg"), ("adamax_u", "exp_inf")),
                       "lamb": (("lamb_m", "exp_avg"), ("lamb_v", "exp_avg_sq")),
                       "rmsprop": (("rmsprop_v", "square_avg"), ("rmsprop_momentum", "momentum_buffer"),
                                   ("rmsprop_mean_grad", "grad_avg")),
                       "adagrad": (("adagrad_sum", "sum"),)}[args.update]
        for n in names:
            state = opt.state[params[n]]
            for ours, theirs in state_names:
                if theirs in state:
                    out[n + "/" + ours] = state[theirs].numpy().astype(np.float32)
            step_name = {"adam": "adam_step", "adamw": "adam_step", "adamax": "adamax_step",
                         "lamb": "lamb_step"}.get(args.update)
            if step_name:
                out[n + "/" + step_name] = np.array([float(state["step"])], dtype=np.float32)
    elif args.optimizer_state and momentum > 0:
        for n in names:
            out[n + "/momentum"] = velocity[n].numpy().astype(np.float32)
            if torch_sgd and args.dampening:
                out[n + "/momentum_step"] = np.array([float(steps)], dtype=np.float32)
    write_checkpoint(args.out, out)
    reference = {
        "description": "float64 PyTorch reference of `ipurun train` (scripts/reference/torch_reference.py); "
                       "losses[k] is the mean loss of step k+1, computed before its update; the .npy files "
                       "listed in index.json are the weights after the last step, rounded to float32",
        "model": os.path.relpath(os.path.abspath(args.model), ROOT) if os.path.abspath(args.model).startswith(ROOT) else args.model,
        "model_name": model["name"],
        "init": args.init_description or "checkpoint " + args.init,
        "data": ("npy:%s (first %d samples, in order, no shuffle)"
                 % (",".join(os.path.relpath(os.path.abspath(f), ROOT) for f in args.data_npy.split(",")), B * steps)
                 if args.data_npy
                 else "synthetic:%d (synthetic_mnist.make, in order, no shuffle)" % (B * steps)),
        "batch_size": B,
        "steps": steps,
        "loss": {"type": model["loss"], "from_logits": model["from_logits"],
                 **({"delta": model["delta"]} if model["loss"] == "huber" else {}),
                 "ipucc_flags": "--loss " + args.loss if args.loss else "",
                 "clamp": None if model["from_logits"] else [EPS32, ONE_MINUS_EPS32],
                 "clamped_samples": clamped_total},
        "optimizer": ({"type": args.update, "implementation": ("by hand from the LAMB paper's equations (class Lamb)" if kind is Lamb
                                          else "torch.optim." + kind.__name__),
                       "learning_rate": lr, "learning_rate_spec": lr_spec, **adam_hyper,
                       "lr_schedule": args.lr_schedule, "learning_rates": rates,
                       "ipucc_flags": args.ipucc_flags,
                       "spec": adam_spec,
                       "hyperparameters": "as given" if args.exact_hyperparameters else "rounded to float32 like ipucc"}
                      if adam else
                      {"type": "sgd", "form": "keras: v = m*v - lr*g; w += v",
                       "implementation": "by hand" if opt is None else "torch.optim.SGD",
                       "learning_rate": lr, "momentum": momentum,
                       "lr_schedule": args.lr_schedule, "learning_rates": rates,
                       **({"ipucc_flags": args.ipucc_flags} if args.lr_schedule else {}),
                       **({"dampening": sgd_hyper["dampening"], "nesterov": sgd_hyper["nesterov"],
                           "weight_decay": sgd_hyper["weight_decay"], "ipucc_flags": args.ipucc_flags}
                          if torch_sgd else {"ipucc_flags": args.ipucc_flags} if args.ipucc_flags else {}),
                       "learning_rate_spec": lr_spec, "momentum_spec": m_spec,
                       "hyperparameters": "as given" if args.exact_hyperparameters else "rounded to float32 like ipucc"}),
        "precision": "float64 (inputs, weights, activations, gradients, optimizer); weights written as float32",
        "torch_version": torch.__version__,
        "tensors": sorted(out),
        "losses": losses,
        **({"init_tiny_zeroed": {"count": zeroed, "below": args.tiny_init,
                                 "why": "the trick's ~1e-31 biases stand for zero-initialised ones (LAMB's "
                                        "trust ratio is 1 for a zero weight; ipucc's float32 squared norm of "
                                        "1e-31 is 0)"}}
           if args.update == "lamb" else {}),
        **({"clipping": {"global_clipnorm": clip, "implementation": "torch.nn.utils.clip_grad_norm_ (float64)",
                         "norms_before_clipping": norms,
                         "clipped_steps": sum(1 for n in norms if clip / (n + 1e-6) < 1.0)}}
           if clip is not None else {}),
        "relu_margin": {
            "description": "per step, min over the batch of |pre-activation| of each ReLU layer (in order); "
                           "float32 runs may take the other branch where this is near their rounding noise",
            "layers": [l.name for l in model["layers"] if l.type == "Dense" and l.activation == "relu"],
            "per_step": margins,
            "min": min((v for m in margins for v in m), default=None),
        },
    }
    with open(os.path.join(args.out, "reference.json"), "w") as f:
        f.write(json.dumps(reference, indent=1) + "\n")
    print("torch_reference: %s, batch %d, %d steps, lr %.9g, momentum %.9g, %s -> %s"
          % (model["name"], B, steps, lr, momentum, reference["optimizer"]["implementation"], args.out))
    print("  losses: %s ... %s" % (" ".join("%.6f" % l for l in losses[:5]), "%.6f" % losses[-1]))
    if margins and margins[0]:
        low = min((v, k + 1) for k, m in enumerate(margins) for v in m)
        print("  smallest |ReLU pre-activation|: %.2e (step %d)" % low)
    if clamped_total:
        print("  note: the probability clamp was active for %d samples" % clamped_total)


def ulp32(a):
    a = np.abs(a.astype(np.float32))
    return (np.nextafter(a, np.float32(np.inf)) - a).astype(np.float64)


def cmd_check_init(args):
    """Verifies that a `--learning-rate LR --momentum 0`, one-step checkpoint holds the initial weights."""
    torch.set_num_threads(args.threads)
    model = apply_loss_override(parse_spec(args.model), args)
    lr = float(np.float32(args.trick_lr))
    X, y = make_data(args, args.batch_size)
    params = load_params(model, args.init)
    loss, _ = loss_fn(model, forward(model, params, X), y)
    loss.backward()
    ok = True
    print("check-init: %s, trick lr %.3g, loss at the checkpoint %.9f" % (args.init, lr, float(loss)))
    for name in weight_names(model):
        w = params[name].detach().numpy().astype(np.float32)
        step = lr * np.abs(params[name].grad.numpy())           # |lr * g| of the trick step
        tiny = np.abs(w) < args.tiny
        big = ~tiny
        ratio = float((step[big] / ulp32(w[big])).max()) if big.any() else 0.0
        tiny_max = float(np.abs(w[tiny]).max()) if tiny.any() else 0.0
        # ipucc sums a gradient in float32, so where float64 finds exactly 0 (mean absolute error's
        # signs cancelling over the batch) it may find the sum's rounding error, ~1e-7 of the
        # tensor's largest gradient: the weight is then ~lr times that (1e-39), not 0.
        rounding = 2 * lr * 1e-6 * float(np.abs(params[name].grad.numpy()).max())
        tiny_bound = float((2 * step[tiny]).max()) if tiny.any() else 0.0
        good = ratio < 0.5e-6 and (not tiny.any() or bool((np.abs(w[tiny]) <= 2 * step[tiny] + rounding + 1e-45).all()))
        ok &= good
        print("  %-16s %7d exact (max |lr*g|/ulp(w) = %.2e)  %5d tiny (max |w| = %.2e, bound 2*lr*|g| = %.2e)  %s"
              % (name, int(big.sum()), ratio, int(tiny.sum()), tiny_max, tiny_bound, "ok" if good else "FAIL"))
    print("check-init: %s" % ("the checkpoint holds the initial weights (see the docstring)" if ok else "FAILED"))
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--model", required=True, help="Keras-like JSON spec (models/*.json)")
    common.add_argument("--init", required=True, help="checkpoint directory of the starting weights")
    common.add_argument("--batch-size", type=int, required=True)
    common.add_argument("--synthetic-module", help="synthetic_mnist.py (default: $IPUCC_PEERS_DIR or ../shared/peers)")
    common.add_argument("--threads", type=int, default=1)
    common.add_argument("--data-npy", help="FEATURES.npy,LABELS.npy instead of the synthetic set (like ipurun --data npy:...)")
    common.add_argument("--loss", help="override the spec's loss, keeping its from_logits and delta (like ipucc --loss)")

    t = sub.add_parser("train", parents=[common], help="train in float64 and write a fixture")
    t.add_argument("--steps", type=int, required=True)
    t.add_argument("--out", required=True, help="fixture directory (checkpoint layout + reference.json)")
    t.add_argument("--learning-rate", type=float, help="override the spec (like ipucc --learning-rate)")
    t.add_argument("--momentum", type=float, help="override the spec (like ipucc --momentum)")
    t.add_argument("--lr-schedule", help="a learning-rate schedule per update, as ipucc --lr-schedule takes it "
                                        "(Keras's formulas; the rate rounded to float32 as ipucc streams it)")
    t.add_argument("--exact-hyperparameters", action="store_true",
                   help="use lr/momentum as given instead of their float32 roundings")
    t.add_argument("--optimizer", choices=("manual", "torch"), default="manual",
                   help="Keras-form SGD by hand (default) or torch.optim.SGD")
    t.add_argument("--optimizer-state", action="store_true",
                   help="also write the optimizer state (NAME/momentum, or NAME/adam_m, adam_v, adam_step)")
    t.add_argument("--update", choices=("sgd", "adam", "adamw", "rmsprop", "adagrad", "adamax", "lamb"), default="sgd",
                   help="the optimizer, like ipucc --optimizer (torch.optim's of that name)")
    t.add_argument("--beta1", type=float, default=0.9, help="Adam/AdamW/AdaMax (like ipucc --beta1)")
    t.add_argument("--beta2", type=float, default=0.999, help="Adam/AdamW/AdaMax (like ipucc --beta2)")
    t.add_argument("--epsilon", type=float, help="all but SGD (like ipucc --epsilon; default 1e-7, LAMB 1e-6)")
    t.add_argument("--weight-decay", type=float, help="any optimizer (default 0, AdamW 0.004, like ipucc)")
    t.add_argument("--dampening", type=float, help="SGD (like ipucc --dampening)")
    t.add_argument("--nesterov", action="store_true", help="SGD (like ipucc --nesterov)")
    t.add_argument("--rho", type=float, default=0.9, help="RMSProp (torch's alpha; like ipucc --rho)")
    t.add_argument("--centered", action="store_true", help="RMSProp (like ipucc --centered)")
    t.add_argument("--initial-accumulator-value", type=float, default=0.1, help="Adagrad (like ipucc)")
    t.add_argument("--global-clipnorm", type=float,
                   help="any optimizer: clip the gradients' global norm first, torch.nn.utils.clip_grad_norm_ "
                        "(like ipucc --global-clipnorm)")
    t.add_argument("--tiny-init", type=float, default=1e-20,
                   help="LAMB: initial weights below this in magnitude start at 0 (the trick's zero biases)")
    t.add_argument("--ipucc-flags", default="", help="the ipucc compile flags this run mirrors (recorded)")
    t.add_argument("--init-description", help="how the initial weights were made (recorded in reference.json)")

    c = sub.add_parser("check-init", parents=[common], help="verify the tiny-learning-rate trick")
    c.add_argument("--trick-lr", type=float, default=1e-30)
    c.add_argument("--tiny", type=float, default=1e-20, help="weights below this are treated as zero-initialised")

    args = ap.parse_args()
    if args.command == "train":
        return cmd_train(args) or 0
    return cmd_check_init(args)


if __name__ == "__main__":
    sys.exit(main())
