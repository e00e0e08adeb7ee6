# SPDX-License-Identifier: Apache-2.0
"""``kiln.from_export(ep)`` (and ``kiln.compile(ep)``): a torch.export
ExportedProgram compiled by kiln.

The program's ``graph_module`` is an fx GraphModule whose generated
``forward`` takes the lifted parameters, buffers and constants first, then
the user's flattened inputs, and calls ``torch.ops.aten.*`` overloads; kiln
captures it like any GraphModule (kiln/fx.py, the overloads through
capture/ops/AtenOps.cpp). Around it, as the graph signature says:

- inputs: the call's ``(args, kwargs)`` flattened with the program's input
  spec; parameters, buffers and constants come from the program's state;
- checks: each user input's sizes against the program's placeholders (a
  static dim must match; a symbolic one must lie in its range constraint):
  a ValueError naming the input, the dim and the range otherwise;
- outputs: buffer mutations (a BatchNorm's running statistics in training)
  written back into the program's buffers, user-input mutations into the
  caller's tensors, the user outputs unflattened with the output spec.

An export IR with pre-dispatch ``torch.vmap`` calls (GPT-2's attention mask
in transformers) is first lowered to plain ATen by torch
(``run_decompositions({})``, which decomposes no ATen op).

A dim the program exported as symbolic (``torch.export.Dim``) is marked
dynamic for kiln (``kiln.mark_dynamic`` on an alias of the input): one
graph with a ``?`` dim serves every size >= 2 in the range (0 and 1 are
specialized, as kiln always does; a graph with a per-op fallback
specializes).
"""
from __future__ import annotations

import torch
from torch.export.graph_signature import InputKind, OutputKind
from torch.utils import _pytree as pytree

from kiln.api import mark_dynamic
from kiln.fx import from_fx


def _lifted_value(ep, spec):
    if spec.kind == InputKind.PARAMETER:
        return ep.state_dict[spec.target]
    if spec.kind == InputKind.BUFFER:
        if spec.target in ep.state_dict:
            return ep.state_dict[spec.target]
        return ep.constants[spec.target]
    if spec.kind in (InputKind.CONSTANT_TENSOR, InputKind.CUSTOM_OBJ):
        return ep.constants[spec.target]
    raise NotImplementedError(f"kiln.from_export: input kind {spec.kind.name} is not supported")


def _dim_checks(ep):
    """Per user input: (name, [(dim, static size or None, (lo, hi) or None)])."""
    placeholders = [n for n in ep.graph_module.graph.nodes if n.op == "placeholder"]
    ranges = {str(k): v for k, v in ep.range_constraints.items()}
    checks = []
    for spec, node in zip(ep.graph_signature.input_specs, placeholders):
        if spec.kind != InputKind.USER_INPUT:
            continue
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor):
            checks.append((spec.arg.name, None))
            continue
        dims = []
        for d, size in enumerate(val.shape):
            if isinstance(size, int):
                dims.append((d, size, None))
                continue
            vr = ranges.get(str(size.node.expr))
            lo = int(vr.lower) if vr is not None and vr.lower.is_finite else None
            hi = int(vr.upper) if vr is not None and vr.upper.is_finite else None
            dims.append((d, None, (lo, hi)))
        checks.append((spec.arg.name, (val.dim(), dims)))
    return checks


def _check_inputs(checks, flat):
    if len(flat) != len(checks):
        raise TypeError(f"the exported program takes {len(checks)} inputs, got {len(flat)}")
    for (name, want), value in zip(checks, flat):
        if want is None:
            continue
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"input {name} of the exported program must be a tensor")
        rank, dims = want
        if value.dim() != rank:
            raise ValueError(f"input {name}: expected {rank} dims, got {value.dim()}")
        for d, size, rng in dims:
            actual = value.shape[d]
            if size is not None and actual != size:
                raise ValueError(f"input {name}: dim {d} is {actual}, the program was exported "
                                 f"for {size}")
            if rng is not None:
                lo, hi = rng
                if (lo is not None and actual < lo) or (hi is not None and actual > hi):
                    raise ValueError(f"input {name}: dim {d} is {actual}, outside the "
                                     f"program's range [{lo}, {hi}]")


def _symbolic(value, want):
    """``value``, or a same-storage alias of it whose dims the program
    exported as symbolic (``Dim``) are marked dynamic for kiln (sizes >= 2:
    0 and 1 stay specialized), so one graph serves the whole range."""
    if want is None:
        return value
    dims = [d for d, size, _ in want[1] if size is None and value.shape[d] >= 2]
    if not dims:
        return value
    alias = value.view(value.shape)
    mark_dynamic(alias, dims)
    return alias


def _without_predispatch(ep):
    """``ep``, or ``ep`` lowered to plain ATen by torch (``run_decompositions``
    with an empty table: no ATen op decomposed) when its export IR holds
    pre-dispatch functorch calls kiln does not capture (``torch.vmap``'s
    ``_add_batch_dim``/``_vmap_increment_nesting``: transformers' attention
    masks in GPT-2's export IR); torch applies vmap's batching rules then."""
    for node in ep.graph.nodes:
        module = getattr(node.target, "__module__", None) or ""
        if node.op == "call_function" and module.startswith("torch._functorch.predispatch"):
            return ep.run_decompositions({})
    return ep


def from_export(ep, fullgraph: bool = False):
    """A callable running ExportedProgram ``ep`` through kiln, taking the
    inputs ``ep.module()`` takes and returning what it returns."""
    if not isinstance(ep, torch.export.ExportedProgram):
        raise TypeError(f"kiln.from_export expects a torch.export.ExportedProgram, "
                        f"got {type(ep).__name__}")
    ep = _without_predispatch(ep)
    sig = ep.graph_signature
    lifted = [None if s.kind == InputKind.USER_INPUT else _lifted_value(ep, s)
              for s in sig.input_specs]
    user_slots = [i for i, s in enumerate(sig.input_specs) if s.kind == InputKind.USER_INPUT]
    user_names = {s.arg.name: k for k, s in enumerate(
        s for s in sig.input_specs if s.kind == InputKind.USER_INPUT)}
    checks = _dim_checks(ep)
    run = from_fx(ep.graph_module, fullgraph=fullgraph)
    in_spec, out_spec = ep.call_spec.in_spec, ep.call_spec.out_spec

    def compiled(*args, **kwargs):
        flat, spec = pytree.tree_flatten((args, kwargs))
        if in_spec is not None and spec != in_spec:
            raise TypeError(f"the exported program's inputs are structured as {in_spec}, "
                            f"got {spec}")
        _check_inputs(checks, flat)
        full = list(lifted)
        for slot, value, (_, want) in zip(user_slots, flat, checks):
            full[slot] = _symbolic(value, want)
        outs = run(*full)
        user_outs = []
        for spec_out, value in zip(sig.output_specs, outs):
            if spec_out.kind == OutputKind.BUFFER_MUTATION:
                with torch.no_grad():
                    ep.state_dict[spec_out.target].copy_(value)
            elif spec_out.kind == OutputKind.USER_INPUT_MUTATION:
                with torch.no_grad():
                    flat[user_names[spec_out.target]].copy_(value)
            else:
                user_outs.append(value)
        return pytree.tree_unflatten(user_outs, out_spec) if out_spec is not None else user_outs

    compiled.exported_program = ep
    return compiled
