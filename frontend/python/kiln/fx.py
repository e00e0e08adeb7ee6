# SPDX-License-Identifier: Apache-2.0
"""torch.fx entry points: ``kiln.backend`` for ``torch.compile``,
``kiln.aot_backend`` (AOTAutograd's forward and backward ATen graphs, each
compiled by kiln) and ``kiln.from_fx`` for a GraphModule.

A GraphModule's generated ``forward`` is ordinary Python that calls torch
functions and operators, so kiln captures it like any other function (the
frame hook, guards and caches are the usual ones). Anything kiln cannot
capture makes that frame run eagerly -- the GraphModule itself, with the
reason logged under ``graph_breaks`` -- so results stay correct.
"""
from __future__ import annotations

from types import FunctionType as _FunctionType

import torch

from kiln import _C, _autograd, _blas
from kiln.config import _push_to_native, config


def from_fx(graph_module: torch.fx.GraphModule, fullgraph: bool = False):
    """Returns a callable running `graph_module` (same positional inputs, same
    outputs) through kiln; ``fullgraph=True`` turns a fallback into an error."""
    if not isinstance(graph_module, torch.fx.GraphModule):
        raise TypeError(f"kiln.from_fx expects a torch.fx.GraphModule, "
                        f"got {type(graph_module).__name__}")
    _push_to_native()
    _blas.select()
    gm = graph_module
    if config.disable:
        return gm
    needs = getattr(gm, "_needs_recompile", None)
    if needs is not None and needs():
        # A _LazyGraphModule (what Dynamo hands over) generates its forward on
        # first call; generate it now so kiln starts from the real code.
        gm.real_recompile()
    fwd = type(gm).forward
    if type(fwd) is not _FunctionType or "forward" in gm.__dict__:
        # Not a generated forward kiln can start from: go through the
        # module's own __call__ (its frames are still captured).
        def compiled(*args):
            return _C.call(_call_module, (gm, *args), {}, fullgraph, _autograd.apply)
    else:
        call, apply = _C.call, _autograd.apply

        def compiled(*args):
            return call(fwd, (gm, *args), {}, fullgraph, apply)

    compiled.graph_module = gm
    return compiled


def _call_module(mod, *args):
    return mod(*args)


def backend(graph_module: torch.fx.GraphModule, example_inputs):
    """A ``torch.compile`` backend: ``torch.compile(model, backend=kiln.backend)``.

    Dynamo hands over an FX GraphModule (parameters are graph inputs) and its
    example inputs; kiln compiles the module's forward on its first call and
    specializes on the inputs' shapes as usual."""
    del example_inputs  # kiln captures from the first real call
    return from_fx(graph_module)


def _aot_compiler(graph_module: torch.fx.GraphModule, example_inputs):
    """AOTAutograd's forward/backward compiler: the ATen graph (``torch.ops.
    aten.*`` calls, captured through capture/ops/AtenOps.cpp) run by kiln."""
    del example_inputs
    from torch._functorch.aot_autograd import make_boxed_func
    return make_boxed_func(from_fx(graph_module))


def aot_backend(graph_module: torch.fx.GraphModule, example_inputs):
    """``torch.compile(model, backend=kiln.aot_backend)``: Dynamo's graph
    through AOTAutograd, whose forward and backward ATen graphs kiln compiles
    (a second route to compiled training beside kiln's own)."""
    from torch._dynamo.backends.common import aot_autograd
    return aot_autograd(fw_compiler=_aot_compiler, bw_compiler=_aot_compiler)(
        graph_module, example_inputs)
