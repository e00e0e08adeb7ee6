# SPDX-License-Identifier: Apache-2.0
"""Which torch callables kiln maps to its IR, and which fall back.

``python -m kiln.coverage`` prints, for ``torch.nn.functional``, the
``torch.Tensor`` methods (and their Python operators), the ``torch.*``
functions and the ``torch.nn`` modules, how many are mapped and how many
would fall back (run eagerly, with the reason logged). ``--list`` also
names them; ``--json`` prints everything as JSON. ``--aten`` reports the Core
ATen overloads instead (lowered / decomposed / fallback / unsupported,
kiln/_aten_coverage.py; ``--measure`` runs each on samples).

The mapped functions and methods come from the C++ op table itself
(``kiln._C.mapped_ops()``, frontend/csrc/capture/ops/OpRegistry.h), so this
report cannot drift from what capture does. In-place methods (``x.add_``)
count as mapped when their out-of-place form is mapped and is not a view.
Operators are handled by the interpreter's binary-operator path. A module
counts as mapped when its ``forward`` (and the ``self._helper`` methods it
calls) only call mapped ``F.*`` / ``torch.*`` functions and Tensor
methods: a source inspection, so it is an estimate; the conformance suite
(test/python/test_conformance.py) runs the modules it lists.
"""
import argparse
import inspect
import json
import re
import sys

import torch
import torch.nn.functional as F

from kiln import _C

# Python operators on tensors that capture maps (Interpreter::tensorBinary and
# the unary/getitem paths), by dunder name.
MAPPED_OPERATORS = {
    "__add__", "__radd__", "__iadd__", "__sub__", "__rsub__", "__isub__", "__mul__", "__rmul__",
    "__imul__", "__truediv__", "__rtruediv__", "__itruediv__", "__pow__", "__rpow__", "__ipow__",
    "__matmul__", "__rmatmul__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__",
    "__neg__", "__getitem__", "__len__",
}
OPERATORS = MAPPED_OPERATORS | {
    "__and__", "__rand__", "__iand__", "__or__", "__ror__", "__ior__", "__xor__", "__rxor__",
    "__ixor__", "__invert__", "__mod__", "__rmod__", "__imod__", "__floordiv__", "__rfloordiv__",
    "__ifloordiv__", "__lshift__", "__rshift__", "__abs__", "__pos__", "__setitem__",
}

# Helpers that torch.nn.functional re-exports but that are not ops.
_NOT_OPS = {"handle_torch_function", "has_torch_function", "has_torch_function_unary",
            "has_torch_function_variadic", "boolean_dispatch", "assert_int_or_pair",
            "Callable", "Optional", "List", "Tuple", "Union", "TYPE_CHECKING", "BroadcastingList1",
            "BroadcastingList2", "BroadcastingList3", "DType", "Tensor", "deprecated"}


def _is_op(obj, name):
    return (callable(obj) and not inspect.isclass(obj) and not inspect.ismodule(obj)
            and not name.startswith("_") and name not in _NOT_OPS)


def _split(names, mapped):
    names = sorted(set(names))
    return [n for n in names if n in mapped], [n for n in names if n not in mapped]


def table():
    """The C++ table as {'functions': {(module, name): op}, 'methods': {...}}."""
    raw = _C.mapped_ops()
    functions = {(m, n): op for m, n, op in raw["functions"]}
    methods = {n: (op, inplace) for n, op, inplace in raw["methods"]}
    return functions, methods


def _mapped_method_names(methods):
    names = set(methods)
    names |= {n + "_" for n, (_, inplace) in methods.items() if inplace}
    return names


# Modules the source inspection would pass but whose forward needs what kiln
# does not map (submodule calls it cannot follow, or a mode it lacks).
_KNOWN_FALLBACK = {"Transformer": "runs TransformerEncoder/Decoder layers (fast paths, masks)",
                   "UpsamplingBilinear2d": "bilinear interpolation is not mapped"}

# Receivers whose calls are not tensor ops (Python helpers in forward code).
_IGNORED_RECEIVERS = {"warnings", "math", "self", "F", "torch", "_VF", "super", "str", "os"}


def _module_calls(cls):
    """F.*, torch.* and other method calls of cls.forward and its self helpers;
    `opaque` is set when it calls into torch internals (_VF, torch._C)."""
    seen, todo = set(), ["forward"]
    calls = {"F": set(), "torch": set(), "method": set(), "opaque": False}
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        fn = getattr(cls, name, None)
        try:
            src = inspect.getsource(fn)
        except (TypeError, OSError):
            continue
        src = re.sub(r"(?s)\"\"\".*?\"\"\"", "", src)  # docstrings
        calls["opaque"] |= bool(re.search(r"\b_VF\.|torch\._C\.|torch\.ops\.", src))
        calls["F"] |= set(re.findall(r"\bF\.(\w+)\(", src))
        calls["torch"] |= set(re.findall(r"\btorch\.(\w+)\(", src))
        calls["method"] |= {m for r, m in re.findall(r"\b(\w+)\.(\w+)\(", src)
                            if r not in _IGNORED_RECEIVERS}
        todo += [m for m in re.findall(r"\bself\.(_\w+)\(", src)]
    return calls


def report():
    """Mapped / unmapped names per namespace."""
    functions, methods = table()
    f_mapped = {n for (m, n) in functions if m == "torch.nn.functional"}
    t_mapped = {n for (m, n) in functions if m == "torch"}
    m_mapped = _mapped_method_names(methods)
    out = {}
    out["torch.nn.functional"] = _split(
        [n for n in dir(F) if _is_op(getattr(F, n), n)], f_mapped)
    tensor_methods = [n for n in dir(torch.Tensor)
                      if not n.startswith("_") and callable(getattr(torch.Tensor, n, None))]
    out["torch.Tensor methods"] = _split(tensor_methods, m_mapped)
    out["torch.Tensor operators"] = _split(
        [n for n in OPERATORS if hasattr(torch.Tensor, n)], MAPPED_OPERATORS)
    out["torch functions"] = _split(
        [n for n in dir(torch) if _is_op(getattr(torch, n), n)], t_mapped)
    modules, mapped_modules = [], set()
    for name in dir(torch.nn):
        cls = getattr(torch.nn, name)
        if not (inspect.isclass(cls) and issubclass(cls, torch.nn.Module)) or name.startswith("_"):
            continue
        if cls.__module__.startswith("torch.nn.modules") is False:
            continue
        modules.append(name)
        calls = _module_calls(cls)
        used = calls["F"] | calls["torch"] | calls["method"]
        ok = (not calls["opaque"] and all(n in f_mapped for n in calls["F"])
              and all(n in t_mapped for n in calls["torch"])
              and all(n in m_mapped for n in calls["method"]))
        if name in _KNOWN_FALLBACK:
            ok = False
        if ok and (used or name in ("Identity", "Sequential", "ModuleList", "ModuleDict")):
            mapped_modules.add(name)
    out["torch.nn modules"] = _split(modules, mapped_modules)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m kiln.coverage", description=__doc__.split("\n")[0])
    parser.add_argument("--list", action="store_true", help="also name the mapped and unmapped callables")
    parser.add_argument("--json", action="store_true", help="print the full report as JSON")
    parser.add_argument("--aten", action="store_true",
                        help="report the Core ATen overloads instead (kiln/_aten_coverage.py)")
    parser.add_argument("--measure", action="store_true",
                        help="with --aten: run every overload's samples compiled and classify "
                             "by what ran")
    args = parser.parse_args(argv)
    if args.aten:
        from kiln import _aten_coverage
        return _aten_coverage.main(args.measure, args.list, args.json)
    rep = report()
    if args.json:
        json.dump({k: {"mapped": m, "unmapped": u} for k, (m, u) in rep.items()}, sys.stdout, indent=1)
        print()
        return 0
    total = 0
    for ns, (mapped, unmapped) in rep.items():
        n = len(mapped) + len(unmapped)
        total += len(mapped)
        print(f"{ns:26s} mapped {len(mapped):4d} / {n:4d}   fall back {len(unmapped):4d}")
        if args.list:
            print("  mapped:   " + " ".join(mapped))
            print("  fallback: " + " ".join(unmapped))
    print(f"{'total mapped':26s} {total:4d} (functions, methods, operators and modules)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
