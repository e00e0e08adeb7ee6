# SPDX-License-Identifier: Apache-2.0
"""Operator-level calls: ``torch.ops.<ns>.<op>[.<overload>](...)`` in captured code.

The capture (frontend/csrc/capture/ops/AtenOps.cpp) meets an OpOverload or
OpOverloadPacket object as a callee (a constant read through its attribute
chain, so guarded by identity like any global) and asks ``plan`` what to do
with it, once per overload:

Each plan is ``(how, target, drops, returns_list)``; ``returns_list``: the
overload returns a list (``Tensor[]``, ``int[]``: a list in eager;
torch-level targets may return a tuple or a torch.Size).

- ``("inline", target, drops)``: call ``target`` with the same arguments as a
  torch-level call the capture already maps or inlines. Targets, in order:
  the overload table (kiln/_aten_table.py: overloads whose torch-level
  spelling differs, each written once with the overload's exact schema
  semantics), the torch builtin of the same name (``torch.X``,
  ``torch._C._nn.X``, ``torch._C._special.X`` ...: Python's binding of the
  very same ATen overloads, so the same arguments select the same kernel)
  when kiln's op registry maps it, the canonical overload of an alias
  (``divide`` → ``div``), the ``torch.nn.functional`` function of the same
  name and parameters (``silu``, ``glu``), the Tensor method of the same name
  (``("method", name, drops)``: ``view``, in-place ``add_``), then torch's decomposition
  (``torch._decomp``) inlined as Python. ``drops``: keywords whose value is
  the schema's default and that torch-level calls need not see
  (``layout=torch.strided``, ``pin_memory=False`` ...). The C++ side checks
  the result's sizes and dtypes against the overload's own meta kernel, and
  runs the overload through the per-op fallback when the target breaks or
  disagrees: never silently different.
- ``("trusted", target, drops)``: a table entry for an overload whose meta
  kernel disagrees with eager's CPU kernel (batch norm's saved statistics in
  eval mode): not checked, and a break rather than a fallback on failure.
- ``("method", name, drops)``: Tensor method ``name`` on the first argument.
- ``("out", functional, ())``: an ``out=`` overload: ``functional`` (the
  overload with the same arguments but ``out``) computed, then stored.
``quantized_decomposed`` overloads (PT2E's quantize/dequantize) inline the
Python kernel torch registers for them (torch.ao.quantization.fx._decomposed).

- ``("fallback", None, ())``: the overload itself through the per-op fallback
  (kiln/_fallback.py: meta shapes; random, mutating and data-dependent
  overloads are refused there, naming the overload).
- ``("break", (category, reason), ())``: a graph break naming the overload
  (a custom op with no fake kernel, a mutating custom op).

``kind(op)`` classifies an overload for ``python -m kiln.coverage --aten``.
"""
from __future__ import annotations

import types

import torch

from kiln._aten_table import META_DIFFERS, OVERLOADS, REFUSED

_aten = torch.ops.aten
_OPS_TYPES = (torch._ops.OpOverload, torch._ops.OpOverloadPacket)

# Keywords of factory/conversion schemas whose default values torch-level
# calls may omit.
_DROPPABLE = (("layout", None), ("layout", torch.strided), ("pin_memory", None),
              ("pin_memory", False), ("memory_format", None), ("non_blocking", False),
              ("device", None), ("dtype", None), ("implicit", False),
              # kiln's results are laid out contiguously: these formats are its own
              ("memory_format", torch.contiguous_format),
              ("memory_format", torch.preserve_format))


# prims whose torch builtin of the same name computes the same values for
# every input the prim accepts (prims.div truncates integers: not listed).
_PRIMS_SAME_NAME = {
    "abs", "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cos", "cosh", "erf",
    "exp", "expm1", "floor", "ceil", "log", "log1p", "log2", "log10", "neg", "sin", "sinh",
    "sqrt", "rsqrt", "tan", "tanh", "sign", "add", "sub", "mul", "maximum", "minimum", "eq", "ne",
    "lt", "le", "gt", "ge", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "where",
    "permute", "clone", "reciprocal", "round", "trunc", "digamma", "lgamma", "erfc", "exp2",
    "sigmoid", "pow", "fmod", "hypot", "nextafter", "imag", "real", "isfinite", "signbit",
}

_MODULES = (torch, torch._C._nn, torch._C._special, torch._C._linalg, torch._C._fft)
_mapped = None


def _mapped_callables():
    """ids of the torch callables and the Tensor method names kiln's op
    registry maps (kiln._C.mapped_ops())."""
    global _mapped
    if _mapped is None:
        from kiln import _C
        raw = _C.mapped_ops()
        ids = set()
        for module, name, _ in raw["functions"]:
            mod = __import__(module, fromlist=["_"])
            obj = getattr(mod, name, None)
            if obj is not None:
                ids.add(id(obj))
        methods = {n for n, _, _ in raw["methods"]}
        methods |= {n + "_" for n, _, inplace in raw["methods"] if inplace}
        _mapped = (ids, methods)
    return _mapped


def _same_name_function(op):
    """The torch builtin binding ``op``'s ATen packet, or None."""
    ns, name = op.namespace, op._schema.name.split("::")[-1]
    if ns == "prims":
        return getattr(torch, name, None) if name in _PRIMS_SAME_NAME else None
    if ns != "aten":
        return None
    for mod in _MODULES:
        fn = getattr(mod, name, None)
        if isinstance(fn, types.BuiltinFunctionType):
            return fn
    return None


# ATen alias packets (the same kernels under another name).
_ALIASES = {"divide": "div", "multiply": "mul", "subtract": "sub", "true_divide": "div",
            "absolute": "abs", "clip": "clamp", "greater": "gt", "greater_equal": "ge",
            "less": "lt", "less_equal": "le", "not_equal": "ne", "negative": "neg",
            "arccos": "acos", "arcsin": "asin", "arctan": "atan", "arctan2": "atan2",
            "arccosh": "acosh", "arcsinh": "asinh", "arctanh": "atanh", "fix": "trunc",
            "concat": "cat", "concatenate": "cat", "swapaxes": "transpose",
            "swapdims": "transpose", "moveaxis": "movedim", "special_expit": "sigmoid",
            "special_exp2": "exp2", "special_expm1": "expm1", "special_log1p": "log1p",
            "special_round": "round", "special_sinc": "sinc", "special_logit": "logit",
            "special_erf": "erf", "special_erfc": "erfc", "special_psi": "digamma",
            "special_digamma": "digamma", "special_gammaln": "lgamma"}


def _alias_of(op):
    """The overload of the canonical packet an alias overload names (same
    overload name and arguments), or None."""
    name = op._schema.name.split("::")[-1]
    canonical = _ALIASES.get(name)
    if op.namespace != "aten" or canonical is None:
        return None
    other = getattr(getattr(_aten, canonical), op._overloadname, None)
    if other is None:
        return None
    same = [(a.name, str(a.type)) for a in other._schema.arguments] == \
        [(a.name, str(a.type)) for a in op._schema.arguments]
    return other if same else None


def _functional_twin(op, ids):
    """``torch.nn.functional.<name>`` when kiln maps it and its positional
    parameters are the overload's (``self`` as ``input``), else None."""
    import inspect
    name = op._schema.name.split("::")[-1]
    fn = getattr(torch.nn.functional, name, None)
    if op.namespace != "aten" or fn is None or id(fn) not in ids:
        return None
    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return None
    names = ["input" if a.name == "self" else a.name for a in op._schema.arguments]
    if any(str(a.type) == "int" and a.name == "reduction" for a in op._schema.arguments):
        return None  # ATen's reduction is an enum int, F's a string
    return fn if params[:len(names)] == names else None


def _decomposition(op):
    try:
        from torch._decomp import decomposition_table
    except ImportError:  # pragma: no cover - torch without _decomp
        return None
    d = decomposition_table.get(op)
    # torch._refs entries sit behind a torch._dynamo.disable wrapper the
    # capture cannot enter: not worth a failed trace before the fallback.
    if d is None or (getattr(d, "__module__", "") or "").startswith("torch._refs"):
        return None
    return d


def _quantized_decomposed(op):
    """The Python kernel torch registers for a ``quantized_decomposed``
    overload (torch.ao.quantization.fx._decomposed: ``quantize_per_tensor``,
    ``quantize_per_tensor_tensor`` ...: PT2E's q/dq ops), or None."""
    try:
        import torch.ao.quantization.fx._decomposed as qd
    except ImportError:  # pragma: no cover - torch without torch.ao
        return None
    name = op._schema.name.split("::")[-1]
    if op._overloadname != "default":
        name = f"{name}_{op._overloadname}"
    fn = getattr(qd, name, None)
    return fn if isinstance(fn, types.FunctionType) else None


def _is_custom(op):
    return op.namespace not in ("aten", "prims", "quantized_decomposed", "quantized")


def _custom_plan(op):
    name = op._schema.name
    if op._schema.is_mutable:
        return ("break", ("side-effect", f"custom op {op} mutates its arguments"), ())
    has_meta = any(torch._C._dispatch_has_kernel_for_dispatch_key(name, k)
                   for k in ("Meta", "CompositeImplicitAutograd", "CompositeExplicitAutograd"))
    if not has_meta:
        return ("break", ("unsupported-op",
                          f"custom op {op} has no fake (meta) kernel: register one with "
                          "torch.library.register_fake to run it inside compiled graphs"), ())
    return ("fallback", None, ())


_plans: dict = {}


def plan(op):
    """What the capture does with a call of OpOverload ``op`` (module doc)."""
    p = _plans.get(op)
    if p is None:
        returns = op._schema.returns
        as_list = len(returns) == 1 and str(returns[0].type).startswith("List[")
        p = _plans[op] = _plan(op) + (as_list,)
    return p


def _out_functional(op):
    """The functional overload an ``out=`` overload computes into ``out``
    (same arguments without the out ones), or None."""
    args = op._schema.arguments
    outs = [a for a in args if a.is_out]
    if len(outs) != 1 or outs[0].name != "out":
        return None
    want = [(a.name, str(a.type)) for a in args if not a.is_out]
    packet = getattr(torch.ops, op.namespace)
    packet = getattr(packet, op._schema.name.split("::")[-1])
    for name in packet.overloads():
        other = getattr(packet, name)
        if other is not op and [(a.name, str(a.type)) for a in other._schema.arguments] == want:
            return other
    return None


def _plan(op):
    if _is_custom(op):
        return _custom_plan(op)
    key = str(op)
    if key in REFUSED:
        return ("break", ("data-dependent", f"{op}: {REFUSED[key]}"), ())
    if key in OVERLOADS:
        return ("trusted" if key in META_DIFFERS else "inline", OVERLOADS[key], _DROPPABLE)
    if op.namespace == "quantized_decomposed":
        fn = _quantized_decomposed(op)
        return ("inline", fn, ()) if fn is not None else ("fallback", None, ())
    if any(a.is_out for a in op._schema.arguments):
        functional = _out_functional(op)
        if functional is not None:
            return ("out", functional, ())
        return ("fallback", None, ())
    name = op._schema.name.split("::")[-1]
    if op._schema.is_mutable and not name.endswith("_"):
        return ("break", ("side-effect", f"{op} mutates its arguments"), ())
    ids, methods = _mapped_callables()
    fn = _same_name_function(op)
    if fn is not None and id(fn) in ids:
        return ("inline", fn, _DROPPABLE)
    alias = _alias_of(op)
    if alias is not None:
        return plan(alias)[:3]
    twin = _functional_twin(op, ids)
    if twin is not None:
        return ("inline", twin, _DROPPABLE)
    if op.namespace == "aten" and name in methods and _first_is_self(op):
        return ("method", name, _DROPPABLE)
    decomp = _decomposition(op)
    if decomp is not None:
        return ("inline", decomp, ())
    return ("fallback", None, ())


def _first_is_self(op):
    args = op._schema.arguments
    return bool(args) and args[0].name == "self" and not args[0].kwarg_only


def resolve_packet(packet, args, kwargs):
    """The overload of ``packet`` torch would pick for these arguments (meta
    tensors standing in for graph tensors); None when none matches."""
    try:
        name = torch._C._jit_resolve_packet(packet._qualified_op_name, *args, **kwargs)
    except Exception:  # noqa: BLE001 - no overload accepts them
        return None
    return getattr(packet, name or "default", None)


def meta_result(op, args, kwargs):
    """((sizes, dtype) or None per result) of ``op`` run on meta tensors, or
    None when it does not run there (the check is then skipped)."""
    try:
        with torch.no_grad():
            out = op(*args, **kwargs)
    except Exception:  # noqa: BLE001 - no meta kernel, data-dependent ...
        return None
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return tuple((tuple(o.shape), o.dtype) if isinstance(o, torch.Tensor) else None
                 for o in outs)


def _custom_op_def_type():
    try:
        from torch._library.custom_ops import CustomOpDef
    except ImportError:  # pragma: no cover - torch without torch.library.custom_op
        return ()
    return (CustomOpDef,)


# What the capture treats as an operator object (AtenOps.cpp).
OPERATOR_TYPES = _OPS_TYPES + _custom_op_def_type()


def as_overload(obj):
    """The OpOverload (or packet) behind operator object ``obj``."""
    if isinstance(obj, _OPS_TYPES):
        return obj
    return getattr(obj, "_opoverload", None)


def kind(op):
    """'lowered', 'decomposed', 'fallback' or 'unsupported' (static: what
    ``plan`` chose; the measured run is kiln.coverage --aten --measure)."""
    how, target = plan(op)[:2]
    if how == "break":
        return "unsupported"
    if how == "fallback":
        return "fallback"
    if how == "out":
        return kind(target)
    if target is _decomposition(op) and str(op) not in OVERLOADS:
        return "decomposed"
    return "lowered"
