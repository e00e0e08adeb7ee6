# SPDX-License-Identifier: Apache-2.0
"""The user-facing entry points: kiln.compile, kiln.stats, kiln.reset."""
from __future__ import annotations

import builtins
import functools
import inspect
from types import FunctionType as _FunctionType

import torch
import torch.nn.modules.module as _nn_module

from kiln import _C, _autograd, _blas
from kiln.config import _push_to_native, config

_OPTIONS = ("backend", "mode", "fullgraph", "dynamic")


def _check_options(options: dict) -> dict:
    unknown = set(options) - set(_OPTIONS)
    if unknown:
        raise TypeError(f"kiln.compile got unexpected options {sorted(unknown)}; "
                        f"known: {list(_OPTIONS)}")
    backend = options.get("backend", "cpu")
    if backend not in ("cpu", None):
        raise ValueError(f"kiln.compile: backend {backend!r} is not available "
                         "(this build has 'cpu')")
    mode = options.get("mode")
    if mode not in (None, "default", "reduce-overhead"):
        raise ValueError(f"kiln.compile: unknown mode {mode!r} "
                         "(known: 'default', 'reduce-overhead')")
    dynamic = options.get("dynamic")
    if dynamic not in (None, True, False):
        raise ValueError(f"kiln.compile: dynamic must be None, True or False, got {dynamic!r}")
    return {"fullgraph": bool(options.get("fullgraph", False)),
            "dynamic": _DYNAMIC_CODES[dynamic], "mode": mode or "default"}


def _cuda_mode():
    """kiln.cuda.graph's per-call mode (imported only by reduce-overhead
    callers: `import kiln` loads nothing of the CUDA backend)."""
    from .cuda.graph import call_mode
    return call_mode


def _reduce_overhead(fn):
    """`fn` with CUDA graphs on for the CUDA graphs it runs (mode
    "reduce-overhead"; CPU graphs are unaffected)."""
    call_mode = _cuda_mode()

    @functools.wraps(fn)
    def run(*args, **kwargs):
        token = call_mode.set("reduce-overhead")
        try:
            return fn(*args, **kwargs)
        finally:
            call_mode.reset(token)
    return run


# kiln._C.call's `dynamic`: False -> 0 (static sizes), True -> 1 (every
# size >= 2 symbolic), None -> 2 (a size becomes symbolic once it changed).
_DYNAMIC_CODES = {False: 0, True: 1, None: 2}


def mark_dynamic(t: torch.Tensor, dim) -> None:
    """Makes dim `dim` (an int or a list of ints) of tensor `t` symbolic in
    the next compilation of any frame that takes `t` as an input, whatever
    ``dynamic`` says (torch._dynamo.mark_dynamic). A size of 0 or 1 stays
    specialized; the compiled graph then serves every size >= 2."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"kiln.mark_dynamic expects a tensor, got {type(t).__name__}")
    dims = [dim] if isinstance(dim, int) else list(dim)
    marked = set(getattr(t, "_kiln_dynamic_dims", ()))
    for d in dims:
        if not isinstance(d, int) or not -t.dim() <= d < t.dim():
            raise IndexError(f"kiln.mark_dynamic: dim {d!r} is out of range for a "
                             f"{t.dim()}-d tensor")
        marked.add(d % t.dim())
    t._kiln_dynamic_dims = frozenset(marked)


def _global_hooks() -> bool:
    """Whether any global module hook (torch.nn.modules.module) is set."""
    m = _nn_module
    return bool(m._global_forward_hooks or m._global_forward_pre_hooks
                or m._global_backward_hooks or m._global_backward_pre_hooks)


def _own_hooks(mod: torch.nn.Module) -> bool:
    """Whether `mod` has hooks of its own (Module._call_impl's test)."""
    d = mod.__dict__
    return bool(d.get("_forward_hooks") or d.get("_forward_pre_hooks")
                or d.get("_backward_hooks") or d.get("_backward_pre_hooks"))


_get_tracing_state = torch._C._get_tracing_state


def _call_module(mod, *args, **kwargs):
    return mod(*args, **kwargs)


class CompiledModule(torch.nn.Module):
    """Wraps an nn.Module; calls go through kiln, state stays the original's."""

    def __init__(self, mod: torch.nn.Module, opts: dict):
        super().__init__()
        self._orig_mod = mod
        self._kiln_opts = opts

    def __call__(self, *args, **kwargs):
        # nn.Module.__call__ minus its dispatch when it would only call
        # forward (Module._call_impl's own fast-path test: no hooks on the
        # wrapper or global, no `module.compile()`, no TorchScript tracing),
        # and forward inlined when the wrapped module has no hooks or
        # instance forward either. Otherwise the full nn.Module.__call__.
        # Global hooks run once, on the wrapped module (forward's
        # Module.__call__), never on this wrapper as well: eager has no
        # wrapper, so an output-transforming hook would apply twice.
        d = self.__dict__
        try:
            slow = ("forward" in d or d.get("_compiled_call_impl") is not None or d["_forward_hooks"]
                    or d["_forward_pre_hooks"] or d["_backward_hooks"]
                    or d["_backward_pre_hooks"] or _get_tracing_state())
            if not slow and _global_hooks():
                return self.forward(*args, **kwargs)
            if not slow:
                mod = d["_modules"]["_orig_mod"]
                m = mod.__dict__
                fwd = type(mod).forward
                inline = not (m["_forward_hooks"] or m["_forward_pre_hooks"]
                              or m["_backward_hooks"] or m["_backward_pre_hooks"]
                              or "forward" in m or type(fwd) is not _FunctionType)
        except (KeyError, AttributeError):  # another torch's Module layout
            slow = True
        if slow:
            return torch.nn.Module.__call__(self, *args, **kwargs)
        if not inline:
            return self.forward(*args, **kwargs)
        return _C.call(fwd, (mod, *args), kwargs, self._kiln_opts["fullgraph"], _autograd.apply,
                       self._kiln_opts["dynamic"])

    def forward(self, *args, **kwargs):
        mod = self._modules["_orig_mod"]
        fwd = type(mod).forward
        if (_own_hooks(mod) or _global_hooks() or "forward" in mod.__dict__
                or type(fwd) is not _FunctionType):
            # Module.__call__ runs the hooks; frames under it are still
            # compiled (the trampoline itself stays eager).
            return _C.call(_call_module, (mod, *args), kwargs,
                           self._kiln_opts["fullgraph"], _autograd.apply, self._kiln_opts["dynamic"])
        return _C.call(fwd, (mod, *args), kwargs, self._kiln_opts["fullgraph"], _autograd.apply,
                       self._kiln_opts["dynamic"])

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["_orig_mod"], name)


class _ReduceOverheadModule(CompiledModule):
    """CompiledModule with mode="reduce-overhead": its CUDA graphs replay
    through CUDA graphs (kiln/cuda/plan.py)."""

    def __call__(self, *args, **kwargs):
        call_mode = _cuda_mode()
        token = call_mode.set("reduce-overhead")
        try:
            return super().__call__(*args, **kwargs)
        finally:
            call_mode.reset(token)


def compile(model=None, **options):  # noqa: A001
    """Compiles a function or nn.Module with kiln; usable as a decorator.
    A torch.export ExportedProgram is compiled by kiln.from_export.

    Options (torch.compile's names): ``backend`` ("cpu"), ``mode``
    ("default", or "reduce-overhead": graphs on a CUDA device replay as CUDA
    graphs, see kiln/cuda/plan.py; their results are overwritten by the
    next call, as with torch.compile),
    ``fullgraph`` (turn graph breaks into errors), ``dynamic``: False
    specializes every size (a new size recompiles), True makes every input
    size >= 2 symbolic (one graph for all batch sizes), None (default)
    specializes until a size changes, then makes that dim symbolic.
    Sizes 0 and 1 are always specialized. See docs/architecture.md.
    """
    opts = _check_options(options)
    if model is None:
        return lambda m: compile(m, **options)
    _push_to_native()
    _blas.select()
    if config.disable:
        return model
    if isinstance(model, torch.export.ExportedProgram):  # kiln/_exported_program.py
        from kiln._exported_program import from_export
        return from_export(model, fullgraph=opts["fullgraph"])
    from kiln import _optim  # kiln.compile(opt.step): SGD/Adam/AdamW, kiln/_optim.py
    if _optim.optimizer_of(model) is not None:
        kernel_opts = {**options, "mode": "default"}
        return _optim.CompiledStep(_optim.optimizer_of(model), model,
                                   lambda f: compile(f, **kernel_opts))
    if isinstance(model, torch.nn.Module):
        _convert_calibrated(model)
        if opts["mode"] == "reduce-overhead":
            return _ReduceOverheadModule(model, opts)
        return CompiledModule(model, opts)
    if callable(model) and not isinstance(model, type) and not (
            inspect.isfunction(model) or inspect.ismethod(model)):
        model = _calling_function(model)
    if not (inspect.isfunction(model) or inspect.ismethod(model)):
        raise TypeError(f"kiln.compile expects a Python function, callable or nn.Module, "
                        f"got {type(model).__name__}")
    fn = model.__func__ if inspect.ismethod(model) else model
    bound = (model.__self__,) if inspect.ismethod(model) else ()

    call, fullgraph, apply, dynamic = _C.call, opts["fullgraph"], _autograd.apply, opts["dynamic"]
    if bound:
        @functools.wraps(model)
        def compiled(*args, **kwargs):
            return call(fn, (*bound, *args), kwargs, fullgraph, apply, dynamic)
    else:
        @functools.wraps(model)
        def compiled(*args, **kwargs):
            return call(fn, args, kwargs, fullgraph, apply, dynamic)

    if opts["mode"] == "reduce-overhead":
        compiled = _reduce_overhead(compiled)
    compiled._kiln_compiled = True
    return compiled


def _convert_calibrated(model):
    """A model ``kiln.quant.prepare`` observed for static int8 is converted
    (in place) to its int8 layers before compiling (kiln/quant/_static.py)."""
    import sys
    static = sys.modules.get("kiln.quant._static")
    if static is not None and static.has_observers(model):
        static.convert(model)


def _calling_function(target):
    """A Python function calling ``target`` (a builtin such as torch.sin, a
    functools.partial, an object with __call__), for kiln.compile of any
    callable as torch.compile accepts. Its code is not kiln's own file (whose
    frames kiln never captures), and is made per call: each compiled
    callable has its own code object and so its own compiled entries."""
    code = builtins.compile("def call(*args, **kwargs):\n    return target(*args, **kwargs)\n",
                            f"<kiln.compile of {type(target).__name__}>", "exec")
    namespace = {"target": target}
    exec(code, namespace)  # noqa: S102 - a fixed, kiln-written body
    return namespace["call"]


def stats() -> dict:
    """Counters since the last reset: frames seen, graphs compiled, cache hits,
    eager fallbacks (graph breaks), ops run through torch inside compiled
    graphs (``fallback_ops``: no kiln lowering, compiled; ``fallback_calls``:
    those calls run), caller's tensors copied to row-major per call
    (``input_copies``: strided views; a tensor dense in another dim order,
    channels-last, is passed as it is), recompiles, compiled calls run, and
    microseconds spent capturing (``capture_time_us``: the bytecode
    interpreter building graphs) and compiling (``compile_time_us``, which
    includes the capture)."""
    return dict(_C.stats())


def reset() -> None:
    """Drops every compiled entry and zeroes the counters."""
    _C.reset()
