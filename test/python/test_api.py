# SPDX-License-Identifier: Apache-2.0
"""kiln's public API: argument checking, module wrapper, stats, logs, debug dumps."""
import os

import pytest
import torch
from torch import nn

import kiln
from conftest import COUNTERS, assert_close, assert_compiled, run_python, stats


def test_compile_rejects_non_callables():
    with pytest.raises(TypeError):
        kiln.compile(123)
    with pytest.raises(TypeError):
        kiln.compile("not a function")


def test_unknown_option_raises_type_error():
    with pytest.raises(TypeError, match="no_such_option"):
        kiln.compile(lambda x: x, no_such_option=True)


def test_unavailable_backend_raises_value_error():
    with pytest.raises(ValueError, match="cuda"):
        kiln.compile(lambda x: x, backend="cuda")


def test_bad_mode_and_dynamic():
    with pytest.raises(ValueError):
        kiln.compile(lambda x: x, mode="max-autotune-everything")
    with pytest.raises(ValueError):
        kiln.compile(lambda x: x, dynamic="yes")


def test_stats_reports_every_counter_and_reset_clears():
    s = stats()
    assert set(COUNTERS) <= set(s), s
    assert all(v == 0 for v in s.values()), s
    f = kiln.compile(lambda x: x * 2)
    f(torch.ones(2))
    s = stats()
    assert s["frames"] == 1 and s["graphs_compiled"] == 1 and s["compile_time_us"] > 0, s
    # capture is part of compile: the interpreter's share alone is counted too
    assert 0 < s["capture_time_us"] <= s["compile_time_us"], s
    kiln.reset()
    assert all(v == 0 for v in stats().values())
    f(torch.ones(2))  # caches were dropped too: compiles again
    assert stats()["graphs_compiled"] == 1 and stats()["cache_hits"] == 0


def test_compiled_module_exposes_original_state():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    compiled = kiln.compile(model)
    assert isinstance(compiled, nn.Module)
    assert compiled.state_dict().keys() == {"_orig_mod." + k for k in model.state_dict()} \
        or compiled.state_dict().keys() == model.state_dict().keys()
    orig = dict(model.named_parameters())
    params = list(compiled.parameters())
    assert len(params) == len(orig)
    assert all(any(p is q for q in orig.values()) for p in params)
    # State dict tensors are the original's (same storage), possibly
    # under torch.compile's `_orig_mod.` prefix.
    sd_c = compiled.state_dict()
    for k, v in model.state_dict().items():
        got = sd_c.get(k, sd_c.get("_orig_mod." + k))
        assert got is not None and got.data_ptr() == v.data_ptr(), k
    # Attribute access falls through to the original module.
    model.custom_attr = 41
    assert compiled.custom_attr == 41
    assert compiled._orig_mod is model
    # Loading a state dict into the original is visible through the wrapper.
    sd = {k: torch.zeros_like(v) for k, v in model.state_dict().items()}
    model.load_state_dict(sd)
    with torch.no_grad():
        assert_close(compiled(torch.randn(2, 3)), torch.zeros(2, 2))
    assert stats()["compiled_calls"] == 1


def test_compiled_module_train_eval_propagate():
    model = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5))
    compiled = kiln.compile(model)
    compiled.eval()
    assert not model.training and not model[1].training
    compiled.train()
    assert model.training


def test_compile_bound_method():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def features(self, x):
            return torch.sigmoid(self.lin(x))

    net = Net()
    f = kiln.compile(net.features)
    x = torch.randn(2, 3)
    with torch.no_grad():
        assert_close(f(x), net.features(x))
    assert stats()["compiled_calls"] == 1


def test_kiln_disable_env_makes_compile_a_noop():
    code = (
        "import torch, kiln\n"
        "f = lambda x: x * 2\n"
        "assert kiln.compile(f) is f\n"
        "print('ok')\n"
    )
    r = run_python(code, {"KILN_DISABLE": "1"})
    assert r.returncode == 0, r.stderr
    assert "ok" in r.stdout


_GRAPH_SCRIPT = """
import torch, kiln
def f(x, w):
    return torch.softmax(torch.relu(x @ w) + 1.0, -1)
x, w = torch.randn(3, 4), torch.randn(4, 5)
torch.testing.assert_close(kiln.compile(f)(x, w), f(x, w))
assert kiln.stats()['compiled_calls'] == 1
print('done')
"""


def test_kiln_logs_graph_prints_ir():
    r = run_python(_GRAPH_SCRIPT, {"KILN_LOGS": "graph"})
    assert r.returncode == 0, r.stderr
    assert "done" in r.stdout
    assert "[kiln:graph]" in r.stderr
    for op in ("kiln.matmul", "kiln.relu", "kiln.add", "kiln.softmax"):
        assert op in r.stderr, r.stderr
    assert "func.func @forward" in r.stderr


def test_kiln_logs_unknown_channel_is_rejected():
    r = run_python("import kiln, torch\nkiln.compile(lambda x: x)", {"KILN_LOGS": "nonsense"})
    assert r.returncode != 0
    assert "nonsense" in r.stderr


def test_kiln_logs_recompiles_and_guards():
    code = (
        "import torch, kiln\n"
        "f = kiln.compile(lambda x: x + 1)\n"
        "f(torch.ones(2)); f(torch.ones(3))\n"
    )
    r = run_python(code, {"KILN_LOGS": "recompiles,guards"})
    assert r.returncode == 0, r.stderr
    assert "[kiln:recompiles]" in r.stderr and "sizes (2)" in r.stderr
    assert "[kiln:guards]" in r.stderr


def test_kiln_debug_dir_writes_ir_after_each_pass(tmp_path):
    r = run_python(_GRAPH_SCRIPT, {"KILN_DEBUG_DIR": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    dirs = [d for d in tmp_path.iterdir() if d.is_dir()]
    assert len(dirs) == 1, list(tmp_path.iterdir())
    files = sorted(p.name for p in dirs[0].iterdir())
    assert "captured.mlir" in files
    passes = [f for f in files if f.endswith(".mlir") and f[:2].isdigit()]
    assert len(passes) >= 5, files
    captured = (dirs[0] / "captured.mlir").read_text()
    assert "kiln.matmul" in captured
    # The first dumps are still kiln IR, the last one is LLVM dialect.
    assert "kiln." in (dirs[0] / passes[0]).read_text()
    assert "llvm." in (dirs[0] / passes[-1]).read_text()
    assert os.path.getsize(dirs[0] / passes[-1]) > 0


def test_kiln_logs_ir_names_a_folder_with_the_ir_after_each_pass():
    r = run_python(_GRAPH_SCRIPT, {"KILN_LOGS": "ir"})
    assert r.returncode == 0, r.stderr
    lines = [l for l in r.stderr.splitlines() if l.startswith("[kiln:ir]")]
    assert len(lines) == 1, r.stderr
    folder = lines[0].rsplit(": ", 1)[1]
    dumps = sorted(p for p in os.listdir(folder) if p.endswith(".mlir") and p[:2].isdigit())
    assert len(dumps) >= 5, dumps
    assert "llvm." in open(os.path.join(folder, dumps[-1])).read()


def test_config_patch_restores():
    before = kiln.config.config.logs
    with kiln.config.patch(logs=frozenset({"graph"})):
        assert kiln.config.config.logs == frozenset({"graph"})
    assert kiln.config.config.logs == before
    with pytest.raises(AttributeError):
        with kiln.config.patch(no_such_knob=1):
            pass


_inner_compiled = kiln.compile(lambda x: torch.tanh(x) * 3)


def test_compiled_function_called_from_compiled_function_is_inlined():
    def outer(x):
        return _inner_compiled(x) + 1

    x = torch.randn(4)
    assert_close(kiln.compile(outer)(x), torch.tanh(x) * 3 + 1)
    s = stats()
    assert s["graphs_compiled"] == 1 and s["compiled_calls"] == 1 and s["graph_breaks"] == 0, s


def test_compiled_submodule_inside_compiled_model_is_inlined():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = kiln.compile(nn.Sequential(nn.Linear(3, 3), nn.ReLU()))
            self.head = nn.Linear(3, 1)

        def forward(self, x):
            return self.head(self.block(x))

    net = Net().eval()
    x = torch.randn(2, 3)
    with torch.no_grad():
        expected = net.head(net.block._orig_mod(x))
        assert_close(kiln.compile(net)(x), expected)
    s = stats()
    assert s["graphs_compiled"] == 1 and s["compiled_calls"] == 1 and s["graph_breaks"] == 0, s


def test_decorated_forward_method():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        @kiln.compile
        def forward(self, x):
            return self.lin(x).relu()

    net = Net()
    x = torch.randn(2, 3)
    with torch.no_grad():
        assert_close(net(x), net.lin(x).relu())
    assert stats()["compiled_calls"] == 1


def test_compile_accepts_builtins_and_other_callables():
    # As torch.compile: a builtin, a functools.partial, an object with __call__.
    import functools

    class Scale:
        def __call__(self, x):
            return x * 3 + 1

    x = torch.randn(5)
    for fn, args in ((torch.maximum, (x, x.flip(0))), (functools.partial(torch.add, alpha=2), (x, x)),
                     (Scale(), (x,))):
        kiln.reset()
        compiled = kiln.compile(fn)
        for _ in range(2):
            assert_close(compiled(*args), fn(*args))
        assert_compiled(graphs=1, eager_calls=0)
    with pytest.raises(TypeError, match="callable"):
        kiln.compile(3)
