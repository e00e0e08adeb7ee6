# SPDX-License-Identifier: Apache-2.0
"""Autograd glue for compiled graphs.

A graph kiln-autodiff can differentiate (frontend/csrc/hook/CompiledGrad.h)
runs as `_CompiledGrad`: its compiled forward returns the results and the
tensors its compiled backward reads. The graph's inputs and results among
them are kept with save_for_backward (so an in-place change of one raises
eager's error when the backward runs); the intermediates only the backward
reads ("extras", never the user's) are handed over to it, which drops each
after its last read (runtime/cpu/CallHooks.h) as eager frees a node's
saved tensors, unless retain_graph keeps them for another backward or
saved_tensors_hooks are active (then they are saved like the others).
Otherwise (an op without a gradient rule, kiln.config.compiled_backward
off) it runs as `_CompiledFunction`: the forward runs kiln's compiled code;
the backward recomputes the original
Python function eagerly (kiln's frame hook disabled) on the same inputs and
differentiates that, so gradients are exactly eager's. The function must be
deterministic for this to hold: a graph with random ops (dropout ...) gets a
recompute wrapped by kiln._random.replaying, which gives the random calls
the values the compiled forward used. A graph with side effects (BatchNorm's
running stats updated in place, `self.calls += 1`, a parameter updated under
torch.no_grad()) gets a recompute wrapped by `restoring`: it runs on the
state as it was before the call (kept by `snapshot`) and puts back the state
it found, so the mutations happen once, as in eager.
"""
from __future__ import annotations

import contextlib
import threading

import torch
import torch.overrides
import torch.utils._pytree
import torch.utils.checkpoint


_MISSING = object()


def _read(kind, obj, key):
    """The current state of one side effect's target: a tensor's value
    (copied), an attribute from the object's own __dict__ (a class's or
    module's too), an item; _MISSING where there is none."""
    if kind == "tensor":
        with torch.no_grad():
            return obj.clone()
    try:
        return vars(obj)[key] if kind == "attr" else obj[key]
    except (KeyError, IndexError, TypeError):
        return _MISSING


def _write(kind, obj, key, value, version=None):
    if kind == "tensor":
        version = obj._version if version is None else version
        with torch.no_grad():
            obj.copy_(value)
        # Restoring is not a mutation the user made (nor is the recompute's
        # own): autograd's checks of saved tensors see the version they saw.
        torch._C._autograd._unsafe_set_version_counter((obj,), (version,))
    elif value is _MISSING:
        try:
            if kind == "attr":
                delattr(obj, key)
            else:
                del obj[key]
        except (AttributeError, KeyError, IndexError):
            pass
    elif kind == "attr":
        setattr(obj, key, value)
    else:
        obj[key] = value


def snapshot(targets):
    """The state the side effects `targets` ((kind, object, key) each:
    'tensor', 'attr' or 'item') will change, read before they run."""
    return [(kind, obj, key, _read(kind, obj, key)) for kind, obj, key in targets]


class restoring:
    """`recompute` run on the state `snapshot` kept (the state the forward
    saw); `finish()`, called once the backward has differentiated the
    recompute's result (its saved tensors may be the mutated ones), puts
    back the state found at backward time."""

    def __init__(self, state, recompute):
        self.state, self.recompute, self.now = state, recompute, []

    def __call__(self):
        self.now.append([(kind, obj, key, _read(kind, obj, key),
                          obj._version if kind == "tensor" else None)
                         for kind, obj, key, _ in self.state])
        # Reversed: where two effects change one target, the first one's
        # "before" is the state before the call.
        for kind, obj, key, before in reversed(self.state):
            _write(kind, obj, key, before)
        return self.recompute()

    def finish(self):
        while self.now:
            for kind, obj, key, value, version in reversed(self.now.pop()):
                _write(kind, obj, key, value, version)


class _CompiledFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, run, recompute, no_grad, mutated, *inputs):
        ctx.recompute = recompute
        ctx.inputs = inputs
        # Inputs the graph updates in place are put back to their values
        # before the call while the backward recomputes (restoring): their
        # versions are not checked.
        ctx.versions = [None if i in mutated else t._version for i, t in enumerate(inputs)]
        with torch.no_grad():
            outs = run(*inputs)
        ctx.mark_non_differentiable(
            *[o for i, o in enumerate(outs) if i in no_grad or not o.is_floating_point()])
        # A result the loss does not use gets None, not zeros: the inputs
        # only it reaches get no gradient, as in eager (and _CompiledGrad).
        ctx.set_materialize_grads(False)
        return outs

    @staticmethod
    def backward(ctx, *grads):
        inputs = ctx.inputs
        # The backward recomputes from the inputs' current values: if one was
        # modified in place since the forward, the gradients would silently
        # differ from eager's (which raises when it saved that tensor).
        for t, v in zip(inputs, ctx.versions):
            if v is not None and t._version != v:
                raise RuntimeError(
                    "kiln: one of the variables needed for gradient computation has been "
                    "modified by an inplace operation (an input of a compiled graph changed "
                    f"between forward and backward: version {v} -> {t._version})")
        wanted = [i for i, t in enumerate(inputs) if t.requires_grad]
        finish = getattr(ctx.recompute, "finish", None)  # restoring's
        try:
            return _differentiate(ctx, inputs, wanted, grads)
        finally:
            if finish is not None:
                finish()


class _PlainCall:
    """Stands in for torch.utils.checkpoint.CheckpointFunction during an
    eager recompute: the checkpointed function runs as a plain call."""

    @staticmethod
    def apply(function, preserve_rng_state, *args):
        return function(*args)


@contextlib.contextmanager
def _reentrant_checkpoints_as_calls():
    """A reentrant `torch.utils.checkpoint` (HF's gradient_checkpointing_enable
    default) refuses torch.autograd.grad in its backward ("incompatible with
    .grad()"), which differentiating a recompute needs. The recompute is
    already a second forward, so the checkpointed function is called plainly:
    the same values and gradients, without the checkpoint's own recompute."""
    module = torch.utils.checkpoint
    saved = module.CheckpointFunction
    module.CheckpointFunction = _PlainCall
    try:
        yield
    finally:
        module.CheckpointFunction = saved


# The twins of the recompute _differentiate runs on this thread (select).
_recompute_twins = threading.local()


class _ReadTwins(torch.overrides.TorchFunctionMode):
    """Inside the recompute, every torch call reads an input's twin (a view
    of it) instead of the input, so the recompute's graph starts at the
    twins and differentiating it for them stops there."""

    def __init__(self, twins):
        super().__init__()
        self.twins = twins

    def _swap(self, a):
        return self.twins.get(id(a), a) if isinstance(a, torch.Tensor) else a

    def __torch_function__(self, func, types, args=(), kwargs=None):
        args = torch.utils._pytree.tree_map(self._swap, args)
        kwargs = torch.utils._pytree.tree_map(self._swap, kwargs or {})
        return func(*args, **kwargs)


def _differentiate(ctx, inputs, wanted, grads):
    """The gradients of the recomputed result's tensors for `inputs`.

    torch.autograd.grad of the outputs for the inputs themselves would give
    an input the total derivative, through the other inputs' history too: a
    parameter and an activation computed from it, both inputs (tied
    weights, a residual across a graph break), would have that path counted
    here and again when autograd carries the activation's gradient back
    (and reentrant checkpoints upstream refuse .grad()). So the recompute
    reads twins (_ReadTwins) and is differentiated for those (unless some
    op read an input directly: then for the inputs, as before)."""
    create = torch.is_grad_enabled()  # the caller's create_graph
    # The same tensor may be several inputs (passed twice, tied weights):
    # its gradient is returned once, else autograd would sum the copies.
    first = {}
    wanted = [i for i in wanted if first.setdefault(id(inputs[i]), i) == i]
    # A twin is a differentiable identity of its input (view_as): the
    # engine captures a twin's gradient without running what lies beyond it
    # (no other twin is upstream of an input), and with create_graph=True
    # the gradients stay functions of the inputs through it.
    with torch.enable_grad():
        twins = {id(inputs[i]): inputs[i].view_as(inputs[i]) for i in wanted}
        _recompute_twins.map = twins  # read by select's run, innermost
        try:
            with _reentrant_checkpoints_as_calls():
                outs = ctx.recompute()  # runs with kiln's frame hook disabled
        finally:
            _recompute_twins.map = None
    outs = [twins.get(id(o), o) for o in outs]  # a result that is an input
    pairs = [(o, g) for o, g in zip(outs, grads)
             if isinstance(o, torch.Tensor) and o.requires_grad and g is not None]
    result = [None] * len(inputs)
    if pairs and wanted:
        # Grad mode is on here exactly when the caller asked for
        # create_graph=True: then the gradients stay differentiable.
        outs = [o for o, _ in pairs]
        # An input some op read past the mode (a custom autograd.Function's
        # apply does not see it): the inputs themselves, as before.
        direct = _reaches(outs, [inputs[i] for i in wanted], twins.values())
        targets = [inputs[i] if direct else twins[id(inputs[i])] for i in wanted]
        got = torch.autograd.grad(outs, targets, [g for _, g in pairs], allow_unused=True,
                                  create_graph=create)
        for i, g in zip(wanted, got):
            result[i] = g
    return (None, None, None, None, *result)


def _node(t):
    """The autograd node a gradient for `t` arrives at."""
    return t.grad_fn if t.grad_fn is not None else torch.autograd.graph.get_gradient_edge(t).node


def _reaches(outs, inputs, twins):
    """Whether the graph of `outs` reaches one of `inputs` other than
    through its twin."""
    goal = {_node(t) for t in inputs}
    seen = {_node(t) for t in twins}
    stack = [o.grad_fn for o in outs if o.grad_fn is not None]
    while stack:
        node = stack.pop()
        if node in goal:
            return True
        if node in seen:
            continue
        seen.add(node)
        stack += [n for n, _ in node.next_functions if n is not None]
    return False


def select(paths, recompute):
    """Wraps `recompute` (the eager function) to return, for each graph
    result, the tensor at its index path in the Python result, so that the
    recomputed tensors line up with the graph results' gradients. The
    recompute runs in the CPU autocast state of the forward (the backward is
    usually called outside the forward's `torch.autocast`)."""
    autocast = torch.is_autocast_enabled("cpu")
    dtype = torch.get_autocast_dtype("cpu") if autocast else None

    def run():
        # Inside the other wrappers' modes (kiln._random's replay handles
        # composite functions itself: a mode below it would see them first).
        twins = getattr(_recompute_twins, "map", None)
        with _ReadTwins(twins) if twins else contextlib.nullcontext():
            if torch.is_autocast_enabled("cpu") == autocast and (
                    not autocast or torch.get_autocast_dtype("cpu") == dtype):
                result = recompute()
            else:
                with torch.autocast("cpu", dtype=dtype, enabled=autocast):
                    result = recompute()
        outs = []
        for path in paths:
            if path is None:  # read only as a number (.item()) or only stored by side effects
                outs.append(None)
                continue
            o = result
            for k in path:  # an index, a dict key, or slice(name): an object's attribute
                o = getattr(o, k.start) if isinstance(k, slice) else o[k]
            outs.append(o)
        return tuple(outs)
    return run


def apply(run, recompute, inputs, no_grad=(), mutated=()):
    """Runs `run(*inputs)` (a tuple of output tensors) under autograd, with a
    backward that differentiates `recompute()` (the eager function). The
    outputs at indices `no_grad` are non-differentiable (eager computes them
    without requires_grad); the inputs at `mutated` are updated in place
    after the call."""
    return _CompiledFunction.apply(run, recompute, frozenset(no_grad), frozenset(mutated),
                                   *inputs)


class _CompiledGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, fwd, bwd, recompute, layout, *inputs):
        n, grad_results, grad_inputs, saved_inputs, saved_results, _ = layout
        with torch.no_grad():
            outs = fwd(*inputs)
        results, extras = outs[:n], outs[n:]
        kept = [inputs[i] for i in saved_inputs] + [results[i] for i in saved_results]
        if torch._C._autograd._top_saved_tensors_default_hooks(False) is None:
            ctx.save_for_backward(*kept)
            ctx.extras = list(extras)  # _saved_extras hands them to the backward
        else:  # saved_tensors_hooks (checkpointing, offloading) see them all
            ctx.save_for_backward(*kept, *extras)
            ctx.extras = None
        ctx.bwd, ctx.layout, ctx.recompute, ctx.inputs = bwd, layout, recompute, inputs
        # Shapes and dtypes of the results (zeros for a missing gradient).
        ctx.result_like = [(results[i].shape, results[i].dtype) for i in grad_results]
        wanted = set(grad_results)
        ctx.mark_non_differentiable(*[o for i, o in enumerate(results) if i not in wanted])
        # A result the loss does not use gets None (not zeros): the inputs
        # only it reaches then get no gradient, as in eager.
        ctx.set_materialize_grads(False)
        return results

    @staticmethod
    def backward(ctx, *grads):
        saved = ctx.saved_tensors  # raises eager's error if one was modified in place
        if torch.is_grad_enabled():
            # create_graph=True: the compiled backward is not differentiable;
            # the gradients come from the eager recompute (double backward works).
            wanted = [i for i, t in enumerate(ctx.inputs) if t.requires_grad]
            return _differentiate(ctx, ctx.inputs, wanted, grads)
        _, grad_results, grad_inputs, _, _, deps = ctx.layout
        given = [grads[i] for i in grad_results]
        result = [None] * len(ctx.inputs)
        if any(g is not None for g in given):
            args = [torch.zeros(like[0], dtype=like[1]) if g is None else g
                    for g, like in zip(given, ctx.result_like)]
            kept, consume = _saved_extras(ctx)
            gin = ctx.bwd(*args, *saved, *kept, consume=consume)
            for i, g, d in zip(grad_inputs, gin, deps):
                if any(given[k] is not None for k in d):
                    result[i] = g
        return (None, None, None, None, *result)


_FREED = "freed"


def _saved_extras(ctx):
    """(extras passed as they are, list the compiled backward consumes):
    the extras are consumed (each dropped after its last read) unless
    retain_graph keeps them for another backward; none when
    saved_tensors_hooks held them in ctx.saved_tensors."""
    extras = ctx.extras
    if not extras:  # None, or nothing saved (eager allows a second backward then)
        return (), None
    if extras is _FREED:
        raise RuntimeError(
            "Trying to backward through the graph a second time (or directly access saved "
            "tensors after they have already been freed). Saved intermediate values of the "
            "graph are freed when you call .backward() or autograd.grad(). Specify "
            "retain_graph=True if you need to backward through the graph a second time or if "
            "you need to access saved tensors after calling backward.")
    if torch._C._autograd._get_current_graph_task_keep_graph():
        return extras, None
    ctx.extras = _FREED
    return (), extras


def apply_compiled(fwd, bwd, recompute, inputs, layout, no_grad=()):
    """Runs a graph compiled with its backward (kiln-autodiff): `fwd(*inputs)`
    returns the results then the saved intermediates, `bwd(*grads, *saved)`
    the gradients of the inputs at layout's grad_inputs. `layout` is
    (number of results, grad_results, grad_inputs, saved_inputs,
    saved_results); results outside grad_results (`no_grad` among them) are
    non-differentiable."""
    del no_grad  # a no_grad result is never in grad_results
    return _CompiledGrad.apply(fwd, bwd, recompute, layout, *inputs)
