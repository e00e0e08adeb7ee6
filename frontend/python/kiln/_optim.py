# SPDX-License-Identifier: Apache-2.0
"""Compiled optimizer steps: ``kiln.compile(opt.step)`` for torch.optim's SGD,
Adam and AdamW.

torch.optim's ``step`` is written for eager and for Dynamo (a profiler
``record_function`` block, ``torch._dynamo.graph_break()`` calls, lazy state
initialization in a ``defaultdict`` keyed by tensors, step hooks), which
kiln's capture does not follow (it runs eagerly with a break at the profiler
block). Instead, ``kiln.compile`` of the ``step`` of one of these optimizers
returns a ``CompiledStep``: per call it gathers the parameters that have a
gradient, their gradients and state tensors into flat lists and calls one
kiln-compiled function (the kernels below) that updates every parameter and
state tensor in place (kiln's write-back of graph inputs, version counters
bumped as in eager; the results are computed straight into those tensors:
hook/InPlaceResults.h). The kernels follow torch's ``foreach``
implementations op for op (``torch/optim/sgd.py``, ``adam.py``) over 1-d
views of each parameter's tensors, so each parameter's update (its state
tensors and the parameter itself) is one fused, vectorized elementwise loop
with several results (kiln-fuse-linalg-elementwise's keep-producer-results:
SGD with momentum reads the buffer, gradient and parameter once and writes
the buffer and parameter once); no horizontal fusion across parameters.

What is guarded: float hyperparameters (lr, momentum, dampening, weight
decay, betas, eps) are runtime inputs (one small tensor per group, rebuilt
each call), so a scheduler changing ``lr`` neither recompiles nor replays an
old value; structural options (momentum/weight decay zero or not, nesterov,
maximize, amsgrad, decoupled weight decay) and the group layout are Python
constants the graph is specialized on (guarded by value: a change
recompiles). Adam's step counters are incremented before the graph with one
``torch._foreach_add_`` as torch does; scalars derived from hyperparameters
and step counts (1 - beta2, lr / bias_correction1, ...) are computed on the
host in double and rounded once, as torch's scalar arguments are.

Runs eagerly (torch's own step, with the reason under KILN_LOGS=fallbacks):
a closure, step hooks, a step whose state is not initialized yet (the first
step, or a parameter getting its first gradient), sparse or complex
gradients, non-CPU tensors, tensor hyperparameters, mixed dtypes in a group,
``fused``/``capturable``/``differentiable``.
"""
import sys
import weakref

import torch

_SUPPORTED = (torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW)


def _sgd_kernel(params, grads, bufs, hps, layout):
    """torch.optim.sgd._multi_tensor_sgd over groups: layout[i] = (start,
    end, weight_decay_on, momentum_on, nesterov, maximize) of group i's
    slice of the flat lists; hps[i] = [lr, momentum, 1 - dampening, wd]
    (made in double on the host and rounded once, as torch's scalars are)."""
    for (start, end, wd_on, mom_on, nesterov, maximize), hp in zip(layout, hps):
        lr, momentum, one_minus_dampening, wd = hp[0], hp[1], hp[2], hp[3]
        for i in range(start, end):
            p, g = params[i], grads[i]
            if maximize:
                g = -g
            if wd_on:
                g = g + wd * p
            if mom_on:
                b = bufs[i]
                b.mul_(momentum).add_(one_minus_dampening * g)
                g = g + momentum * b if nesterov else b
            p.sub_(lr * g)


def _adam_kernel(params, grads, exp_avgs, exp_avg_sqs, max_sqs, coefs, hps, layout):
    """torch.optim.adam._multi_tensor_adam (not capturable) over groups:
    layout[i] = (start, end, weight_decay_on, decoupled, amsgrad, maximize);
    hps[i] = [1 - beta1, beta2, 1 - beta2, eps, wd, 1 - lr * wd] and
    coefs[j] = [lr / bias_correction1, sqrt(bias_correction2)] of parameter j,
    computed in double on the host as torch does (see _gather_adam)."""
    for (start, end, wd_on, decoupled, amsgrad, maximize), hp in zip(layout, hps):
        one_minus_beta1, beta2, one_minus_beta2, eps = hp[0], hp[1], hp[2], hp[3]
        for i in range(start, end):
            p, g, m, v = params[i], grads[i], exp_avgs[i], exp_avg_sqs[i]
            if maximize:
                g = -g
            if wd_on:
                if decoupled:
                    p.mul_(hp[5])
                else:
                    g = g + hp[4] * p
            m.add_(one_minus_beta1 * (g - m))  # lerp_(g, 1 - beta1), weight < 0.5
            v.mul_(beta2).add_(one_minus_beta2 * g * g)
            step_size, bias2_sqrt = coefs[i][0], coefs[i][1]
            if amsgrad:
                mx = max_sqs[i]
                mx.copy_(torch.maximum(mx, v))
                denom = torch.sqrt(mx) / bias2_sqrt + eps
            else:
                denom = torch.sqrt(v) / bias2_sqrt + eps
            p.sub_(step_size * m / denom)


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


class _Eager(Exception):
    """This call runs torch's own step; the message says why."""


def _log(opt, reason: str) -> None:
    from kiln import config
    if "fallbacks" in config.logs:
        print(f"[kiln:fallbacks] {type(opt).__name__}.step runs eagerly: {reason}",
              file=sys.stderr)


def optimizer_of(step):
    """The optimizer whose ``step`` this is, when kiln compiles it itself:
    a bound ``step`` of SGD/Adam/AdamW (exact types: a subclass may change
    the update), or the wrapper an LR scheduler puts on ``opt.step``."""
    opt = getattr(step, "__self__", None)
    if opt is None and getattr(step, "_wrapped_by_lr_sched", False):
        for cell in step.__closure__ or ():
            ref = cell.cell_contents
            if isinstance(ref, weakref.ref) and isinstance(ref(), torch.optim.Optimizer):
                opt = ref()
    if type(opt) not in _SUPPORTED or getattr(step, "__name__", "") != "step":
        return None
    return opt


def _check_common(opt) -> None:
    """Raises _Eager for what the kernels do not cover."""
    from torch.optim import optimizer as base
    if (opt._optimizer_step_pre_hooks or opt._optimizer_step_post_hooks
            or base._global_optimizer_pre_hooks or base._global_optimizer_post_hooks):
        raise _Eager("optimizer step hooks are registered")
    for group in opt.param_groups:
        for flag in ("fused", "capturable", "differentiable"):
            if group.get(flag):
                raise _Eager(f"param group option {flag}=True")


def _group_grads(group):
    """(params, grads, dtype) of a group's parameters that have a gradient."""
    params, grads, dtype = [], [], None
    for p in group["params"]:
        g = p.grad
        if g is None:
            continue
        if g.is_sparse or p.is_complex() or p.device.type != "cpu" or g.device.type != "cpu":
            raise _Eager("a sparse, complex or non-CPU parameter or gradient")
        dtype = dtype or p.dtype
        if p.dtype != dtype or g.dtype != dtype or not p.is_floating_point():
            raise _Eager("parameters or gradients of several dtypes in one group")
        params.append(p)
        grads.append(g)
    return params, grads, dtype


def _numbers(group, names):
    values = [group[n] for n in names]
    if not all(_is_number(v) for v in values):
        raise _Eager("a hyperparameter that is not a Python number")
    return values


def _state(opt, p, key):
    state = opt.state.get(p)
    value = state.get(key) if state else None
    if value is None:
        raise _Eager(f"optimizer state '{key}' not initialized yet (first step)")
    return value


def _flat(*tensors):
    """1-d views of one parameter's tensors (the kernel's loops then run over
    one contiguous dim: a conv weight's 3x3 innermost dims vectorize badly),
    or the tensors themselves when one is not contiguous; None stays None."""
    if all(t is None or t.is_contiguous() for t in tensors):
        return [t if t is None else t.view(-1) for t in tensors]
    return list(tensors)


def _gather_sgd(opt):
    params, grads, bufs, hps, layout = [], [], [], [], []
    for group in opt.param_groups:
        ps, gs, dtype = _group_grads(group)
        if not ps:
            continue
        lr, momentum, dampening, wd = _numbers(
            group, ("lr", "momentum", "dampening", "weight_decay"))
        bs = [_state(opt, p, "momentum_buffer") for p in ps] if momentum != 0 else [None] * len(ps)
        layout.append((len(params), len(params) + len(ps), wd != 0, momentum != 0,
                       bool(group["nesterov"]), bool(group["maximize"])))
        hps.append(torch.tensor([lr, momentum, 1 - dampening, wd], dtype=dtype))
        for p, g, b in zip(ps, gs, bs):
            p, g, b = _flat(p, g, b)
            params.append(p)
            grads.append(g)
            bufs.append(b)
    return (params, grads, bufs, hps, tuple(layout)), None


def _gather_adam(opt):
    """The kernel's arguments. Scalars derived from the hyperparameters and
    step counts (1 - beta2, the bias corrections) are computed here in double
    and rounded once to the parameters' dtype, as torch's scalar arguments
    are: computed in float32 from a float32 beta2 = 0.999, 1 - beta2 is off by
    1.3e-5 relative and the state drifts from eager's."""
    params, grads, avgs, sqs, maxs, steps, coefs, hps, layout = ([] for _ in range(9))
    for group in opt.param_groups:
        ps, gs, dtype = _group_grads(group)
        if not ps:
            continue
        lr, eps, wd = _numbers(group, ("lr", "eps", "weight_decay"))
        beta1, beta2 = group["betas"]
        if not (_is_number(beta1) and _is_number(beta2)):
            raise _Eager("betas that are not Python numbers")
        amsgrad = bool(group["amsgrad"])
        start = len(params)
        for p, g in zip(ps, gs):
            flat = _flat(p, g, _state(opt, p, "exp_avg"), _state(opt, p, "exp_avg_sq"),
                         _state(opt, p, "max_exp_avg_sq") if amsgrad else None)
            for lst, t in zip((params, grads, avgs, sqs, maxs), flat):
                lst.append(t)
            step = _state(opt, p, "step")
            if not torch.is_tensor(step) or step.device.type != "cpu" or step.dim() != 0:
                raise _Eager("step counters that are not 0-d CPU tensors")
            steps.append(step)
            count = step.item() + 1  # the value after this call's increment
            coefs.append((lr / (1 - beta1**count), (1 - beta2**count) ** 0.5))
        decoupled = bool(group.get("decoupled_weight_decay", isinstance(opt, torch.optim.AdamW)))
        layout.append((start, start + len(ps), wd != 0, decoupled, amsgrad,
                       bool(group["maximize"])))
        hps.append(torch.tensor([1 - beta1, beta2, 1 - beta2, eps, wd, 1 - lr * wd],
                                dtype=dtype))
    coefs = torch.tensor(coefs, dtype=torch.float64)  # 0-d items: no type promotion
    return (params, grads, avgs, sqs, maxs, coefs, hps, tuple(layout)), steps


class CompiledStep:
    """``kiln.compile(opt.step)`` for SGD/Adam/AdamW: see the module doc."""

    def __init__(self, opt, step, compile_fn):
        from kiln.api import _calling_function
        self._opt = opt
        self._eager = step
        sgd = isinstance(opt, torch.optim.SGD)
        self._gather = _gather_sgd if sgd else _gather_adam
        self._kernel = compile_fn(_calling_function(_sgd_kernel if sgd else _adam_kernel))
        self._kiln_compiled = True
        self.__wrapped__ = step

    def __call__(self, closure=None):
        opt = self._opt
        opt._opt_called = True  # what an LR scheduler's step wrapper records
        try:
            if closure is not None:
                raise _Eager("a closure was passed")
            _check_common(opt)
            args, steps = self._gather(opt)
        except _Eager as why:
            _log(opt, str(why))
            return self._eager(closure)
        if not args[0]:
            return None
        with torch.no_grad():
            if steps:
                torch._foreach_add_(steps, 1)
            self._kernel(*args)
        return None
