# SPDX-License-Identifier: Apache-2.0
"""Per-op fallback: may a torch call kiln cannot lower run inside the graph?

The capture (frontend/csrc/capture/Fallback.cpp) calls ``probe`` with the
torch callable and its arguments, every graph tensor replaced by an empty
``meta`` tensor of the same sizes and dtype. The call runs once on those
(no data, no real work) under a dispatch mode that records the aten ops it
reaches; it is accepted only when

- it returns a plain tensor or a plain tuple of tensors, all on ``meta``
  or a ``torch.return_types`` structseq such as ``aminmax``'s (then a plain
  tuple in the graph: unpacking works, ``.values`` breaks); an op that moves
  data to another device, a list, a number: refused;
- no aten op it reaches is random (``nondeterministic_seeded``: kiln could
  not replay torch's generator state), except in a ``kiln._random.seeded``
  wrapper (``kiln_random``: the call gets a generator seeded by the graph) or reads data on the host
  (``data_dependent_output``), and it raised nothing: meta kernels raise for
  data-dependent work (``.item()``, ``nonzero``, ``unique``, boolean-mask
  indexing). Ops tagged ``dynamic_output_shape`` are judged by that meta run
  (``aten.index`` with integer index tensors has a shape known from the
  sizes); every call's results that a later step or the graph's result reads
  are checked against the meta sizes (Program.cpp; unread auxiliary results
  such as native_batch_norm's eval statistics differ on meta);
- it mutates none of its tensor arguments (their version counters) and
  changes none of their metadata (sizes, strides, storage offset,
  requires_grad: ``t_``-style methods); ``requires_grad_`` is refused by
  name, since the meta stand-ins do not carry the argument's requires_grad
  (a graph that ignored it returned results without a gradient).

A call whose results are views of its arguments (``unfold``, ``as_strided``,
``meshgrid``, ``diagonal`` ...) is kept in the graph as gathers: the call runs
once more on CPU stand-ins of the arguments whose elements hold their own
flat positions (``_stand_in``), so each result's elements say which argument
element it reads (``view_plan``). An argument whose eager memory layout kiln
knows (a graph input or a view of one: ``layouts``) gets a stand-in with that
layout, so a storage-dependent op (``as_strided``) reads what eager reads; an
op that reads the storage of a tensor the graph computed (eager's layout
unknown), reads storage the argument does not cover, changes the dtype
(``view_as_complex``, ``view(dtype)``) or is too large to index is refused.

Returns ``(is_tuple, ((sizes, dtype), ...), views)`` (``views``: None, or per
result ``(argument tensor index, flat gather indices)``) or a Refusal.
"""
from __future__ import annotations

from typing import NamedTuple

import torch
from torch.utils._python_dispatch import TorchDispatchMode


class Refusal(NamedTuple):
    """Why a call cannot run through torch inside the graph: the graph
    break's category (a name from capture/breaks/GraphBreak.h) and reason."""
    category: str
    reason: str


_REFUSED_TAGS = {
    torch.Tag.nondeterministic_seeded: ("random", "is random (torch's generator state)"),
    torch.Tag.data_dependent_output: ("data-dependent", "reads tensor data on the host"),
}


def _writes_to(func, args, kwargs, tensors) -> bool:
    """Whether aten op ``func`` writes (its schema's ``Tensor(a!)``) into
    one of ``tensors`` or a view of one."""
    schema = getattr(func, "_schema", None)
    if schema is None:
        return False
    for i, arg in enumerate(schema.arguments):
        if arg.alias_info is None or not arg.alias_info.is_write:
            continue
        value = args[i] if i < len(args) else (kwargs or {}).get(arg.name)
        values = value if isinstance(value, (list, tuple)) else (value,)
        if any(isinstance(v, torch.Tensor) and any(torch._C._is_alias_of(v, t) for t in tensors)
               for v in values):
            return True
    return False


class _Recorder(TorchDispatchMode):
    """Notes the first aten op with a refused tag and the first that writes
    into an argument (``tensors``; ops that mutate through their schema's
    ``Tensor(a!)`` without bumping the version counter on meta, such as
    ``fused_moving_avg_obs_fake_quant``), runs every op as is."""

    def __init__(self, tensors=()):
        super().__init__()
        self.refused = None
        self.mutating = None
        self.tensors = tensors
        self.seen = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.seen.add(str(getattr(func, "overloadpacket", func)))
        if self.mutating is None and _writes_to(func, args, kwargs, self.tensors):
            self.mutating = str(func)
        if self.refused is None:  # False: random ops accepted, nothing refused
            for tag in getattr(func, "tags", ()):
                if tag in _REFUSED_TAGS:
                    category, why = _REFUSED_TAGS[tag]
                    self.refused = Refusal(category, f"{func} {why}")
                    break
        return func(*args, **(kwargs or {}))


# Methods that set autograd state on their argument and return it.
_AUTOGRAD_SETTERS = {"requires_grad_", "retain_grad", "detach_"}


def _metadata(t):
    return (tuple(t.shape), t.stride(), t.storage_offset(), t.requires_grad)


def _unsupported(reason: str) -> Refusal:
    return Refusal("unsupported-op", reason)


def probe(fn, args, kwargs, tensors, layouts=None):
    """Runs ``fn(*args, **kwargs)`` on meta tensors (``tensors``: those among
    the arguments; ``layouts``: per tensor, None or the eager layout recipe
    ``(input sizes, input strides, view steps)``). Returns (True, the class
    of a torch.return_types result, or False for one tensor; the outputs'
    (shape, dtype); the view plan or None) or the reason to refuse."""
    if getattr(fn, "__name__", None) in _AUTOGRAD_SETTERS:
        return _unsupported(f"{fn.__name__} changes a tensor's autograd state, which the graph "
                            "does not carry")
    versions = [t._version for t in tensors]
    metadata = [_metadata(t) for t in tensors]
    recorder = _Recorder(tensors)
    if getattr(fn, "kiln_random", False):  # kiln._random.seeded: random by design
        recorder.refused = False
    try:
        with torch.no_grad(), recorder:
            out = fn(*args, **(kwargs or {}))
    except Exception as e:  # noqa: BLE001 - any failure means "not on meta"
        if recorder.refused:  # e.g. .item() on meta: data-dependent, then raises
            return recorder.refused
        first = str(e).splitlines()[0] if str(e) else ""
        return _unsupported(f"it does not run on meta tensors ({type(e).__name__}: {first})")
    if recorder.refused:
        return recorder.refused
    if any(t._version != v for t, v in zip(tensors, versions)):
        return _unsupported("it mutates an argument")
    if recorder.mutating:
        return _unsupported(f"it mutates an argument ({recorder.mutating} writes into it)")
    if any(_metadata(t) != m for t, m in zip(tensors, metadata)):
        return _unsupported("it changes an argument's sizes, strides or requires_grad")
    is_tuple = type(out) is tuple or (
        isinstance(out, tuple) and type(out).__module__ == "torch.return_types")
    outs = out if is_tuple else (out,)
    if not outs:
        return _unsupported("it returns an empty tuple")
    meta = []
    aliases = 0
    for o in outs:
        if type(o) is not torch.Tensor:
            return _unsupported(f"it returns a {type(o).__name__}, not a tensor or a tuple of tensors")
        if o.device.type != "meta":
            return _unsupported(f"its result is on {o.device}, not on the inputs' device")
        aliases += any(torch._C._is_alias_of(o, t) for t in tensors)
        meta.append((tuple(o.shape), o.dtype))
    # A torch.return_types result keeps its class (values/indices fields).
    structseq = type(out) if is_tuple and type(out) is not tuple else is_tuple
    if not aliases:
        return structseq, tuple(meta), None
    if aliases != len(outs):
        return _unsupported("some of its results are views of an argument and some are not")
    plan = view_plan(fn, args, kwargs, tensors, layouts or [None] * len(tensors), outs,
                     "aten.as_strided" in recorder.seen)
    if isinstance(plan, Refusal):
        return plan
    return structseq, tuple(meta), plan


_MAX_VIEW_ELEMENTS = 1 << 22


def _replay(t, step):
    name, a = step[0], step[1]
    kw = step[2] if len(step) > 2 and step[2] is not None else {}
    return getattr(t, name)(*a, **kw)


def _stand_in(meta, base, layout):
    """A CPU tensor with ``meta``'s sizes whose elements are ``base`` plus
    their flat (row-major) position; with ``layout``, laid out in a storage
    as eager lays the argument out (storage not covered holds -1)."""
    dt = torch.float64 if meta.dtype.is_floating_point else torch.int64
    n = meta.numel()
    values = torch.arange(base, base + n, dtype=dt).view(meta.shape)
    if layout is None:
        return values
    sizes, strides, steps = layout
    m = torch.empty_strided(sizes, strides, dtype=meta.dtype, device="meta")
    for step in steps:
        m = _replay(m, step)
    if tuple(m.shape) != tuple(meta.shape):
        raise ValueError("the layout recipe does not give the argument's sizes")
    extent = m.untyped_storage().nbytes() // max(m.element_size(), 1)
    storage = torch.full((extent,), -1, dtype=dt)
    t = storage.as_strided(m.shape, m.stride(), m.storage_offset())
    t.copy_(values)  # raises where the argument's elements overlap in memory
    return t


def _substitute(obj, stand_ins):
    if isinstance(obj, torch.Tensor):
        return stand_ins.get(id(obj), obj)
    if type(obj) in (tuple, list):
        return type(obj)(_substitute(o, stand_ins) for o in obj)
    if type(obj) is dict:
        return {k: _substitute(v, stand_ins) for k, v in obj.items()}
    return obj


def view_plan(fn, args, kwargs, tensors, layouts, outs, reads_storage):
    """Per result of a view op: (index of the argument tensor it views, the
    flat positions in that argument it reads, row-major), or a Refusal."""
    for t, o in ((t, o) for o in outs for t in tensors if torch._C._is_alias_of(o, t)):
        if o.dtype != t.dtype:
            return _unsupported(f"its result reinterprets {t.dtype} as {o.dtype} "
                                "(a view with another dtype; kiln has no complex dtypes)")
    if any(t.dtype == torch.bool or t.dtype.is_complex for t in tensors):
        return _unsupported("it views a bool or complex tensor")
    if reads_storage and any(lay is None for lay in layouts):
        return _unsupported("it reads the storage of a tensor the graph computed (as_strided: "
                            "eager's memory layout of that tensor is not known to kiln)")
    if sum(o.numel() for o in outs) > _MAX_VIEW_ELEMENTS:
        return _unsupported("its view is too large to capture as a gather")
    bases, stand_ins, base = [], {}, 0
    try:
        for t, lay in zip(tensors, layouts):
            bases.append(base)
            stand_ins[id(t)] = _stand_in(t, base, lay)
            base += t.numel()
        with torch.no_grad():
            real = fn(*_substitute(args, stand_ins), **_substitute(kwargs or {}, stand_ins))
    except Exception as e:  # noqa: BLE001 - any failure: not captured
        first = str(e).splitlines()[0] if str(e) else ""
        return _unsupported(f"its view could not be indexed ({type(e).__name__}: {first})")
    reals = real if isinstance(real, tuple) else (real,)
    plan = []
    for o, r in zip(outs, reals):
        if not isinstance(r, torch.Tensor) or tuple(r.shape) != tuple(o.shape):
            return _unsupported("its view could not be indexed (another result on CPU)")
        flat = r.reshape(-1).to(torch.int64)
        if flat.numel() == 0:
            which = next(i for i, t in enumerate(tensors) if torch._C._is_alias_of(o, t))
            plan.append((which, ()))
            continue
        lo, hi = int(flat.min()), int(flat.max())
        if lo < 0:
            return _unsupported("its view reads storage the argument does not cover")
        which = next(i for i, b in enumerate(bases) if b <= lo < b + tensors[i].numel())
        if hi >= bases[which] + tensors[which].numel():
            return _unsupported("its view reads more than one argument")
        plan.append((which, tuple((flat - bases[which]).tolist())))
    return tuple(plan)


_PUBLIC = {"torch._C._special": "special", "torch._C._fft": "fft",
           "torch._C._linalg": "linalg"}


def qualified_name(fn) -> str:
    """``torch.special.erfcx``-style name of a torch function (for logs,
    kiln.explain and the compile-cache key)."""
    if isinstance(fn, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return str(fn)  # aten.add.Tensor
    mod = getattr(fn, "__module__", None) or ""
    name = getattr(fn, "__name__", None) or repr(fn)
    if mod in _PUBLIC:
        pub = _PUBLIC[mod]
        return f"torch.{pub}.{name.removeprefix(pub + '_')}"
    return f"{mod}.{name}" if mod else name


def view_copies(layout, steps):
    """Whether replaying view ``steps`` on an input laid out as ``layout``
    (sizes, strides, ...) gives a copy in eager (a contiguous() or reshape
    of a strided tensor) rather than a view of it."""
    sizes, strides = layout[0], layout[1]
    root = torch.empty_strided(sizes, strides, device="meta")
    t = root
    for step in steps:
        t = _replay(t, step)
    return not torch._C._is_alias_of(t, root)


def view_positions(sizes, layout, views, computed):
    """Per view (a tuple of view steps from a root of ``sizes``), the root's
    flat positions its elements are, row-major; or a str: why not. ``layout``:
    the root's eager layout recipe (None: contiguous assumed, ``computed``
    then says the root is a tensor the graph computed, whose eager layout is
    not known, so steps that copy or not by layout are refused)."""
    meta = torch.empty(sizes, dtype=torch.int64, device="meta")
    try:
        root = _stand_in(meta, 0, layout) if layout is not None else \
            torch.arange(meta.numel()).view(sizes)
        out = []
        for steps in views:
            t = root
            for step in steps:
                if computed and step[0] in ("reshape", "view", "contiguous", "flatten"):
                    return f"a {step[0]} step on a tensor the graph computed"
                t = _replay(t, step)
            if not torch._C._is_alias_of(t, root):
                return "a step of the view copies in eager"
            flat = t.reshape(-1)
            if flat.numel() and int(flat.min()) < 0:
                return "the view covers storage the base does not"
            out.append(tuple(flat.tolist()))
        return tuple(out)
    except Exception as e:  # noqa: BLE001 - any failure: not captured
        return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
