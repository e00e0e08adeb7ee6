# SPDX-License-Identifier: Apache-2.0
"""Python ints of 2**53 or more reach int64 tensors exactly: kiln rounded
them through doubles (`masked_fill(m, torch.iinfo(torch.int64).max)` gave
int64.min, a common sentinel; torch.tensor([2**53 + 1]) gave 2**53)."""
import pytest
import torch

import kiln

B = 2**53
M = torch.iinfo(torch.int64).max

CASES = {
    "arange_big_start": lambda a: torch.arange(B, B + 5) + 0 * a[:1],
    "arange_big_step": lambda a: torch.arange(0, B + 5, B // 2) + 0 * a[:1],
    "tensor_2p53_plus_1": lambda a: torch.tensor([B + 1]) + 0 * a[:1],
    "tensor_int64_max": lambda a: torch.tensor([M]) + 0 * a[:1],
    "masked_fill_2p53_plus_5": lambda a: a.masked_fill(a > 0, B + 5),
    "masked_fill_int64_max": lambda a: a.masked_fill(a < 0, M),
    "masked_fill_int64_min": lambda a: a.masked_fill(a < 0, -M - 1),
    "masked_fill_float_into_int": lambda a: a.masked_fill(a < 0, 2.7),
    "where_int64_max": lambda a: torch.where(a < 0, M, a),
    "full_like_int64_max": lambda a: torch.full_like(a, M),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_big_integer_constants(name):
    f = CASES[name]
    a = torch.tensor([1, 2, -3])
    expected = f(a)
    got = kiln.compile(f)(a)
    assert got.dtype == expected.dtype
    assert got.tolist() == expected.tolist()
