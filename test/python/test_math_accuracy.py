# SPDX-License-Identifier: Apache-2.0
"""Accuracy of kiln's vectorizable f32 math (codegen/cpu/ApproximateMath.cpp)
against float64 references on dense ranges and special values: the
approximations must stay within a few f32 ulps of torch's own results, keep
NaN where the input is NaN, and keep the sign of zero."""
import math
import re

import pytest
import torch
import torch.nn.functional as F

import kiln

SPECIAL = [float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1e-30, -1e-30, 1e-7, 3.9999,
           4.0, 4.0001, -4.0001, 10.0, -10.0, 3.4e38, -3.4e38]


def dense(lo, hi, n=1 << 20):
    return torch.cat([torch.linspace(lo, hi, n), torch.tensor(SPECIAL)])


def check(fn, x, ref64, atol):
    """kiln.compile(fn)(x) against ref64 in float64: NaN exactly where the
    reference is NaN, max abs error under `atol` (or 4x eager's error)."""
    got = kiln.compile(fn)(x)
    want = ref64(x.double())
    nan = torch.isnan(want)
    assert torch.equal(torch.isnan(got), nan), "NaN positions differ"
    err = (got.double() - want).abs()[~nan]
    eager_err = (fn(x).double() - want).abs()[~nan]
    assert err.max().item() <= max(atol, 4 * eager_err.max().item()), \
        f"max error {err.max().item():.3e} at x={x[~nan][err.argmax()].item()!r}"
    return got


def test_erf_dense_range_and_special_values():
    x = dense(-6.0, 6.0)
    got = check(lambda t: torch.erf(t), x, torch.erf, 5e-7)
    zero = (x == 0)
    assert torch.equal(torch.signbit(got[zero]), torch.signbit(x[zero])), "sign of zero"
    assert got[~torch.isnan(got)].abs().max().item() <= 1.0


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_dense_range(approximate):
    x = dense(-12.0, 12.0)
    ref = (lambda t: 0.5 * t * (1 + torch.erf(t / math.sqrt(2)))) if approximate == "none" \
        else (lambda t: 0.5 * t * (1 + torch.tanh(math.sqrt(2 / math.pi) * (t + 0.044715 * t ** 3))))
    # relative to the magnitude of x (GELU(x) ~ x for large x)
    got = kiln.compile(lambda t: F.gelu(t, approximate=approximate))(x)
    want = ref(x.double())
    finite = torch.isfinite(want)
    rel = ((got.double() - want).abs() / (1 + want.abs()))[finite]
    assert rel.max().item() < 2e-6, rel.max().item()
    # NaN for a NaN input, never for a finite one. (At ±inf the formula is
    # inf * 0 for one sign; eager's vectorized GELU also gives NaN at +inf
    # and overflows near the f32 maximum, where kiln returns x.)
    finite_x = torch.isfinite(x)
    assert not torch.isnan(got[finite_x]).any() and torch.isnan(got[torch.isnan(x)]).all()


@pytest.mark.parametrize("fn", [torch.sin, torch.cos])
def test_sin_cos_keep_accuracy_at_large_arguments(fn):
    """Rotary and sinusoidal embeddings take sin/cos of positions times
    frequencies (|x| up to ~1e4 and more). The upstream polynomial reduced
    the argument with one f32 pi/2: 4e-4 off at 1e4, garbage past 2^31."""
    mags = torch.logspace(-3, 38, 4096)
    x = torch.cat([mags, -mags, torch.tensor(SPECIAL)])
    check(fn, x, fn, 2e-7)
    pos = torch.arange(8192.0)[:, None] * (10000.0 ** (-torch.arange(0, 64, 2.0) / 64))
    check(fn, pos.flatten(), fn, 2e-7)


@pytest.mark.parametrize("fn", [torch.log, torch.log2, torch.log10])
def test_log_of_subnormal_inputs(fn):
    """log of a subnormal read the exponent bits and came out as log(FLT_MIN)."""
    tiny = torch.logspace(-44.8, -37.9, 2048)
    x = torch.cat([tiny, torch.tensor([1.4e-45, 1.1754942e-38, 1.1754945e-38, -1e-40])])
    check(fn, x, fn, 2e-6)
    assert kiln.compile(fn)(torch.tensor([0.0, -0.0])).tolist() == [-math.inf, -math.inf]


def test_exp_of_a_nan_built_from_constants_stays_nan():
    """A NaN LLVM could see at compile time (softmax of a row masked to all
    -inf by constants: -inf - -inf) went through exp's fptosi, poison, and the
    whole graph folded to garbage in uninitialized memory."""
    def masked(x):
        mask = torch.ones_like(x, dtype=torch.bool)
        return F.softmax(x.masked_fill(mask, float("-inf")), -1)
    x = torch.randn(3, 5)
    assert torch.isnan(kiln.compile(masked)(x)).all()

    def nan_rows(x):
        m = torch.full_like(x, float("nan")).amax(-1, keepdim=True)
        return torch.exp(m) + torch.sigmoid(m) + torch.expm1(m) + x * 0
    assert torch.isnan(kiln.compile(nan_rows)(x)).all()


@pytest.mark.parametrize("n", [10**5, 10**7 + 3])
def test_long_sums_stay_accurate(n):
    """One f32 accumulator per lane over 1e7 values near 1000 lost 3-4 digits
    (sum 7e-4 off, var 5.6x off); kiln-cpu-split-long-sums sums in stages."""
    x = 1000 + torch.rand(n, generator=torch.Generator().manual_seed(0))
    for fn in [lambda t: t.sum(), lambda t: t.mean(), lambda t: t.var(),
               lambda t: t.reshape(-1, 1)[: n // 100 * 100].reshape(-1, 100).sum(0)]:
        want = fn(x.double())
        got = kiln.compile(fn)(x).double()
        assert ((got - want).abs() / want.abs()).max().item() < 1e-5


def _has_libmvec():
    import ctypes
    try:
        ctypes.CDLL("libmvec.so.1")
        return True
    except OSError:
        return False


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("fn", [torch.sin, torch.cos, torch.tan])
def test_trig_dense_and_large_arguments_both_widths(fn, dtype):
    """sin/cos/tan run glibc's vector forms (codegen/cpu/VectorMath.h): f32
    and f64, dense small arguments, magnitudes to the type's maximum."""
    mags = torch.logspace(-3, 38 if dtype == torch.float32 else 300, 4096, dtype=torch.float64)
    x = torch.cat([torch.linspace(-10, 10, 1 << 16, dtype=torch.float64), mags, -mags,
                   torch.tensor(SPECIAL, dtype=torch.float64)]).to(dtype)
    want = fn(x.double())
    got = kiln.compile(lambda t: fn(t) * 1)(x)
    nan = torch.isnan(want)
    assert torch.equal(torch.isnan(got), nan), "NaN positions differ"
    eps = torch.finfo(dtype).eps
    # Relative to the result, in units of the type's epsilon: eager is
    # within ~1 of it, glibc's vector forms within ~2 (4 allowed).
    ulps = ((got.double() - want).abs() / (eps * want.abs().clamp_min(1e-300)))[~nan]
    eager_ulps = ((fn(x).double() - want).abs() / (eps * want.abs().clamp_min(1e-300)))[~nan]
    assert ulps.max().item() <= max(4.0, 2 * eager_ulps.max().item()), \
        f"{ulps.max().item():.2f} eps at x={x[~nan][ulps.argmax()].item()!r}"


@pytest.mark.skipif(not _has_libmvec(), reason="no glibc libmvec")
def test_trig_loops_call_the_vector_math_library(tmp_path):
    """A loop of sin/cos is vectorized through libmvec (`_ZGV<isa>N<lanes>v_sinf`),
    not left as one scalar libm call per element (14x slower than eager)."""
    with kiln.config.patch(debug_dir=str(tmp_path)):
        compiled = kiln.compile(lambda x: torch.sin(x) * torch.cos(x) + torch.sin(x.double()).float())
        x = torch.randn(4096)
        torch.testing.assert_close(compiled(x), torch.sin(x) * torch.cos(x) + torch.sin(x))
    text = "".join(p.read_text() for p in tmp_path.rglob("llvm-optimized.ll"))
    assert text, "no optimized IR written"
    called = set(re.findall(r"call [^@]*@(_ZGV\w+)\(", text))
    assert any(c.endswith("v_sinf") for c in called), called
    assert any(c.endswith("v_cosf") for c in called), called
    assert any(c.endswith("v_sin") for c in called), called


_F64_VECTOR_MATH = {  # glibc's vector forms (VectorMath.h), on a range each
    "exp": (torch.exp, -700, 700), "exp2": (torch.exp2, -1000, 1000),
    "expm1": (torch.expm1, -50, 50), "log": (torch.log, 1e-300, 1e300),
    "log2": (torch.log2, 1e-300, 1e300), "log10": (torch.log10, 1e-300, 1e300),
    "log1p": (torch.log1p, -0.999, 1e300), "sinh": (torch.sinh, -700, 700),
    "cosh": (torch.cosh, -700, 700), "tanh": (torch.tanh, -30, 30),
    "atan": (torch.atan, -1e300, 1e300), "sigmoid": (torch.sigmoid, -700, 700),
    "pow": (lambda t: torch.pow(t.abs(), 2.37), -1e100, 1e100),
    "atan2": (lambda t: torch.atan2(t, 1.5 - t), -1e6, 1e6),
}


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("name", sorted(_F64_VECTOR_MATH))
def test_vector_math_library_functions(name, dtype):
    """f64 math that became glibc vector calls (and f32 pow; the other f32
    functions are kiln's polynomials or compositions): within 4 eps (or twice
    eager's error) of a float64 reference over a wide range, with NaN and
    infinity where eager has them. f64 log1p was log(1 + x): 0 at 1e-30;
    exp2 was exp(x ln 2); f32 atan was 33 eps off; sinh/cosh overflowed
    from 88.7."""
    fn, lo, hi = _F64_VECTOR_MATH[name]
    finfo = torch.finfo(dtype)
    lo, hi = max(lo, finfo.min / 4), min(hi, finfo.max / 4)
    span = torch.linspace(0, 1, 1 << 16, dtype=torch.float64)
    x = torch.cat([lo + (hi - lo) * span, torch.linspace(-3, 3, 4096, dtype=torch.float64),
                   torch.tensor(SPECIAL, dtype=torch.float64)]).to(dtype)
    want, eager = fn(x.double()), fn(x)
    got = kiln.compile(lambda t: fn(t) * 1)(x)
    assert torch.equal(torch.isnan(got), torch.isnan(eager)), "NaN positions differ"
    # Infinite where eager or the rounded reference is (eager's vectorized
    # f32 sinh/cosh overflow from 88.7, where they are finite to 89.4).
    inf = torch.isinf(got)
    assert not ((inf != torch.isinf(eager)) & (inf != torch.isinf(want.to(dtype)))).any(), \
        "infinities differ"
    ok = torch.isfinite(eager) & torch.isfinite(want)
    # eps relative to the result; errors below the smallest normal number
    # (subnormal results) count as one.
    scale = (finfo.eps * want.abs()).clamp_min(finfo.tiny)
    ulps = ((got.double() - want).abs() / scale)[ok]
    eager_ulps = ((eager.double() - want).abs() / scale)[ok]
    assert ulps.max().item() <= max(4.0, 2 * eager_ulps.max().item()), \
        f"{ulps.max().item():.2f} eps at x={x[ok][ulps.argmax()].item()!r}"


@pytest.mark.parametrize("dtype,lo,hi", [(torch.float32, 80.0, 88.72), (torch.float64, 700.0, 709.78),
                                         (torch.bfloat16, 80.0, 88.5)])
def test_expm1_finite_up_to_the_float_limit(dtype, lo, hi):
    """expm1 computed (u - 1) * x / log(u) with u = exp(x): the product
    overflowed to inf for f32 x > 84.3 (f64 near 709) where the result is
    finite (log(expm1(y)), softplus's inverse, gave inf at y = 85)."""
    x = torch.linspace(lo, hi, 4096, dtype=torch.float64).to(dtype)
    got, eager = kiln.compile(torch.expm1)(x), torch.expm1(x)
    assert torch.isfinite(got).all() and torch.isfinite(eager).all()
    tol = {torch.float32: 4e-7, torch.float64: 1e-15, torch.bfloat16: 8e-3}[dtype]
    torch.testing.assert_close(got, eager, rtol=tol, atol=0)
    y = torch.tensor([50.0, 85.0, 88.0], dtype=torch.float32)
    inverse = kiln.compile(lambda t: torch.log(torch.expm1(t)))(y)
    torch.testing.assert_close(inverse, y, rtol=1e-6, atol=0)


@pytest.mark.parametrize("fn", [torch.exp, F.softplus, lambda t: F.logsigmoid(-t)])
def test_exp_of_subnormal_results(fn):
    """f32 exp below ln(FLT_MIN) = -87.3 came out 0 (the polynomial scales by
    2^k from the exponent bits) where eager returns subnormals: exp(-88) is
    6.05e-39, softplus(-100) 3.7e-44."""
    x = torch.cat([torch.linspace(-104.0, -86.0, 4096), torch.tensor([-87.0, -1e4, -math.inf])])
    got, want = kiln.compile(fn)(x), fn(x.double())
    err = (got.double() - want).abs()
    eager_err = (fn(x).double() - want).abs()
    # 4 eps of the result and one unit of the smallest subnormal, or eager's
    # error (its logsigmoid is 2 units off at 100).
    assert (err <= torch.maximum(4 * 2.0 ** -23 * want.abs() + 2.0 ** -149, eager_err)).all(), \
        f"{err.max().item()} at x={x[err.argmax()].item()}"
    assert (got[(x < -87.4) & (x > -103)] != 0).all()


@pytest.mark.parametrize("fn", [torch.expm1, F.elu, F.selu, F.celu])
def test_expm1_far_below_zero(fn):
    """Kahan's (u - 1) * x / log(u) with a subnormal u = exp(x) went 1.7e-4
    off at x = -100 (expm1 -1.00017); far from 0 expm1 is u - 1."""
    x = torch.cat([torch.linspace(-120.0, -0.5, 4096), torch.tensor([-100.0, -1e4, -math.inf])])
    torch.testing.assert_close(kiln.compile(fn)(x), fn(x), rtol=2e-7, atol=0)


@pytest.mark.parametrize("op", [torch.maximum, torch.minimum])
@pytest.mark.parametrize("n", [16, 58])
def test_bf16_maximum_minimum_keep_nans(op, n):
    """LLVM 19's x86 lowering of llvm.maximum/minimum on bf16 vectors lost
    NaNs (max(0, NaN) came out 0), also after InstCombine narrowed kiln's
    f32 computation back to bf16."""
    x = torch.arange(n, dtype=torch.float32).to(torch.bfloat16)
    x[n - 1] = float("nan")
    x[1], x[n - 2] = 0.0, -0.0
    got = kiln.compile(lambda t: op(t, t.flip(0)))(x)
    want = op(x, x.flip(0))
    assert torch.equal(got.isnan(), want.isnan())
    assert torch.equal(got.nan_to_num(), want.nan_to_num())
