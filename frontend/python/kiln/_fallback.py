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
  sizes); every call's results are checked against the meta sizes anyway;
- it mutates none of its tensor arguments (their version counters) and none
  of its results aliases an argument (views keep kiln's value semantics
  simple: kiln maps the common view ops itself).

Returns ``(is_tuple, ((sizes, dtype), ...))`` or a Refusal: why not.
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


class _Recorder(TorchDispatchMode):
    """Notes the first aten op with a refused tag, runs every op as is."""

    def __init__(self):
        super().__init__()
        self.refused = None

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if self.refused is None:  # False: random ops accepted, nothing refused
            for tag in getattr(func, "tags", ()):
                if tag in _REFUSED_TAGS:
                    category, why = _REFUSED_TAGS[tag]
                    self.refused = Refusal(category, f"{func} {why}")
                    break
        return func(*args, **(kwargs or {}))


def _unsupported(reason: str) -> Refusal:
    return Refusal("unsupported-op", reason)


def probe(fn, args, kwargs, tensors):
    """Runs ``fn(*args, **kwargs)`` on meta tensors (``tensors``: those among
    the arguments). Returns (True, the class of a torch.return_types result,
    or False for one tensor; the outputs' (shape, dtype)) or the reason to
    refuse."""
    versions = [t._version for t in tensors]
    recorder = _Recorder()
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
    is_tuple = type(out) is tuple or (
        isinstance(out, tuple) and type(out).__module__ == "torch.return_types")
    outs = out if is_tuple else (out,)
    if not outs:
        return _unsupported("it returns an empty tuple")
    meta = []
    for o in outs:
        if type(o) is not torch.Tensor:
            return _unsupported(f"it returns a {type(o).__name__}, not a tensor or a tuple of tensors")
        if o.device.type != "meta":
            return _unsupported(f"its result is on {o.device}, not on the inputs' device")
        if any(torch._C._is_alias_of(o, t) for t in tensors):
            return _unsupported("its result is a view of an argument")
        meta.append((tuple(o.shape), o.dtype))
    # A torch.return_types result keeps its class (values/indices fields).
    structseq = type(out) if is_tuple and type(out) is not tuple else is_tuple
    return structseq, tuple(meta)


_PUBLIC = {"torch._C._special": "special", "torch._C._fft": "fft",
           "torch._C._linalg": "linalg"}


def qualified_name(fn) -> str:
    """``torch.special.erfcx``-style name of a torch function (for logs,
    kiln.explain and the compile-cache key)."""
    mod = getattr(fn, "__module__", None) or ""
    name = getattr(fn, "__name__", None) or repr(fn)
    if mod in _PUBLIC:
        pub = _PUBLIC[mod]
        return f"torch.{pub}.{name.removeprefix(pub + '_')}"
    return f"{mod}.{name}" if mod else name
