# SPDX-License-Identifier: Apache-2.0
"""kiln under Python threads (the thread model of docs/architecture.md).

Each scenario runs in a fresh interpreter with a timeout, so a deadlock or a
crash fails the test instead of hanging the suite: four threads (started
together behind a barrier) call compiled code 200 times each and compare
every result with eager; counters from kiln.stats() check that compiled code
ran and that concurrent compiles of one frame made one entry. Also here: a
Python number passed where a tensor was captured raises eager's TypeError
instead of crashing.
"""
import json
import os

import pytest

from conftest import run_python

# Seconds a scenario may take before it counts as hung.
TIMEOUT = int(os.environ.get("KILN_THREAD_TEST_TIMEOUT", "300"))

# The harness every scenario's script starts with: run_threads(work, n)
# starts n threads behind a barrier, collects their exceptions and exits 1
# with the first tracebacks; report() prints the counters.
PRELUDE = r"""
import json, sys, threading, time, traceback
import torch, kiln
torch.manual_seed(0)
ERRORS = []
def run_threads(work, n=4):
    barrier = threading.Barrier(n)
    def body(i):
        try:
            barrier.wait()
            work(i)
        except BaseException:
            ERRORS.append(traceback.format_exc())
    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if ERRORS:
        sys.stderr.write("".join(ERRORS[:3]))
        sys.exit(1)
def close(actual, expected):
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5)
def report():
    print("STATS " + json.dumps(kiln.stats()))
"""


def run_scenario(body, timeout=TIMEOUT):
    """Runs PRELUDE + body in a subprocess; returns kiln.stats() it printed."""
    r = run_python(PRELUDE + body + "\nreport()\n", {}, timeout=timeout)
    assert r.returncode == 0, (r.returncode, r.stdout[-2000:], r.stderr[-4000:])
    (line,) = [ln for ln in r.stdout.splitlines() if ln.startswith("STATS ")]
    return json.loads(line[len("STATS "):])


@pytest.mark.parametrize("n", [2, 4])
def test_cold_compile_of_one_frame_makes_one_entry(n):
    s = run_scenario(f"""
def f(x, y):
    return torch.tanh(x) * y + x.sum(0)
cf = kiln.compile(f, dynamic=False)
x, y = torch.randn(5, 8), torch.randn(5, 8)
def work(i):
    for _ in range(200):
        close(cf(x, y), f(x, y))
run_threads(work, {n})
""")
    assert s["graphs_compiled"] == 1, s
    assert s["compiled_calls"] == 200 * n, s


def test_different_shapes_on_a_cold_cache():
    s = run_scenario("""
def f(x, y):
    return torch.sigmoid(x) * y - x.mean(1, keepdim=True)
cf = kiln.compile(f, dynamic=False)
def work(i):
    x, y = torch.randn(i + 2, 8), torch.randn(i + 2, 8)
    for _ in range(200):
        close(cf(x, y), f(x, y))
run_threads(work)
""")
    assert s["graphs_compiled"] == 4, s
    assert s["compiled_calls"] == 800, s


def test_rotating_shapes_recompile_while_others_call():
    s = run_scenario("""
def f(x):
    return torch.exp(x) / (1 + x * x)
cf = kiln.compile(f, dynamic=False)
shapes = [(2, 3), (3, 3), (4, 3), (5, 3)]
def work(i):
    xs = [torch.randn(s) for s in shapes]
    for k in range(200):
        x = xs[(i + k) % len(xs)]
        close(cf(x), f(x))
run_threads(work)
""")
    assert s["graphs_compiled"] == 4, s
    assert s["compiled_calls"] == 800, s


def test_compile_waiting_for_a_lock_of_the_waiting_thread_does_not_deadlock():
    # Thread A captures fa, whose property takes user_lock; thread B holds
    # user_lock and calls fb for the first time, which needs the compile
    # lock: B runs fb eagerly after a bounded wait, then A finishes.
    s = run_scenario("""
user_lock = threading.Lock()
b_has_lock = threading.Event()
class Cfg:
    @property
    def scale(self):
        b_has_lock.wait(30)
        with user_lock:
            return 2.0
cfg = Cfg()
def fa(x):
    return x * cfg.scale
def fb(x):
    return x + 1
ca, cb = kiln.compile(fa), kiln.compile(fb)
def work(i):
    x = torch.ones(2)
    if i == 0:
        close(ca(x), fa(x))
        return
    with user_lock:
        b_has_lock.set()
        time.sleep(0.2)
        close(cb(x), fb(x))
start = time.monotonic()
run_threads(work, 2)
assert time.monotonic() - start < 25, time.monotonic() - start
close(cb(torch.ones(2)), fb(torch.ones(2)))
""", timeout=60)
    assert s["eager_calls"] >= 1, s


def test_user_exceptions_raised_concurrently():
    s = run_scenario("""
def f(x, bad):
    y = x * 2
    if bad:
        raise ValueError("bad input")
    return y + 1
cf = kiln.compile(f)
def work(i):
    x = torch.randn(4)
    for k in range(200):
        if (i + k) % 2:
            try:
                cf(x, True)
            except ValueError as e:
                assert "bad input" in str(e), e
            else:
                raise AssertionError("no ValueError")
        else:
            close(cf(x, False), f(x, False))
run_threads(work)
""")
    assert s["compiled_calls"] >= 400, s


def test_graph_breaks_hit_concurrently():
    s = run_scenario("""
def f(x):
    y = torch.relu(x) + 1
    if y.sum() > 6:  # data-dependent: a graph break, the rest resumes
        y = y - 1
    return y * 3
cf = kiln.compile(f)
def work(i):
    xs = [torch.randn(6) for _ in range(4)]
    for k in range(200):
        x = xs[(i + k) % len(xs)]
        close(cf(x), f(x))
run_threads(work)
""")
    assert s["graph_breaks"] >= 1, s
    assert s["compiled_calls"] >= 800, s


def test_grad_mode_is_per_thread():
    s = run_scenario("""
w = torch.randn(4, 4, requires_grad=True)
def f(x, w):
    return torch.tanh(x @ w) * 2
cf = kiln.compile(f)
def work(i):
    x = torch.randn(3, 4)
    for _ in range(200):
        if i % 2:
            with torch.no_grad():
                got, want = cf(x, w), f(x, w)
            assert not got.requires_grad
            close(got, want)
        else:
            got, want = cf(x, w), f(x, w)
            assert got.requires_grad
            close(got, want)
            (g,) = torch.autograd.grad(got.sum(), w)
            (e,) = torch.autograd.grad(want.sum(), w)
            close(g, e)
run_threads(work)
""")
    assert s["graphs_compiled"] == 2, s
    assert s["compiled_calls"] == 800, s


def test_reset_while_other_threads_call():
    # Thread 0 resets 1,000 times; the others call a plain graph, a graph
    # with a break (prefix + resume) and a graph under autograd (the entry
    # is held by autograd's capsule) meanwhile.
    s = run_scenario("""
w = torch.randn(4, 4, requires_grad=True)
def plain(x):
    return torch.sin(x) * 2 + 1
def broken(x):
    y = torch.relu(x) + 1
    if y.sum() > 20:
        y = y - 1
    return y * 3
def grad(x):
    return torch.tanh(x @ w)
fns = [plain, broken, grad]
compiled = [kiln.compile(f) for f in fns]
resets_done = threading.Event()
def work(i):
    if i == 0:
        for _ in range(1000):
            kiln.reset()
            time.sleep(0)
        resets_done.set()
        return
    f, cf = fns[i - 1], compiled[i - 1]
    x = torch.randn(4, 4)
    calls = 0
    while calls < 200 or not resets_done.is_set():
        got, want = cf(x), f(x)
        close(got, want)
        if f is grad:
            close(torch.autograd.grad(got.sum(), w)[0], torch.autograd.grad(want.sum(), w)[0])
        calls += 1
run_threads(work)
# after the resets: compiled code still runs
x = torch.randn(4, 4)
before = kiln.stats()["compiled_calls"]
for f, cf in zip(fns, compiled):
    close(cf(x), f(x))
assert kiln.stats()["compiled_calls"] >= before + 3, kiln.stats()
""")
    assert s["compiled_calls"] >= 3, s


@pytest.mark.parametrize("op", ["exp", "tanh", "sigmoid", "sqrt", "log", "erf", "sin", "relu",
                                "abs", "neg", "exp2", "log1p", "rsqrt", "floor", "erfinv"])
def test_python_number_where_a_tensor_is_expected_raises_like_eager(op):
    r = run_python(f"""
import torch, kiln
fn = lambda x: torch.{op}(x)
for arg in (2.5, 3, True, None, "s"):
    try:
        fn(arg)
    except TypeError as e:
        want = str(e)
    else:
        raise SystemExit("eager accepted " + repr(arg))
    try:
        kiln.compile(fn)(arg)
    except TypeError as e:
        assert str(e) == want, (str(e), want)
    else:
        raise SystemExit("kiln accepted " + repr(arg))
print("OK")
""", {}, timeout=120)
    assert r.returncode == 0 and "OK" in r.stdout, (r.returncode, r.stdout, r.stderr[-3000:])


@pytest.mark.parametrize("call", ["torch.add(2.5)", "torch.mul(t)", "torch.eq(t)", "torch.pow(t)",
                                  "torch.addcmul(t)", "torch.arange(None)", "torch.reshape(t)",
                                  "torch.permute(t)", "torch.flip(t)", "torch.roll(t)",
                                  "F.layer_norm(t)", "F.pad(t)", "torch.broadcast_to(t)"])
def test_missing_arguments_raise_like_eager(call):
    # Each of these once dereferenced the absent argument and crashed.
    r = run_python(f"""
import torch, kiln
import torch.nn.functional as F
t = torch.ones(2, 3)
fn = lambda t: {call}
try:
    fn(t)
except Exception as e:
    want = type(e)
else:
    raise SystemExit("eager accepted {call}")
try:
    kiln.compile(fn)(t)
except want:
    pass
else:
    raise SystemExit("kiln did not raise " + want.__name__)
print("OK")
""", {}, timeout=120)
    assert r.returncode == 0 and "OK" in r.stdout, (r.returncode, r.stdout, r.stderr[-3000:])
