# SPDX-License-Identifier: Apache-2.0
"""The op table of the conformance suite (test_conformance.py), OpInfo-style.

Each Entry names the torch callables it covers (functions, Tensor methods,
nn modules), a list of callables taking only tensors (constant arguments
are baked in), a sample generator (dtype -> list of argument tuples: several
shapes, broadcasting, 0-d, empty and non-contiguous inputs where the op
allows them) and the dtypes it must compile for. One compiled graph runs all
samples and callables of an entry for one dtype, so the suite compiles one
graph per (entry, dtype).
"""
import math
from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F

F32, F16, BF16, I64, I32, BOOL = (torch.float32, torch.float16, torch.bfloat16, torch.int64,
                                  torch.int32, torch.bool)
FLOATS = (F32, F16, BF16)
NUMS = FLOATS + (I64, I32)
ALL = NUMS + (BOOL,)


@dataclass
class Entry:
    name: str
    covers: list
    fns: list
    samples: object  # dtype -> list of tuples of tensors
    dtypes: tuple = FLOATS
    tol: dict = field(default_factory=dict)  # dtype -> (rtol, atol)
    other_samples: int = 2  # samples run for dtypes after the first (compile time)


def make(shape, dtype, low=None, high=None):
    """Random tensor: floats ~ 2 * N(0, 1) (clamped to [low, high] when given), ints in [-5, 5], bools."""
    if dtype == BOOL:
        return torch.randint(0, 2, shape).bool()
    if not dtype.is_floating_point:
        lo = -5 if low is None else int(low)
        return torch.randint(lo, 6 if high is None else int(high), shape, dtype=dtype)
    x = torch.randn(shape) * 2
    if low is not None or high is not None:
        x = x.clamp(low, high)
        if low is not None and low > 0:
            x = x.abs() + low
    return x.to(dtype)


def unary(low=None, high=None):
    """Shapes for elementwise unary ops: 2-D, 0-d, empty, transposed, strided."""
    def gen(dt):
        m = lambda *s: make(s, dt, low, high)  # noqa: E731
        return [(m(3, 4),), (m(),), (m(0, 3),), (m(4, 3).t(),), (m(3, 8)[:, ::2],)]
    return gen


def binary(low=None):
    """Broadcasting pairs, a 0-d operand, empty and non-contiguous inputs."""
    def gen(dt):
        m = lambda *s: make(s, dt, low)  # noqa: E731
        return [(m(3, 4), m(4)), (m(2, 1, 4), m(3, 1)), (m(), m(3)), (m(0, 3), m(3)),
                (m(4, 3).t(), m(3, 8)[:, ::2])]
    return gen


def ternary(dt):
    m = lambda *s: make(s, dt)  # noqa: E731
    return [(m(3, 4), m(4), m(3, 1)), (m(2, 3), m(2, 3), m()), (m(4, 3).t(), m(3, 4), m(4))]


def shapes(*specs, low=None):
    """Explicit argument shapes: each spec is a tuple of shapes (one per argument)."""
    def gen(dt):
        return [tuple(make(s, dt, low) for s in spec) for spec in specs]
    return gen


def meth(name, *args, n=1, **kwargs):
    """x.name(<n - 1 more tensors>, *args, **kwargs) as a function of n
    tensors (method call syntax; constant arguments written into the call)."""
    params = ["x"] + [f"t{i}" for i in range(1, n)]
    call = params[1:] + [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    return eval(f"lambda {', '.join(params)}: x.{name}({', '.join(call)})")  # noqa: S307


def module(cls, *args, **kwargs):
    """An nn.Module instance (eval mode, seeded parameters) as a callable."""
    torch.manual_seed(1)
    m = cls(*args, **kwargs).eval()
    return m


E = Entry
LOW_TOL = {F16: (2e-3, 2e-3), BF16: (1.6e-2, 1.6e-2)}
ENTRIES = []

# ---- elementwise unary: torch function + Tensor method -------------------------------
for name, dts, low in [
        ("sin", NUMS, None), ("cos", NUMS, None), ("tan", FLOATS, -1.2), ("atan", NUMS, None),
        ("floor", NUMS, None), ("ceil", NUMS, None), ("round", NUMS, None), ("trunc", NUMS, None),
        ("frac", FLOATS, None), ("log1p", FLOATS, 0.01), ("expm1", NUMS, None), ("log2", FLOATS, 0.01),
        ("log10", FLOATS, 0.01), ("exp2", NUMS, None), ("sinh", FLOATS, None), ("cosh", FLOATS, None),
        ("reciprocal", FLOATS, 0.1), ("exp", NUMS, None), ("log", FLOATS, 0.01), ("sqrt", FLOATS, 0.0),
        ("rsqrt", FLOATS, 0.01), ("tanh", NUMS, None), ("sigmoid", NUMS, None), ("abs", NUMS, None),
        ("neg", NUMS, None), ("relu", NUMS, None), ("erf", NUMS, None), ("sign", ALL, None),
        ("square", NUMS, None), ("isnan", ALL, None), ("isinf", ALL, None), ("isfinite", ALL, None),
        ("logical_not", ALL, None), ("fix", NUMS, None), ("sgn", NUMS, None), ("negative", NUMS, None),
        ("absolute", NUMS, None)]:
    high = 1.2 if name == "tan" else None
    dts = tuple(d for d in dts if d != I32)  # int32 unary ops: as int64 (promotion is tested by binary ops)
    ENTRIES.append(E(name, [f"torch.{name}", f"Tensor.{name}"],
                     [getattr(torch, name), meth(name)], unary(low, high), dts, LOW_TOL))
ENTRIES.append(E("round_decimals", ["torch.round(decimals)"], [lambda x: torch.round(x, decimals=2)],
                 unary(), (torch.float32,)))
ENTRIES.append(E("nan_to_num", ["torch.nan_to_num"],
                 [lambda x: torch.nan_to_num(torch.log(x)), lambda x: torch.nan_to_num(x / 0, nan=1.0, posinf=2.0)],
                 unary(), FLOATS))

# ---- elementwise binary ---------------------------------------------------------------
for name, dts in [("add", ALL), ("sub", NUMS), ("mul", ALL), ("div", NUMS), ("maximum", ALL),
                  ("minimum", ALL), ("eq", ALL), ("ne", ALL), ("lt", NUMS), ("le", NUMS), ("gt", NUMS),
                  ("ge", NUMS), ("fmax", NUMS), ("fmin", NUMS), ("logical_and", ALL), ("logical_or", ALL),
                  ("logical_xor", ALL), ("multiply", NUMS), ("subtract", NUMS), ("true_divide", NUMS),
                  ("greater", NUMS), ("less_equal", NUMS), ("not_equal", NUMS)]:
    ENTRIES.append(E(name, [f"torch.{name}", f"Tensor.{name}"], [getattr(torch, name), meth(name, n=2)],
                     binary(), dts, LOW_TOL))
ENTRIES.append(E("rsub", ["torch.rsub"], [torch.rsub, lambda x, y: torch.rsub(x, y, alpha=2)], binary(), NUMS, LOW_TOL))
ENTRIES.append(E("pow", ["torch.pow", "Tensor.pow", "Tensor.__pow__"],
                 [torch.pow, meth("pow", n=2), lambda x, y: x ** 2 + x.abs() ** y.abs()], binary(0.1), FLOATS,
                 {F16: (5e-3, 5e-3), BF16: (3e-2, 3e-2)}))
ENTRIES.append(E("bitwise_bool", ["torch.bitwise_and", "torch.bitwise_or", "torch.bitwise_xor", "Tensor.bitwise_not"],
                 [torch.bitwise_and, torch.bitwise_or, torch.bitwise_xor, lambda x, y: x.bitwise_not()],
                 binary(), (BOOL,)))
ENTRIES.append(E("operators", ["Tensor.__add__", "__sub__", "__mul__", "__truediv__", "__matmul__", "__neg__"],
                 [lambda x, y: (x + y, x - 2 * y, 3.5 / (x.abs() + 1), -x, x > y, x != 1)], binary(), NUMS, LOW_TOL))
ENTRIES.append(E("div_rounding", ["torch.div(rounding_mode)", "torch.floor_divide"],
                 [lambda x, y: torch.div(x, y, rounding_mode="trunc"), lambda x, y: torch.div(x, y, rounding_mode="floor"),
                  torch.floor_divide], binary(0.5), FLOATS, LOW_TOL))
ENTRIES.append(E("clamp", ["torch.clamp", "Tensor.clamp", "torch.clip", "torch.clamp_min", "torch.clamp_max"],
                 [lambda x: torch.clamp(x, -1, 0.5), lambda x: x.clamp(min=0), lambda x: torch.clip(x, max=1),
                  lambda x: torch.clamp_min(x, -0.5), lambda x: torch.clamp_max(x, 0.25)], unary(), FLOATS))
ENTRIES.append(E("where", ["torch.where", "Tensor.where", "Tensor.masked_fill"],
                 [lambda c, x, y: torch.where(c > 0, x, y), lambda c, x, y: x.where(c > 0, y),
                  lambda c, x, y: c.masked_fill(x > 0, 2.0)], ternary, NUMS))
ENTRIES.append(E("lerp", ["torch.lerp", "Tensor.lerp"],
                 [lambda x, y, w: torch.lerp(x, y, w), lambda x, y, w: x.lerp(y, 0.3)], ternary, FLOATS, LOW_TOL))
ENTRIES.append(E("addcmul", ["torch.addcmul", "torch.addcdiv", "Tensor.addcmul"],
                 [lambda x, y, z: torch.addcmul(x, y, z, value=0.5), lambda x, y, z: torch.addcdiv(x, y, z.abs() + 1),
                  lambda x, y, z: x.addcmul(y, z)], ternary, FLOATS, {F16: (4e-3, 4e-3), BF16: (3e-2, 3e-2)}))

# ---- activations: F.*, modules ----------------------------------------------------------
ACTS = [
    ("relu6", [F.relu6, module(nn.ReLU6)], NUMS), ("hardtanh", [lambda x: F.hardtanh(x, -0.5, 2.0), module(nn.Hardtanh)], FLOATS),
    ("hardswish", [F.hardswish, module(nn.Hardswish)], FLOATS), ("hardsigmoid", [F.hardsigmoid, module(nn.Hardsigmoid)], FLOATS),
    ("mish", [F.mish, module(nn.Mish)], FLOATS), ("softplus", [F.softplus, lambda x: F.softplus(x, beta=2.0, threshold=3.0), module(nn.Softplus)], FLOATS),
    ("logsigmoid", [F.logsigmoid, module(nn.LogSigmoid)], FLOATS), ("softsign", [F.softsign, module(nn.Softsign)], FLOATS),
    ("tanhshrink", [F.tanhshrink, module(nn.Tanhshrink)], FLOATS),
    ("elu", [F.elu, lambda x: F.elu(x, alpha=0.5), module(nn.ELU)], FLOATS), ("celu", [lambda x: F.celu(x, alpha=2.0), module(nn.CELU), torch.celu], FLOATS),
    ("selu", [F.selu, module(nn.SELU), torch.selu], FLOATS),
    ("leaky_relu", [F.leaky_relu, lambda x: F.leaky_relu(x, 0.2), module(nn.LeakyReLU, 0.1)], FLOATS),
    ("rrelu", [module(nn.RReLU)], FLOATS), ("hardshrink", [F.hardshrink, module(nn.Hardshrink), meth("hardshrink", 0.3)], FLOATS),
    ("softshrink", [F.softshrink, module(nn.Softshrink, 0.2)], FLOATS),
    ("threshold", [lambda x: F.threshold(x, 0.1, 20.0), module(nn.Threshold, 0.0, -1.0)], FLOATS),
    ("gelu", [F.gelu, lambda x: F.gelu(x, approximate="tanh"), module(nn.GELU)], FLOATS),
    ("silu", [F.silu, module(nn.SiLU)], FLOATS), ("sigmoid_module", [F.sigmoid, module(nn.Sigmoid), module(nn.Tanh), F.tanh], FLOATS),
    ("relu_module", [F.relu, module(nn.ReLU)], FLOATS),
]
ACT_MODULES = {"relu6": "ReLU6", "hardtanh": "Hardtanh", "hardswish": "Hardswish", "hardsigmoid": "Hardsigmoid",
               "mish": "Mish", "softplus": "Softplus", "logsigmoid": "LogSigmoid", "softsign": "Softsign",
               "tanhshrink": "Tanhshrink", "elu": "ELU", "celu": "CELU", "selu": "SELU", "leaky_relu": "LeakyReLU",
               "rrelu": "RReLU", "hardshrink": "Hardshrink", "softshrink": "Softshrink", "threshold": "Threshold",
               "gelu": "GELU", "silu": "SiLU", "relu_module": "ReLU"}
for name, fns, dts in ACTS:
    covers = ([f"F.{name}"] if hasattr(F, name) else []) + ([f"nn.{ACT_MODULES[name]}"] if name in ACT_MODULES else [])
    if name == "sigmoid_module":
        covers = ["F.sigmoid", "F.tanh", "nn.Sigmoid", "nn.Tanh"]
    ENTRIES.append(E(name, covers, fns, unary(), dts, {F16: (3e-3, 3e-3), BF16: (2e-2, 2e-2)}))
ENTRIES.append(E("glu", ["F.glu", "nn.GLU"], [F.glu, lambda x: F.glu(x, 0), module(nn.GLU)],
                 shapes(((4, 6),), ((2, 4, 8),)), FLOATS, LOW_TOL))
PRELU = module(nn.PReLU, 3)
ENTRIES.append(E("prelu", ["F.prelu", "nn.PReLU"], [lambda x, w: F.prelu(x, w), lambda x, w: PRELU(x)],
                 shapes(((2, 3, 4), (3,)), ((5, 3), (3,))), (F32,)))

# ---- reductions ----------------------------------------------------------------------------
RED = lambda dt: [(make((3, 4), dt),), (make((2, 3, 5), dt),), (make((5, 4), dt).t(),)]  # noqa: E731
for name, fns, dts in [
        ("sum", [torch.sum, lambda x: x.sum(1), lambda x: torch.sum(x, (0, -1), keepdim=True)], ALL),
        ("mean", [torch.mean, lambda x: x.mean(-1, keepdim=True)], FLOATS),
        ("amax", [lambda x: torch.amax(x, 1), lambda x: x.amax((0, 1))], NUMS),
        ("amin", [lambda x: torch.amin(x, 1), lambda x: x.amin((0, 1), keepdim=True)], NUMS),
        ("max", [torch.max, lambda x: torch.max(x, 1), lambda x: x.max(0, keepdim=True)[1]], NUMS),
        ("min", [torch.min, lambda x: x.min(1), lambda x: torch.min(x, -1)[0]], NUMS),
        ("prod", [lambda x: torch.prod(x, 1), lambda x: x.prod(), lambda x: x.prod(0, keepdim=True)], NUMS + (BOOL,)),
        ("argmax", [torch.argmax, lambda x: x.argmax(1), lambda x: torch.argmax(x, 0, keepdim=True)], NUMS),
        ("argmin", [torch.argmin, lambda x: x.argmin(-1, keepdim=True)], NUMS),
        ("all", [torch.all, lambda x: x.all(1), lambda x: torch.any(x), lambda x: x.any(0, keepdim=True)], ALL),
        ("var", [torch.var, lambda x: x.var(1), lambda x: torch.var(x, 0, correction=0, keepdim=True)], FLOATS),
        ("std", [torch.std, lambda x: x.std(1, unbiased=False), lambda x: torch.std_mean(x, 1), lambda x: torch.var_mean(x)], FLOATS),
        ("logsumexp", [lambda x: torch.logsumexp(x, 1), lambda x: x.logsumexp((0, 1), keepdim=True)], FLOATS),
        ("norm", [torch.norm, lambda x: x.norm(1, 1), lambda x: torch.norm(x, float("inf"), 0),
                  lambda x: torch.linalg.vector_norm(x, 3, 1)], FLOATS),
        ("count_nonzero", [torch.count_nonzero, lambda x: x.count_nonzero(1)], ALL),
        ("cumsum", [lambda x: torch.cumsum(x, 1), lambda x: x.cumsum(0)], NUMS + (BOOL,))]:
    ENTRIES.append(E(name, [f"torch.{name}"] + ([f"Tensor.{name}"] if hasattr(torch.Tensor, name) else []), fns, RED, dts,
                     {F16: (5e-3, 5e-3), BF16: (3e-2, 5e-2)}))

# ---- shape, indexing and creation ---------------------------------------------------------
SHAPE_COVERS = {
    "flip": ["torch.flip", "Tensor.flip", "torch.fliplr", "torch.flipud"], "roll": ["torch.roll", "Tensor.roll"],
    "tril": ["torch.tril", "Tensor.triu", "torch.triu"],
    "movedim": ["torch.movedim", "Tensor.moveaxis", "Tensor.swapaxes", "torch.swapdims"],
    "repeat": ["Tensor.repeat", "torch.tile", "Tensor.tile"], "repeat_interleave": ["Tensor.repeat_interleave", "torch.repeat_interleave"],
    "unflatten": ["Tensor.ravel", "torch.unflatten", "Tensor.unflatten"], "pad": ["F.pad"], "pad_modes": ["F.pad"],
    "as": ["Tensor.expand_as", "Tensor.view_as", "Tensor.reshape_as", "Tensor.type_as", "torch.broadcast_to"],
    "like": ["torch.zeros_like", "torch.ones_like", "torch.full_like", "torch.empty_like", "Tensor.new_zeros",
             "Tensor.new_ones", "Tensor.new_full", "Tensor.new_empty"],
    "create": ["torch.eye", "torch.linspace", "torch.empty"], "outer": ["torch.outer", "Tensor.dot"]}
SH = lambda dt: [(make((3, 4), dt),), (make((2, 3, 4), dt),), (make((4, 3), dt).t(),)]  # noqa: E731
for name, fns, dts in [
        ("flip", [lambda x: torch.flip(x, (0,)), lambda x: x.flip(-1), torch.fliplr, torch.flipud], ALL),
        ("roll", [lambda x: torch.roll(x, 1, 0), lambda x: x.roll((2, -1), (0, 1)), lambda x: torch.roll(x, 3)], ALL),
        ("tril", [torch.tril, lambda x: x.triu(1), lambda x: torch.tril(x, -1)], ALL),
        ("movedim", [lambda x: torch.movedim(x, 0, -1), lambda x: x.moveaxis(1, 0), lambda x: x.swapaxes(0, 1),
                     lambda x: torch.swapdims(x, 0, 1) * 1], ALL),
        ("repeat", [lambda x: x.repeat(2, 1, 1), lambda x: x.repeat(1, 2, 1), lambda x: torch.tile(x, (2,)),
                    lambda x: x.tile(2, 1)], ALL),
        ("repeat_interleave", [lambda x: x.repeat_interleave(2, 1), lambda x: torch.repeat_interleave(x, 3)], ALL),
        ("unflatten", [lambda x: x.ravel(), lambda x: torch.unflatten(x.reshape(-1), 0, (2, -1)),
                       lambda x: x.reshape(-1).unflatten(0, (-1, 2)) + 0], ALL),
        ("pad", [lambda x: F.pad(x, (1, 2)), lambda x: F.pad(x, (1, 0, -1, 2), value=3.0)], NUMS),
        ("pad_modes", [lambda x: F.pad(x, (2, 1), mode="reflect"), lambda x: F.pad(x, (1, 2), mode="replicate"),
                       lambda x: F.pad(x, (1, 1), mode="circular")], FLOATS),
        ("as", [lambda x: x.expand_as(torch.zeros((2,) + x.shape)) * 1, lambda x: x.contiguous().view_as(torch.zeros(x.numel())) * 1,
                lambda x: x.reshape_as(torch.zeros(x.numel())), lambda x: x.type_as(torch.zeros(1, dtype=torch.int64)),
                lambda x: torch.broadcast_to(x, (2,) + x.shape) * 1], ALL),
        ("like", [torch.zeros_like, torch.ones_like, lambda x: torch.full_like(x, 2), lambda x: torch.zeros_like(torch.empty_like(x)),
                  lambda x: x.new_zeros(2, 3), lambda x: x.new_ones((3,)), lambda x: x.new_full((2,), 4),
                  lambda x: torch.zeros_like(x.new_empty(2))], ALL),
        ("create", [lambda x: torch.eye(3) + x.sum(), lambda x: torch.eye(2, 4, dtype=x.dtype) * 1,
                    lambda x: torch.linspace(0, 1, 5) + 0 * x.sum(), lambda x: torch.linspace(-2, -3, 1) + x.sum(),
                    lambda x: torch.linspace(1, 2, 0) * 1, lambda x: torch.zeros_like(torch.empty(2, 2)) + x.sum()], FLOATS),
        ("outer", [lambda x: torch.outer(x.reshape(-1), x.reshape(-1)[:3]), lambda x: x.reshape(-1).dot(x.reshape(-1))],
         FLOATS)]:
    ENTRIES.append(E(name, SHAPE_COVERS.get(name, [f"torch.{name}"]), fns, SH, dts, {F16: (4e-3, 4e-3), BF16: (3e-2, 3e-2)}))
ENTRIES.append(E("gather", ["torch.gather", "Tensor.gather", "torch.index_select", "Tensor.index_select"],
                 [lambda x, i: torch.gather(x, 1, i), lambda x, i: x.gather(0, i[:, :1].t()),
                  lambda x, i: torch.index_select(x, 0, i[0]), lambda x, i: x.index_select(-1, i[-1].int())],
                 lambda dt: [(make((3, 4), dt), torch.randint(0, 3, (3, 2))),
                             (make((4, 3), dt).t(), torch.randint(0, 3, (3, 3)))], ALL))
ENTRIES.append(E("einsum", ["torch.einsum"],
                 [lambda a, b: torch.einsum("bij,bjk->bik", a, b), lambda a, b: torch.einsum("bij,bkj->bik", a, b),
                  lambda a, b: torch.einsum("bij->bji", a), lambda a, b: torch.einsum("bij,bij->b", a, b),
                  lambda a, b: torch.einsum("bij,ckj", a, b), lambda a, b: torch.einsum("bij->", a),
                  lambda a, b: torch.einsum("bij,bjk->ik", [a, b])],
                 lambda dt: [(make((2, 3, 3), dt), make((2, 3, 3), dt)), (make((1, 3, 3), dt).transpose(1, 2), make((1, 3, 3), dt))],
                 FLOATS, {F16: (5e-3, 5e-3), BF16: (3e-2, 3e-2)}))
ENTRIES.append(E("stack", ["torch.hstack", "torch.vstack", "torch.cat", "torch.stack"],
                 [lambda x, y: torch.hstack((x, y)), lambda x, y: torch.vstack([x, y]), lambda x, y: torch.cat([x, y], 0)],
                 shapes(((3, 4), (3, 4)), ((5,), (5,))), ALL))
ENTRIES.append(E("addmm", ["torch.addmm", "torch.baddbmm", "Tensor.addmm", "torch.mm", "torch.bmm"],
                 [lambda b, x, y: torch.addmm(b[0], x[0], y[0]), lambda b, x, y: torch.baddbmm(b, x, y, beta=0.5, alpha=2),
                  lambda b, x, y: b[0].addmm(x[0], y[0], beta=0), lambda b, x, y: torch.bmm(x, y) + torch.mm(x[1], y[1])],
                 shapes(((2, 3, 5), (2, 3, 4), (2, 4, 5))), (F32,)))

COVERS = {
    "conv2d": ["F.conv2d", "nn.Conv2d"],
    "conv1d": ["F.conv1d", "nn.Conv1d"],
    "max_pool2d": ["F.max_pool2d", "nn.MaxPool2d", "torch.max_pool2d"],
    "max_pool1d": ["F.max_pool1d", "nn.MaxPool1d"],
    "avg_pool2d": ["F.avg_pool2d", "nn.AvgPool2d"],
    "avg_pool1d": ["F.avg_pool1d", "nn.AvgPool1d", "nn.AdaptiveAvgPool1d", "F.adaptive_max_pool1d"],
    "adaptive_pool": ["F.adaptive_avg_pool2d", "nn.AdaptiveAvgPool2d", "nn.AdaptiveMaxPool2d"],
    "group_norm": ["F.group_norm", "nn.GroupNorm"],
    "instance_norm": ["F.instance_norm", "nn.InstanceNorm2d"],
    "batch_norm": ["F.batch_norm", "nn.BatchNorm2d"],
    "pixel_shuffle": ["F.pixel_shuffle", "nn.PixelUnshuffle", "nn.PixelShuffle"],
    "interpolate": ["F.interpolate", "nn.Upsample", "nn.UpsamplingNearest2d"],
    "dropout": ["F.dropout", "nn.Dropout", "nn.Dropout2d", "nn.AlphaDropout"],
    "layer_norm": ["F.layer_norm", "nn.LayerNorm"],
    "rms_norm": ["F.rms_norm", "nn.RMSNorm"],
    "softmax": ["F.softmax", "nn.Softmax", "Tensor.softmax"],
    "log_softmax": ["F.log_softmax", "nn.LogSoftmax", "torch.log_softmax", "Tensor.log_softmax"],
    "softmin": ["F.softmin", "nn.Softmin"],
    "normalize": ["F.normalize"],
    "linear": ["F.linear", "nn.Linear"],
    "flatten": ["nn.Flatten", "nn.Identity", "nn.Unflatten"],
    "mse_loss": ["F.mse_loss", "nn.MSELoss"],
    "l1_loss": ["F.l1_loss", "nn.L1Loss"],
    "smooth_l1_loss": ["F.smooth_l1_loss", "nn.SmoothL1Loss", "nn.HuberLoss"],
    "kl_div": ["F.kl_div", "nn.KLDivLoss"],
    "bce": ["F.binary_cross_entropy", "F.binary_cross_entropy_with_logits", "nn.BCEWithLogitsLoss"],
}

# ---- nn layers ------------------------------------------------------------------------------------
IMG = lambda dt: [(make((2, 3, 9, 9), dt),), (make((3, 7, 8), dt).transpose(1, 2),)]  # noqa: E731
SEQ = lambda dt: [(make((2, 3, 10), dt),), (make((3, 9), dt),), (make((2, 10, 3), dt).transpose(1, 2),)]  # noqa: E731
IMG4 = lambda dt: [(make((2, 3, 9, 9), dt),), (make((1, 3, 7, 8), dt).transpose(2, 3),)]  # noqa: E731
CONV_TOL = {F32: (1e-4, 1e-4), F16: (1e-2, 1e-2), BF16: (5e-2, 5e-2)}
for name, fns, samples, dts in [
        ("conv2d", [module(nn.Conv2d, 3, 4, 3), module(nn.Conv2d, 3, 6, (3, 2), stride=2, padding=1, groups=3),
                    module(nn.Conv2d, 3, 2, 3, padding="same", dilation=2, bias=False),
                    module(nn.Conv2d, 3, 4, 1), module(nn.Conv2d, 3, 4, 3, padding=1, padding_mode="reflect"),
                    lambda x: F.conv2d(x, torch.ones(2, 3, 2, 2, dtype=x.dtype), stride=(1, 2), padding="valid"),
                    # stride == kernel (patch embedding: reshape + permute columns), grouped
                    module(nn.Conv2d, 3, 4, 4, stride=4), module(nn.Conv2d, 3, 6, (2, 3), stride=(2, 3), groups=3)],
         IMG, (F32,)),
        ("conv1d", [module(nn.Conv1d, 3, 5, 3, padding=1), module(nn.Conv1d, 3, 3, 2, groups=3, stride=2),
                    lambda x: F.conv1d(x, torch.ones(2, 3, 4), padding="same")], SEQ, (F32,)),
        ("max_pool2d", [module(nn.MaxPool2d, 2), module(nn.MaxPool2d, 3, 2, 1), module(nn.MaxPool2d, 3, 2, ceil_mode=True),
                        lambda x: F.max_pool2d(x, 2, dilation=2), lambda x: torch.max_pool2d(x, (2, 3))], IMG, FLOATS),
        ("max_pool1d", [lambda x: F.max_pool1d(x, 3, 2, 1), module(nn.MaxPool1d, 2)], SEQ, FLOATS),
        ("avg_pool2d", [module(nn.AvgPool2d, 2), module(nn.AvgPool2d, 3, 2, 1), module(nn.AvgPool2d, 3, 2, 1, count_include_pad=False),
                        module(nn.AvgPool2d, 2, ceil_mode=True), lambda x: F.avg_pool2d(x, 2, divisor_override=3)], IMG, FLOATS),
        ("avg_pool1d", [lambda x: F.avg_pool1d(x, 3, 2, 1), module(nn.AvgPool1d, 2), module(nn.AdaptiveAvgPool1d, 4),
                        lambda x: F.adaptive_max_pool1d(x, 3)], SEQ, FLOATS),
        ("adaptive_pool", [module(nn.AdaptiveAvgPool2d, 1), module(nn.AdaptiveAvgPool2d, (4, 3)), module(nn.AdaptiveMaxPool2d, 2),
                           lambda x: F.adaptive_avg_pool2d(x, (None, 2))], IMG, FLOATS),
        ("group_norm", [module(nn.GroupNorm, 1, 3), module(nn.GroupNorm, 3, 3), lambda x: F.group_norm(x, 3)], IMG4, FLOATS),
        ("instance_norm", [module(nn.InstanceNorm2d, 3), module(nn.InstanceNorm2d, 3, affine=True),
                           lambda x: F.instance_norm(x if x.dim() == 4 else x[None])], IMG, FLOATS),
        ("batch_norm", [module(nn.BatchNorm2d, 3)], IMG4, FLOATS),
        ("pixel_shuffle", [lambda x: F.pixel_shuffle(x.repeat(1, 4, 1, 1), 2), module(nn.PixelUnshuffle, 3),
                           module(nn.PixelShuffle, 1)], shapes(((2, 3, 6, 6),), ((1, 3, 9, 6),)), FLOATS),
        ("interpolate", [lambda x: F.interpolate(x, scale_factor=2), lambda x: F.interpolate(x, size=(5, 4)),
                         module(nn.Upsample, scale_factor=2), module(nn.UpsamplingNearest2d, size=3)], IMG4, FLOATS),
        ("dropout", [module(nn.Dropout), module(nn.Dropout2d), module(nn.AlphaDropout), lambda x: F.dropout(x, training=False)],
         IMG4, FLOATS)]:
    ENTRIES.append(E(name, COVERS[name], fns, samples, dts, CONV_TOL, other_samples=1))
VEC = lambda dt: [(make((4, 8), dt),), (make((2, 3, 8), dt),), (make((8, 4), dt).t(),)]  # noqa: E731
for name, fns in [
        ("layer_norm", [module(nn.LayerNorm, 8), lambda x: F.layer_norm(x, (8,))]),
        ("rms_norm", [module(nn.RMSNorm, 8), lambda x: F.rms_norm(x, (8,), eps=1e-6)]),
        ("softmax", [lambda x: F.softmax(x, -1), module(nn.Softmax, 0), lambda x: x.softmax(1)]),
        ("log_softmax", [lambda x: F.log_softmax(x, -1), module(nn.LogSoftmax, 0), lambda x: torch.log_softmax(x, 1),
                         lambda x: x.log_softmax(-1)]),
        ("softmin", [lambda x: F.softmin(x, -1), module(nn.Softmin, 1)]),
        ("normalize", [F.normalize, lambda x: F.normalize(x, p=1, dim=-1)]),
        ("linear", [module(nn.Linear, 8, 3), lambda x: F.linear(x, torch.ones(2, 8, dtype=x.dtype))]),
        ("flatten", [module(nn.Flatten), module(nn.Flatten, 0), module(nn.Identity), module(nn.Unflatten, -1, (2, 4))])]:
    ENTRIES.append(E(name, COVERS[name], fns, VEC, FLOATS, {F16: (5e-3, 5e-3), BF16: (3e-2, 3e-2)}))
ENTRIES.append(E("cosine_similarity", ["F.cosine_similarity", "nn.CosineSimilarity"],
                 [lambda x, y: F.cosine_similarity(x, y), module(nn.CosineSimilarity, -1)],
                 shapes(((4, 8), (4, 8)), ((2, 3, 8), (2, 3, 8))), FLOATS, {F16: (5e-3, 5e-3), BF16: (3e-2, 3e-2)}))
ENTRIES.append(E("sdpa", ["F.scaled_dot_product_attention"],
                 [lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v),
                  lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                  lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m > 0),
                  lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m, scale=0.3)],
                 shapes(((2, 3, 5, 8), (2, 3, 6, 8), (2, 3, 6, 4), (5, 6)), ((5, 8), (6, 8), (6, 8), (5, 6))), FLOATS,
                 {F16: (5e-3, 5e-3), BF16: (3e-2, 3e-2)}))

# ---- losses ----------------------------------------------------------------------------------------
PAIR = shapes(((4, 5), (4, 5)), ((3,), (3,)))
for name, fns in [
        ("mse_loss", [F.mse_loss, module(nn.MSELoss, reduction="sum"), lambda x, y: F.mse_loss(x, y, reduction="none")]),
        ("l1_loss", [F.l1_loss, module(nn.L1Loss)]),
        ("smooth_l1_loss", [F.smooth_l1_loss, module(nn.SmoothL1Loss, beta=0.5), module(nn.HuberLoss, delta=0.7)]),
        ("kl_div", [lambda x, y: F.kl_div(F.log_softmax(x, -1), F.softmax(y, -1), reduction="batchmean"),
                    module(nn.KLDivLoss, reduction="sum", log_target=True)]),
        ("bce", [lambda x, y: F.binary_cross_entropy(torch.sigmoid(x), torch.sigmoid(y)),
                 lambda x, y: F.binary_cross_entropy_with_logits(x, torch.sigmoid(y)), module(nn.BCEWithLogitsLoss)])]:
    ENTRIES.append(E(name, COVERS[name], fns, PAIR, (F32,)))
ENTRIES.append(E("cross_entropy", ["F.cross_entropy", "F.nll_loss", "nn.CrossEntropyLoss", "F.one_hot"],
                 [lambda x, t: F.cross_entropy(x, t), lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1),
                  lambda x, t: F.cross_entropy(x, t, weight=torch.arange(1.0, 6.0), ignore_index=1),
                  lambda x, t: F.nll_loss(F.log_softmax(x, 1), t, reduction="sum"),
                  lambda x, t: F.cross_entropy(x, F.one_hot(t, 5).float().movedim(-1, 1) * 0.5)],
                 lambda dt: [(make((4, 5), dt), torch.tensor([0, 4, 1, 2])),
                             (make((2, 5, 3), dt), torch.tensor([[1, 0, 4], [2, 2, 3]]))], (F32,)))


def covered():
    """Every callable name the suite covers."""
    return sorted({c for e in ENTRIES for c in e.covers})
