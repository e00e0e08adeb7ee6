# SPDX-License-Identifier: Apache-2.0
"""``python -m kiln.coverage --aten``: the Core ATen opset, per overload.

Each overload tagged ``torch.Tag.core`` is classified by what kiln does
with a ``torch.ops.aten.<op>.<overload>(...)`` call:

- ``lowered``: kiln builds IR for it (a mapped torch-level handler or the
  overload table of kiln/_aten.py);
- ``decomposed``: torch's decomposition (``torch._decomp``) is traced into
  ops kiln lowers;
- ``fallback``: it runs through torch inside the graph (per-op fallback,
  shapes from its meta kernel);
- ``unsupported``: the graph breaks (random, mutating, data-dependent ...).

Without ``--measure`` that is the static plan (kiln/_aten.py). With it, every
overload is run on the samples of kiln/_aten_samples.py (several shapes and
dtypes, 0-d, empty, non-contiguous): compiled by kiln, compared with eager,
and classified by what happened (``kiln.stats()``: graph breaks and eager
frames make it unsupported, fallback calls make it fallback); an overload
with no sample keeps its static class, marked ``(static)``.
"""
from __future__ import annotations

import torch

from kiln import _aten, _aten_samples

KINDS = ("lowered", "decomposed", "fallback", "unsupported")

# Overloads whose values are not reproducible (random, uninitialized
# memory): compared by sizes and dtypes only.
_UNREPRODUCIBLE = ("aten.empty", "aten.empty_strided", "aten.rand", "aten.randn",
                   "aten.randperm", "aten.native_dropout", "aten.bernoulli", "aten.normal",
                   "aten.uniform", "aten.exponential", "aten.geometric", "aten.log_normal",
                   "aten.cauchy", "aten.random")


def runner(op, args, kwargs):
    """(fn, tensors): ``fn(*tensors)`` calls ``op`` with ``args``/``kwargs``,
    every tensor in them a positional parameter (generated source with a
    plain call, so the capture sees ``op`` as a constant)."""
    scope = {"op": op}
    tensors = []

    def src(v):
        if isinstance(v, torch.Tensor):
            tensors.append(v)
            return f"t{len(tensors) - 1}"
        if type(v) in (list, tuple):
            inner = ", ".join(src(x) for x in v)
            return f"[{inner}]" if type(v) is list else f"({inner}{',' if len(v) == 1 else ''})"
        name = f"c{len(scope)}"
        scope[name] = v
        return name

    call = ", ".join([src(a) for a in args] + [f"{k}={src(v)}" for k, v in kwargs.items()])
    params = ", ".join(f"t{i}" for i in range(len(tensors)))
    exec(f"def run({params}):\n    return op({call})\n", scope)  # noqa: S102
    return scope["run"], tensors


def _same(actual, expected, loose):
    if isinstance(expected, (tuple, list)):
        return (isinstance(actual, (tuple, list)) and len(actual) == len(expected)
                and all(_same(a, e, loose) for a, e in zip(actual, expected)))
    if not isinstance(expected, torch.Tensor):
        return actual == expected
    if not isinstance(actual, torch.Tensor) or actual.dtype != expected.dtype \
            or actual.shape != expected.shape:
        return False
    if loose:
        return True
    tol = {torch.float32: (1e-4, 1e-5), torch.float64: (1e-9, 1e-11)}
    rtol, atol = tol.get(expected.dtype, (0, 0))
    return torch.allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True) \
        if expected.is_floating_point() else torch.equal(actual, expected)


def run_sample(op, args, kwargs):
    """Compiles one call of ``op`` with kiln: (kind it ran as, matches eager)."""
    import kiln
    fn, tensors = runner(op, args, kwargs)
    kiln.reset()
    compiled = kiln.compile(fn)
    with torch.no_grad():
        expected = fn(*[t.clone() for t in tensors])
        actual = compiled(*[t.clone() for t in tensors])
    s = kiln.stats()
    kiln.reset()
    if s["graph_breaks"] or s["eager_calls"] or not s["compiled_calls"]:
        how = "unsupported"
    elif s["fallback_ops"]:
        how = "fallback"
    else:
        how = _aten.kind(op)
        how = how if how in ("lowered", "decomposed") else "lowered"
    loose = str(op).rsplit(".", 1)[0] in _UNREPRODUCIBLE
    return how, _same(actual, expected, loose)


def measure(op):
    """(kind, number of samples, number matching eager) of overload ``op``;
    the worst kind over its samples."""
    cases = _aten_samples.samples(op)
    if not cases:
        return _aten.kind(op), 0, 0
    worst, good = "lowered", 0
    for args, kwargs in cases:
        try:
            how, ok = run_sample(op, args, kwargs)
        except Exception:  # noqa: BLE001 - compiled call raised: counts as not supported
            how, ok = "unsupported", False
        good += ok
        if KINDS.index(how) > KINDS.index(worst):
            worst = how
    if worst == "lowered" and _aten.kind(op) == "decomposed":
        worst = "decomposed"
    return worst, len(cases), good


def report(measured=False):
    """{overload name: (kind, samples, matching)} over the Core ATen opset
    (samples = -1 for the static plan)."""
    out = {}
    for op in _aten_samples.core_overloads():
        out[str(op)] = measure(op) if measured else (_aten.kind(op), -1, -1)
    return out


def main(measured=False, listing=False, as_json=False):
    import json
    import sys
    rep = report(measured)
    if as_json:
        json.dump(rep, sys.stdout, indent=1)
        print()
        return 0
    counts = {k: [n for n, v in rep.items() if v[0] == k] for k in KINDS}
    total = len(rep)
    title = "measured on samples" if measured else "static plan"
    print(f"Core ATen overloads (torch {torch.__version__}): {total} ({title})")
    for k in KINDS:
        print(f"  {k:12s} {len(counts[k]):4d}  ({100.0 * len(counts[k]) / total:.1f}%)")
    own = len(counts["lowered"]) + len(counts["decomposed"])
    print(f"  lowered or decomposed by kiln: {100.0 * own / total:.1f}%")
    if measured:
        wrong = [n for n, (_, c, g) in rep.items() if c > g]
        sampled = sum(1 for _, c, _ in rep.values() if c > 0)
        print(f"  overloads with samples: {sampled}; differing from eager: {len(wrong)}"
              + (f" ({' '.join(wrong)})" if wrong else ""))
    if listing:
        for k in KINDS:
            print(f"{k}: " + " ".join(counts[k]))
    return 0
