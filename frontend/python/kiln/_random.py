# SPDX-License-Identifier: Apache-2.0
"""kiln's random numbers on the Python side: the per-call seed and the replay.

Graphs with random ops (``kiln.random``: Philox 4x32-10, ir/KilnRandomOps.td)
take a seed drawn from torch's default CPU generator on every call
(``draw_seed``), so ``torch.manual_seed`` makes compiled runs reproducible,
consecutive calls differ and eager code after the graph sees an advanced
generator. The k-th random op of a graph reads the counters from
``k * 2**40`` on.

The backward of a compiled graph that needs gradients recomputes the
original Python eagerly (kiln/_autograd.py). ``replaying(seed, fn)`` runs that
recompute under a TorchFunctionMode that answers every random call the
capture compiled (frontend/csrc/capture/ops/RandomOps.cpp) with the same
values the graph computed, from the same seed and stream, so dropout's mask
in the backward is the forward's. Random calls inside torch functions that dispatch
__torch_function__ themselves (nn.MultiheadAttention's
``multi_head_attention_forward``) are reached through a copy of that
function (``_composite``): the mode is off while its own handler runs. ``philox`` is the generator in NumPy,
bitwise equal to the compiled code (the tests compare them).
"""
from __future__ import annotations

import math
import types

import numpy as np
import torch
import torch.nn.functional as F

_MASK32 = 0xFFFFFFFF
_MUL = (0xD2511F53, 0xCD9E8D57)
_WEYL = (0x9E3779B9, 0xBB67AE85)
STREAM_BITS = 40


def draw_seed():
    """A fresh seed from torch's default generator (advances it): a 0-d
    int64 tensor, the seed input of a random graph."""
    return torch.randint(0, 2**63 - 1, (), dtype=torch.int64)


def philox(seed, offset, numel):
    """Philox 4x32-10 of counters ``offset + i`` (i < numel) under key
    ``seed``: four uint64 arrays holding 32-bit words."""
    seed, offset = int(seed), int(offset)
    n = np.arange(numel, dtype=np.uint64) + np.uint64(offset & (2**64 - 1))
    c = [n & np.uint64(_MASK32), n >> np.uint64(32), np.zeros_like(n), np.zeros_like(n)]
    k0, k1 = seed & _MASK32, (seed >> 32) & _MASK32
    m0, m1, low = np.uint64(_MUL[0]), np.uint64(_MUL[1]), np.uint64(_MASK32)
    for r in range(10):
        if r:
            k0, k1 = (k0 + _WEYL[0]) & _MASK32, (k1 + _WEYL[1]) & _MASK32
        p0, p1 = m0 * c[0], m1 * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ np.uint64(k0), p1 & low,
             (p0 >> np.uint64(32)) ^ c[3] ^ np.uint64(k1), p0 & low]
    return c


def _uniform_bits(words, first, bits, wide):
    if wide:
        joined = words[first] | (words[first + 1] << np.uint64(32))
        return (joined >> np.uint64(64 - bits)).astype(np.float64) * 2.0**-bits
    return (words[first] >> np.uint64(32 - bits)).astype(np.float32) * np.float32(2.0**-bits)


def uniform(seed, offset, shape, dtype=torch.float32):
    """torch.rand's values of kiln.random "uniform"."""
    numel = math.prod(shape)
    w = philox(seed, offset, numel)
    bits = {torch.float16: 11, torch.bfloat16: 8, torch.float64: 53}.get(dtype, 24)
    u = _uniform_bits(w, 0, bits, dtype == torch.float64)
    return torch.from_numpy(np.ascontiguousarray(u)).to(dtype).reshape(shape)


def normal(seed, offset, shape, dtype=torch.float32):
    """torch.randn's values of kiln.random "normal" (Box-Muller)."""
    numel = math.prod(shape)
    w = philox(seed, offset, numel)
    wide = dtype == torch.float64
    u0 = torch.from_numpy(np.ascontiguousarray(_uniform_bits(w, 0, 53 if wide else 24, wide)))
    u1 = torch.from_numpy(np.ascontiguousarray(_uniform_bits(w, 2 if wide else 1,
                                                             53 if wide else 24, wide)))
    z = torch.sqrt(-2.0 * torch.log(1.0 - u0)) * torch.cos(2.0 * math.pi * u1)
    return z.to(dtype).reshape(shape)


def integer(seed, offset, shape, low, high, dtype=torch.int64):
    """torch.randint's values of kiln.random "integer" in [low, high)."""
    numel = math.prod(shape)
    w = philox(seed, offset, numel)
    bits = w[0] | (w[1] << np.uint64(32))
    span = np.uint64((high - low) & (2**64 - 1))
    with np.errstate(over="ignore"):
        v = (bits % span).astype(np.int64) + np.int64(low)
    return torch.from_numpy(v).to(dtype).reshape(shape)


_GOLDEN = 0x9E3779B97F4A7C15


def seeded(fn, stream, factory):
    """``fn`` (torch.randperm, torch.multinomial) as kiln runs it inside a
    graph (RandomOps.cpp seededTorchCall): called with the graph's seed
    tensor first, it runs eager's kernel on a ``torch.Generator`` seeded
    from (seed, stream), so torch.manual_seed reproduces it and each call
    differs; on a meta seed (Fallback.cpp's probe) it runs on meta.
    ``factory``: ``fn`` makes a tensor from sizes (its ``device=``)."""
    def call(seed, *args, **kwargs):
        if seed.device.type == "meta":
            if factory:
                kwargs["device"] = "meta"
            return fn(*args, **kwargs)
        if factory:
            device = kwargs.get("device")
            device = torch.device(device) if device is not None else torch.get_default_device()
        else:
            device = args[0].device
        g = torch.Generator(device=device)
        g.manual_seed((int(seed) + (stream + 1) * _GOLDEN) & (2**64 - 1))
        return fn(*args, generator=g, **kwargs)
    call.__module__ = "torch"
    call.__name__ = call.__qualname__ = fn.__name__
    call.kiln_random = True
    return call


class _Replay(torch.overrides.TorchFunctionMode):
    """Answers the random calls kiln compiles with the graph's values:
    the k-th such call takes stream k of ``seed`` (RandomOps.cpp's order)."""

    def __init__(self, seed):
        super().__init__()
        self.seed = int(seed)
        self.stream = 0

    def next_offset(self):
        offset = self.stream << STREAM_BITS
        self.stream += 1
        return offset

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        handler = _HANDLERS.get(func)
        # A generator= call was not compiled (a graph break): eager's own.
        if handler is not None and kwargs.get("generator") is None:
            result = handler(self, *args, **kwargs)
            if result is not NotImplemented:
                return result
        return func(*args, **kwargs)


def replaying(seed, fn):
    """``fn`` (the eager recompute) wrapped to run with the random values of
    the compiled call that drew ``seed``."""
    def run():
        with _Replay(seed):
            return fn()
    return run


def _sizes(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):
        return tuple(size[0])
    return tuple(size)


def _rand(mode, *size, dtype=None, **kw):
    return uniform(mode.seed, mode.next_offset(), _sizes(size),
                   dtype or torch.get_default_dtype())


def _randn(mode, *size, dtype=None, **kw):
    return normal(mode.seed, mode.next_offset(), _sizes(size), dtype or torch.get_default_dtype())


def _rand_like(mode, input, dtype=None, **kw):
    return uniform(mode.seed, mode.next_offset(), tuple(input.shape), dtype or input.dtype)


def _randn_like(mode, input, dtype=None, **kw):
    return normal(mode.seed, mode.next_offset(), tuple(input.shape), dtype or input.dtype)


def _bounds(values):
    """[low, high) from randint's `(high)` or `(low, high)`."""
    return (0, values[0]) if len(values) == 1 else (values[0], values[1])


def _randint(mode, *args, low=None, high=None, size=None, dtype=None, **kw):
    args = list(args)
    if size is None:
        size = args.pop()
    low, high = _bounds(args + [v for v in (low, high) if v is not None])
    return integer(mode.seed, mode.next_offset(), tuple(size), low, high, dtype or torch.int64)


def _randint_like(mode, input, *args, low=None, high=None, dtype=None, **kw):
    low, high = _bounds(list(args) + [v for v in (low, high) if v is not None])
    return integer(mode.seed, mode.next_offset(), tuple(input.shape), low, high,
                   dtype or input.dtype)


def _bernoulli_of(mode, x, p):
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    u = uniform(mode.seed, mode.next_offset(), tuple(x.shape), work)
    prob = p.to(work) if isinstance(p, torch.Tensor) else p
    return (u < prob).to(x.dtype)


def _bernoulli(mode, input, p=None, **kw):
    return _bernoulli_of(mode, input, input if p is None else p)


def _bernoulli_(mode, input, p=0.5, **kw):
    with torch.no_grad():
        return input.copy_(_bernoulli_of(mode, input, p))


def _dropout_noise(mode, x, p, spatial):
    shape = tuple(x.shape[:x.dim() - spatial]) + (1,) * spatial
    u = uniform(mode.seed, mode.next_offset(), shape, torch.float32)
    scale = 1.0 / (1.0 - p) if p < 1 else 0.0
    keep = u >= p
    return torch.where(keep, torch.tensor(scale, dtype=x.dtype), torch.tensor(0.0, dtype=x.dtype))


def _dropout(mode, input, p=0.5, training=True, inplace=False, spatial=0):
    if not training or p == 0:
        return NotImplemented
    out = input * _dropout_noise(mode, input, p, spatial)
    return input.copy_(out) if inplace else out


def _feature_dropout(spatial_of):
    def handler(mode, input, p=0.5, training=True, inplace=False):
        return _dropout(mode, input, p, training, inplace, spatial_of(input))
    return handler


def _sdpa(mode, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
          scale=None, enable_gqa=False):
    if dropout_p <= 0:
        return NotImplemented
    # The capture's decomposition (TorchOpsNN.cpp `attention`), with the
    # dropout on the attention weights.
    d = query.dtype
    c = torch.float32 if d in (torch.float16, torch.bfloat16) else d
    q, k, v = query.to(c), key.to(c), value.to(c)
    s = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = (q @ k.transpose(-1, -2)) * s
    if is_causal:
        L, S = q.shape[-2], k.shape[-2]
        causal = torch.ones(L, S, dtype=torch.bool).tril()
        scores = scores.masked_fill(~causal, -math.inf)
    elif attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attn_mask, -math.inf)
        else:
            scores = scores + attn_mask.to(c)
    w = torch.softmax(scores, -1)
    if attn_mask is not None:
        w = torch.where(scores.amax(-1, keepdim=True) == -math.inf, 0.0, w)
    w = w * _dropout_noise(mode, w, dropout_p, 0)
    return (w @ v).to(d)


def _seeded_handler(fn, factory):
    def handler(mode, *args, **kwargs):
        stream = mode.stream
        mode.stream += 1
        seed = torch.tensor(mode.seed, dtype=torch.int64)
        kwargs.pop("generator", None)
        return seeded(fn, stream, factory)(seed, *args, **kwargs)
    return handler


def _composite(fn, names):
    """A handler for ``fn``, a Python function of torch.nn.functional that
    dispatches __torch_function__ itself and calls random ops inside
    (multi_head_attention_forward's dropout and SDPA): a TorchFunctionMode is
    off while its handler runs, so those inner calls would take eager's RNG
    and shift every later stream. It runs a copy of ``fn`` whose globals
    bind ``names`` to this replay's handlers (the module itself is left
    alone: other threads see torch's functions)."""
    def handler(mode, *args, **kwargs):
        env = dict(fn.__globals__)
        for name in names:
            env[name] = _bound(mode, env[name])
        copy = types.FunctionType(fn.__code__, env, fn.__name__, fn.__defaults__,
                                  fn.__closure__)
        copy.__kwdefaults__ = fn.__kwdefaults__
        return copy(*args, **kwargs)
    return handler


def _bound(mode, func):
    """``func`` answered by its replay handler (eager's ``func`` where the
    handler declines, e.g. dropout with p == 0)."""
    def call(*args, **kwargs):
        result = _HANDLERS[func](mode, *args, **kwargs)
        return func(*args, **kwargs) if result is NotImplemented else result
    return call


_HANDLERS = {
    torch.rand: _rand, torch.randn: _randn, torch.rand_like: _rand_like,
    torch.randn_like: _randn_like, torch.randint: _randint, torch.randint_like: _randint_like,
    torch.bernoulli: _bernoulli, torch.Tensor.bernoulli: _bernoulli,
    torch.Tensor.bernoulli_: _bernoulli_,
    F.dropout: _dropout,
    # The channel dims of each form, as feature_dropout_spatial_dims in RandomOps.cpp.
    F.dropout1d: _feature_dropout(lambda x: 1),
    F.dropout2d: _feature_dropout(lambda x: 2),
    F.dropout3d: _feature_dropout(lambda x: 3),
    F.scaled_dot_product_attention: _sdpa,
    torch.randperm: _seeded_handler(torch.randperm, True),
    torch.multinomial: _seeded_handler(torch.multinomial, False),
    torch.Tensor.multinomial: _seeded_handler(torch.multinomial, False),
}
_HANDLERS[F.multi_head_attention_forward] = _composite(
    F.multi_head_attention_forward, ("dropout", "scaled_dot_product_attention"))
