# SPDX-License-Identifier: Apache-2.0
"""torch.cumsum over long dims (kiln-decompose splits a static dim of 1024
or more into blocks of 64: transforms/DecomposeCumsum.cpp). The lowering is
quadratic in the dim: 100k elements took 0.86 s, a million ran past
110 s (a top-p sampler sums GPT-2's 50257-token vocabulary per row). And
reductions with an explicit integer or bool `dtype=` return that dtype
(kiln returned int64)."""
import pytest
import torch

import kiln


@pytest.mark.parametrize("shape,dim,dtype", [
    ((50257,), 0, torch.float32),      # padded to 786 blocks
    ((2, 1100, 3), 1, torch.float32),  # a middle dim
    ((3000, 4), 0, torch.float64),
    ((65536,), 0, torch.int64),        # the block totals split again
    ((5, 1024), 1, torch.int32),       # int32 accumulates in int64
    ((1023,), 0, torch.float32),       # below the threshold
])
def test_long_cumsum_matches_eager(shape, dim, dtype):
    torch.manual_seed(0)
    x = (torch.rand(*shape) * 10).to(dtype)
    f = kiln.compile(lambda t: torch.cumsum(t, dim))
    got, expected = f(x), torch.cumsum(x, dim)
    assert got.dtype == expected.dtype
    if dtype.is_floating_point:
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-3)
    else:
        assert torch.equal(got, expected)
    assert kiln.stats()["fallback_ops"] == 0


def test_top_p_cutoff():
    def nucleus(logits, p=0.9):
        probs, _ = logits.softmax(-1).sort(-1, descending=True)
        return (probs.cumsum(-1) < p).sum(-1)

    logits = torch.randn(4, 50257)
    assert torch.equal(kiln.compile(nucleus)(logits), nucleus(logits))


@pytest.mark.parametrize("name,f", [
    ("sum_dim_int32", lambda x: x.sum(1, dtype=torch.int32)),
    ("sum_int32", lambda x: x.sum(dtype=torch.int32)),
    ("sum_bool", lambda x: x.sum(1, dtype=torch.bool)),
    ("sum_int16", lambda x: x.sum(1, dtype=torch.int16)),
    ("cumsum_int32", lambda x: x.cumsum(1, dtype=torch.int32)),
    ("prod_int32", lambda x: x.prod(1, dtype=torch.int32)),
])
def test_reduction_dtype_argument(name, f):
    # An explicit integer or bool dtype is the result's (kiln gave int64).
    x = torch.tensor([[1.0, -2.0], [3.0, 4.0]])
    expected, got = f(x), kiln.compile(f)(x)
    assert got.dtype == expected.dtype
    assert got.tolist() == expected.tolist()
