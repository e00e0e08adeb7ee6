# SPDX-License-Identifier: Apache-2.0
"""F.embedding_bag / nn.EmbeddingBag as one graph (kiln/_decompositions.py):
torch.embedding_bag as a per-op fallback raised at run time, because its
meta kernel's auxiliary results have other sizes than the CPU kernel's."""
import copy
import itertools

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import kiln
from conftest import assert_close, stats, whole_graph

WEIGHT = torch.randn(10, 3, generator=torch.Generator().manual_seed(0))
BAGS_2D = torch.tensor([[1, 2, 2, 9], [2, 2, 2, 2], [0, 9, 5, 1]])
FLAT = torch.tensor([1, 2, 2, 9, 2, 2, 0, 9, 5])


@pytest.mark.parametrize("mode,padding_idx", list(itertools.product(["sum", "mean", "max"], [None, 2, -1])))
def test_fixed_length_bags(mode, padding_idx):
    # Row 1 is all padding when padding_idx == 2: an empty bag gives zeros.
    psw = torch.rand(3, 4) if mode == "sum" else None
    whole_graph(lambda i, p: F.embedding_bag(i, WEIGHT, mode=mode, padding_idx=padding_idx,
                                             per_sample_weights=p), BAGS_2D, psw)
    assert stats()["fallback_ops"] == 0


@pytest.mark.parametrize("mode,last", list(itertools.product(["sum", "mean", "max"], [False, True])))
def test_offsets_with_an_empty_bag(mode, last):
    offsets = torch.tensor([0, 4, 4, 6] + ([9] if last else []))
    whole_graph(lambda i, o: F.embedding_bag(i, WEIGHT, o, mode=mode, padding_idx=9,
                                             include_last_offset=last), FLAT, offsets)


def test_embedding_bag_module_trains_with_a_compiled_backward():
    ref = nn.Sequential(nn.EmbeddingBag(10, 4, mode="sum"), nn.Linear(4, 1))
    model = copy.deepcopy(ref)
    offsets = torch.tensor([0, 4, 6])
    ref[1](ref[0](FLAT, offsets)).sum().backward()
    kiln.compile(lambda i, o: model[1](model[0](i, o)))(FLAT, offsets).sum().backward()
    assert_close(model[0].weight.grad, ref[0].weight.grad)
    assert stats()["compiled_backwards"] == 1 and stats()["graph_breaks"] == 0


def test_max_norm_renormalizes_eagerly():
    """max_norm renormalizes the weight in place: a break, eager's result."""
    ref = nn.EmbeddingBag(10, 3, max_norm=0.5)
    model = copy.deepcopy(ref)
    assert_close(kiln.compile(model)(BAGS_2D), ref(BAGS_2D))
    assert_close(model.weight, ref.weight)
