# SPDX-License-Identifier: Apache-2.0
"""Comparison of a compiled run with the eager run of the same case.

``snapshot`` copies what a call produced (its result, its arguments after
the call, the module's state) so later calls cannot change it; ``same``
compares two snapshots: tensors by shape, dtype and values with
dtype-appropriate tolerances (or, for random cases, by shape, dtype and
moments), containers by exact type and element-wise, dataclasses and user
objects by their fields, floats with a relative tolerance, everything else
with ``==``. It returns "" when they match, else the first difference.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import torch

_TOL = {torch.float16: (1e-2, 1e-2), torch.bfloat16: (2e-2, 2e-2),
        torch.float32: (1.3e-4, 1e-5), torch.float64: (1e-7, 1e-7)}


def snapshot(value, depth: int = 0):
    """A detached deep copy of tensors inside `value` (structure kept)."""
    if depth > 20:
        return value
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, dict):
        copy = type(value).__new__(type(value))
        dict.__init__(copy)
        for k, v in value.items():
            dict.__setitem__(copy, k, snapshot(v, depth + 1))
        return copy
    if isinstance(value, list):
        return [snapshot(v, depth + 1) for v in value]
    if isinstance(value, tuple):
        items = [snapshot(v, depth + 1) for v in value]
        if hasattr(value, "_fields"):
            return type(value)(*items)
        if type(value) in (tuple, torch.Size):
            return type(value)(items)
        return _Typed(type(value), tuple(items))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _Typed(type(value), {f.name: snapshot(getattr(value, f.name), depth + 1)
                                    for f in dataclasses.fields(value)})
    return value


@dataclasses.dataclass
class _Typed:
    """A copied value of a type that cannot be rebuilt field by field."""
    cls: type
    data: object


def _tensor_diff(a: torch.Tensor, b: torch.Tensor, random: bool) -> str:
    if a.shape != b.shape or a.dtype != b.dtype:
        return f"tensor {tuple(b.shape)}/{b.dtype} vs eager {tuple(a.shape)}/{a.dtype}"
    if a.requires_grad != b.requires_grad:
        return "requires_grad differs"
    if random:
        return _moments_diff(a, b)
    rtol, atol = _TOL.get(a.dtype, (0, 0))
    try:
        torch.testing.assert_close(b, a, rtol=rtol, atol=atol, equal_nan=True)
    except AssertionError as e:
        return "values differ: " + str(e).splitlines()[0][:200]
    return ""


def _moments_diff(a: torch.Tensor, b: torch.Tensor) -> str:
    """Random outputs: same finiteness; close mean, std and zero fraction."""
    if not a.is_floating_point() or a.numel() < 16:
        return ""
    a64, b64 = a.double(), b.double()
    if bool(torch.isfinite(a64).all()) != bool(torch.isfinite(b64).all()):
        return "finiteness differs"
    sd = float(a64.std()) + 1e-6
    bound = 6 * sd * math.sqrt(2.0 / a.numel()) + 1e-6
    if abs(float(a64.mean()) - float(b64.mean())) > bound:
        return f"mean {float(b64.mean()):.4f} vs eager {float(a64.mean()):.4f}"
    ratio = (float(b64.std()) + 1e-6) / sd
    if not 0.5 < ratio < 2.0:
        return f"std ratio {ratio:.3f}"
    za, zb = float((a64 == 0).double().mean()), float((b64 == 0).double().mean())
    if abs(za - zb) > 0.25:
        return f"zero fraction {zb:.2f} vs eager {za:.2f}"
    return ""


def same(a, b, random: bool = False, path: str = "out") -> str:
    """"" if `b` matches the eager value `a`, else where and how it differs."""
    if type(a) is not type(b):
        if isinstance(a, float) and isinstance(b, float):
            pass
        else:
            return f"{path}: type {type(b).__name__} vs eager {type(a).__name__}"
    if isinstance(a, torch.Tensor):
        diff = _tensor_diff(a, b, random)
        return f"{path}: {diff}" if diff else ""
    if isinstance(a, np.ndarray):
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"{path}: ndarray {b.shape}/{b.dtype} vs eager {a.shape}/{a.dtype}"
        ok = random or np.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True)
        return "" if ok else f"{path}: ndarray values differ"
    if isinstance(a, dict):
        if list(a.keys()) != list(b.keys()):
            return f"{path}: keys {list(b.keys())} vs eager {list(a.keys())}"
        for k in a:
            diff = same(a[k], b[k], random, f"{path}[{k!r}]")
            if diff:
                return diff
        return ""
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return f"{path}: length {len(b)} vs eager {len(a)}"
        for i, (x, y) in enumerate(zip(a, b)):
            diff = same(x, y, random, f"{path}[{i}]")
            if diff:
                return diff
        return ""
    if isinstance(a, _Typed):
        if a.cls is not b.cls:
            return f"{path}: type {b.cls.__name__} vs eager {a.cls.__name__}"
        return same(a.data, b.data, random, f"{path}.{a.cls.__name__}")
    if isinstance(a, float):
        if random or (math.isnan(a) and math.isnan(b)):
            return ""
        return "" if math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-5) else f"{path}: {b} vs eager {a}"
    if isinstance(a, (int, str, bool, type(None), torch.dtype, torch.device)):
        return "" if a == b else f"{path}: {b!r} vs eager {a!r}"
    if hasattr(a, "__dict__") and not isinstance(a, type):
        return same(snapshot(vars(a)), snapshot(vars(b)), random, f"{path}.__dict__")
    try:
        return "" if a == b else f"{path}: {b!r} vs eager {a!r}"
    except Exception as e:  # noqa: BLE001 - an uncomparable value is a difference
        return f"{path}: cannot compare ({type(e).__name__})"
