# SPDX-License-Identifier: Apache-2.0
"""``kiln.compile(opt.step)`` for SGD, Adam and AdamW (kiln/_optim.py).

Each test trains two copies of one model side by side, one with torch's
``foreach`` step and one with the compiled step, and compares parameters and
optimizer state after every step; kiln.stats() shows that after the first
(eager, state-initializing) step every step ran one compiled graph.
"""
import copy

import pytest
import torch
import kiln

from conftest import assert_compiled, stats

STEPS = 20

CONFIGS = {
    "sgd": lambda p: torch.optim.SGD(p, lr=0.1, foreach=True),
    "sgd_momentum_wd": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=1e-3,
                                                 dampening=0.1, foreach=True),
    "sgd_nesterov_maximize": lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.8, nesterov=True,
                                                       weight_decay=1e-2, maximize=True,
                                                       foreach=True),
    "adam": lambda p: torch.optim.Adam(p, lr=1e-2, foreach=True),
    "adam_wd_amsgrad": lambda p: torch.optim.Adam(p, lr=1e-2, weight_decay=1e-2, amsgrad=True,
                                                  foreach=True),
    "adamw": lambda p: torch.optim.AdamW(p, lr=1e-2, betas=(0.8, 0.99), foreach=True),
    "adamw_maximize": lambda p: torch.optim.AdamW(p, lr=1e-3, weight_decay=0.1, maximize=True,
                                                  foreach=True),
}


class Net(torch.nn.Module):
    def __init__(self, unused=False):
        super().__init__()
        self.a = torch.nn.Linear(12, 24)
        self.b = torch.nn.Linear(24, 3)
        self.unused = torch.nn.Linear(3, 3) if unused else None

    def forward(self, x):
        return self.b(torch.tanh(self.a(x)))


def _pair(make, model=None):
    model = model or Net()
    twin = copy.deepcopy(model)
    return model, make(model.parameters()), twin, make(twin.parameters())


def _loss(model, x, y):
    return torch.nn.functional.mse_loss(model(x), y)


def _train(model, opt, step, x, y, set_to_none=True, forward=None):
    opt.zero_grad(set_to_none=set_to_none)
    loss = _loss(forward or model, x, y)
    loss.backward()
    step()
    return loss.detach()


def _assert_same_state(opt, ref):
    for p, q in zip(opt.param_groups[0]["params"], ref.param_groups[0]["params"]):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)
        for key, value in ref.state.get(q, {}).items():
            torch.testing.assert_close(opt.state[p][key], value, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_steps_match_foreach(name):
    model, opt, twin, ref = _pair(CONFIGS[name])
    step = kiln.compile(opt.step)
    x, y = torch.randn(16, 12), torch.randn(16, 3)
    for _ in range(STEPS):
        _train(model, opt, step, x, y)
        _train(twin, ref, ref.step, x, y)
        _assert_same_state(opt, ref)
    # step 1 is torch's where it creates state, the others one compiled graph
    eager_steps = 1 if any(ref.state.values()) else 0
    assert_compiled(graphs=1, calls=STEPS - eager_steps, eager_calls=0, recompiles=0)


@pytest.mark.parametrize("beta2", [0.999, 0.99999])
@pytest.mark.parametrize("cls", [torch.optim.Adam, torch.optim.AdamW])
def test_scalars_rounded_as_torch_does(cls, beta2):
    """1 - beta2 and the bias corrections come from Python doubles in torch;
    made in float32 from a float32 beta2 the second moment was 1.3e-5 off
    (relative) after one step, and drifted on."""
    make = lambda p: cls(p, lr=0.1, betas=(0.9, beta2), weight_decay=0.01, foreach=True)
    model, opt, twin, ref = _pair(make)
    step = kiln.compile(opt.step)
    for _ in range(6):
        x, y = torch.randn(16, 12), torch.randn(16, 3)
        _train(model, opt, step, x, y)
        _train(twin, ref, ref.step, x, y)
    for p, q in zip(model.parameters(), twin.parameters()):
        torch.testing.assert_close(opt.state[p]["exp_avg_sq"], ref.state[q]["exp_avg_sq"],
                                   rtol=2e-6, atol=0)
        torch.testing.assert_close(p, q, rtol=1e-6, atol=1e-7)
    assert_compiled(graphs=1, calls=5, eager_calls=0, recompiles=0)


@pytest.mark.parametrize("name", ["sgd_momentum_wd", "adamw"])
def test_scheduler_changes_lr_without_recompiling(name):
    model, opt, twin, ref = _pair(CONFIGS[name])
    step = kiln.compile(opt.step)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
    ref_sched = torch.optim.lr_scheduler.StepLR(ref, step_size=3, gamma=0.5)
    x, y = torch.randn(16, 12), torch.randn(16, 3)
    for _ in range(12):
        _train(model, opt, step, x, y)
        _train(twin, ref, ref.step, x, y)
        sched.step()
        ref_sched.step()
        _assert_same_state(opt, ref)
    assert opt.param_groups[0]["lr"] < CONFIGS[name]([torch.zeros(1)]).defaults["lr"]
    assert_compiled(graphs=1, calls=11, recompiles=0)


def test_scheduler_wrapped_step_is_compiled():
    """A scheduler made first wraps ``opt.step``; that wrapper compiles too."""
    model, opt, twin, ref = _pair(CONFIGS["adamw"])
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: 1.0 / (1 + i))
    ref_sched = torch.optim.lr_scheduler.LambdaLR(ref, lambda i: 1.0 / (1 + i))
    step = kiln.compile(opt.step)
    x, y = torch.randn(16, 12), torch.randn(16, 3)
    for _ in range(5):
        _train(model, opt, step, x, y)
        _train(twin, ref, ref.step, x, y)
        sched.step()
        ref_sched.step()
    _assert_same_state(opt, ref)
    assert_compiled(graphs=1, calls=4)


def test_structural_hyperparameter_change_recompiles():
    model, opt, twin, ref = _pair(CONFIGS["sgd_momentum_wd"])
    step = kiln.compile(opt.step)
    x, y = torch.randn(16, 12), torch.randn(16, 3)
    for i in range(6):
        if i == 3:  # weight decay off: another specialization, not a stale replay
            opt.param_groups[0]["weight_decay"] = ref.param_groups[0]["weight_decay"] = 0.0
        _train(model, opt, step, x, y)
        _train(twin, ref, ref.step, x, y)
        _assert_same_state(opt, ref)
    assert stats()["graphs_compiled"] == 2


@pytest.mark.parametrize("name", ["sgd_momentum_wd", "adam"])
def test_none_grads_and_zero_grad_modes(name):
    """A parameter never used has no gradient (skipped as by torch); one used
    from step 4 on gets its state on that step (eagerly), then compiles."""
    model, opt, twin, ref = _pair(CONFIGS[name], Net(unused=True))
    step = kiln.compile(opt.step)
    x, y = torch.randn(16, 12), torch.randn(16, 3)
    for i in range(8):
        for m, o, s in ((model, opt, step), (twin, ref, ref.step)):
            o.zero_grad(set_to_none=i % 2 == 0)
            out = m(x)
            if i >= 4:
                out = m.unused(out)
            torch.nn.functional.mse_loss(out, y).backward()
            s()
        _assert_same_state(opt, ref)
    s = stats()
    assert s["graphs_compiled"] == 2 and s["compiled_calls"] == 6, s


def test_param_groups():
    model = Net()
    twin = copy.deepcopy(model)

    def make(m):
        return torch.optim.AdamW([{"params": m.a.parameters(), "lr": 1e-2},
                                  {"params": m.b.parameters(), "lr": 3e-3, "weight_decay": 0.0,
                                   "amsgrad": True}], foreach=True)
    opt, ref = make(model), make(twin)
    step = kiln.compile(opt.step)
    x, y = torch.randn(16, 12), torch.randn(16, 3)
    for _ in range(6):
        _train(model, opt, step, x, y)
        _train(twin, ref, ref.step, x, y)
    for p, q in zip(model.parameters(), twin.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)
    assert_compiled(graphs=1, calls=5)


def test_state_updated_in_place_with_versions():
    model, opt, twin, ref = _pair(CONFIGS["adam"])
    step = kiln.compile(opt.step)
    x, y = torch.randn(16, 12), torch.randn(16, 3)
    _train(model, opt, step, x, y)
    p = model.a.weight
    state = opt.state[p]
    objects = (p, state["exp_avg"], state["exp_avg_sq"], state["step"])
    versions = [t._version for t in objects]
    _train(model, opt, step, x, y)
    assert all(a is b for a, b in zip(objects, (p, state["exp_avg"], state["exp_avg_sq"],
                                               state["step"])))
    assert all(t._version > v for t, v in zip(objects, versions))
    assert state["step"].item() == 2.0


@pytest.mark.parametrize("name", ["sgd_momentum_wd", "adamw"])
def test_compiled_model_and_step_follow_eager_loss_curve(name):
    """Acceptance: a compiled forward/backward and a compiled step give
    eager's loss curve over 20 steps."""
    model, opt, twin, ref = _pair(CONFIGS[name])
    forward = kiln.compile(model)
    step = kiln.compile(opt.step)
    x, y = torch.randn(16, 12), torch.randn(16, 3)
    got = [_train(model, opt, step, x, y, forward=forward) for _ in range(STEPS)]
    expected = [_train(twin, ref, ref.step, x, y) for _ in range(STEPS)]
    torch.testing.assert_close(torch.stack(got), torch.stack(expected), rtol=1e-4, atol=1e-6)
    assert got[-1] < got[0]
    assert stats()["eager_calls"] == 0


def test_uncovered_cases_run_torch_step(capfd):
    with kiln.config.patch(logs=frozenset({"fallbacks"})):
        _uncovered_cases()
    err = capfd.readouterr().err
    assert "step hooks" in err and "closure" in err, err
    assert stats()["graphs_compiled"] == 0


def _uncovered_cases():
    model, opt, twin, ref = _pair(CONFIGS["sgd_momentum_wd"])
    step = kiln.compile(opt.step)
    x, y = torch.randn(16, 12), torch.randn(16, 3)
    _train(model, opt, step, x, y)
    _train(twin, ref, ref.step, x, y)
    handle = opt.register_step_post_hook(lambda *a: None)
    _train(model, opt, step, x, y)
    _train(twin, ref, ref.step, x, y)
    handle.remove()

    def closure():
        opt.zero_grad()
        loss = _loss(model, x, y)
        loss.backward()
        return loss
    loss = step(closure)
    ref.zero_grad()
    _loss(twin, x, y).backward()
    ref.step()
    assert isinstance(loss, torch.Tensor)
    _assert_same_state(opt, ref)
