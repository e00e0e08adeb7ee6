# SPDX-License-Identifier: Apache-2.0
"""Autograd glue for compiled graphs without a compiled backward.

The forward runs kiln's compiled code; the backward recomputes the original
Python function eagerly (kiln's frame hook disabled) on the same inputs and
differentiates that, so gradients are exactly eager's. The function must be
deterministic for this to hold: a graph with random ops (dropout ...) gets a
recompute wrapped by kiln._random.replaying, which gives the random calls
the values the compiled forward used.
"""
from __future__ import annotations

import torch


class _CompiledFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, run, recompute, *inputs):
        ctx.recompute = recompute
        ctx.inputs = inputs
        ctx.versions = [t._version for t in inputs]
        with torch.no_grad():
            outs = run(*inputs)
        ctx.mark_non_differentiable(*[o for o in outs if not o.is_floating_point()])
        return outs

    @staticmethod
    def backward(ctx, *grads):
        inputs = ctx.inputs
        # The backward recomputes from the inputs' current values: if one was
        # modified in place since the forward, the gradients would silently
        # differ from eager's (which raises when it saved that tensor).
        for t, v in zip(inputs, ctx.versions):
            if t._version != v:
                raise RuntimeError(
                    "kiln: one of the variables needed for gradient computation has been "
                    "modified by an inplace operation (an input of a compiled graph changed "
                    f"between forward and backward: version {v} -> {t._version})")
        wanted = [i for i, t in enumerate(inputs) if t.requires_grad]
        with torch.enable_grad():
            outs = ctx.recompute()  # runs with kiln's frame hook disabled
        pairs = [(o, g) for o, g in zip(outs, grads)
                 if isinstance(o, torch.Tensor) and o.requires_grad and g is not None]
        result = [None] * len(inputs)
        # The same tensor may be several inputs (passed twice, tied weights):
        # its gradient is returned once, else autograd would sum the copies.
        first = {}
        wanted = [i for i in wanted if first.setdefault(id(inputs[i]), i) == i]
        if pairs and wanted:
            # Grad mode is on here exactly when the caller asked for
            # create_graph=True: then the gradients stay differentiable.
            got = torch.autograd.grad([o for o, _ in pairs], [inputs[i] for i in wanted],
                                      [g for _, g in pairs], allow_unused=True,
                                      create_graph=torch.is_grad_enabled())
            for i, g in zip(wanted, got):
                result[i] = g
        return (None, None, *result)


def select(paths, recompute):
    """Wraps `recompute` (the eager function) to return, for each graph
    result, the tensor at its index path in the Python result, so that the
    recomputed tensors line up with the graph results' gradients."""
    def run():
        result = recompute()
        outs = []
        for path in paths:
            if path is None:  # a result read only as a Python number (.item())
                outs.append(None)
                continue
            o = result
            for k in path:  # an index, a dict key, or slice(name): an object's attribute
                o = getattr(o, k.start) if isinstance(k, slice) else o[k]
            outs.append(o)
        return tuple(outs)
    return run


def apply(run, recompute, inputs):
    """Runs `run(*inputs)` (a tuple of output tensors) under autograd, with a
    backward that differentiates `recompute()` (the eager function)."""
    return _CompiledFunction.apply(run, recompute, *inputs)
