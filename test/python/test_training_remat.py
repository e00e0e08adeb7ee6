# SPDX-License-Identifier: Apache-2.0
"""Min-cut rematerialization (kiln-autodiff's partitioner,
transforms/autodiff/Partition.cpp): a graph compiled with its backward keeps
fewer activation bytes for the backward than eager's autograd saves, while
its gradients still match eager's. kiln.stats()'s ``saved_activations`` /
``saved_activation_bytes`` are what the compiled forwards keep per call;
eager's are counted with torch.autograd.graph.saved_tensors_hooks."""
import copy

import pytest
import torch
from torch import nn

import kiln
from conftest import assert_close, stats


def eager_saved_bytes(model, x):
    """Bytes of the activations eager's autograd saves for one step
    (parameters and the input excluded, each storage once)."""
    skip = {p.data_ptr() for p in model.parameters()} | {x.data_ptr()}
    seen = {}

    def pack(t):
        ptr = t.untyped_storage().data_ptr()
        if ptr not in skip:
            seen[ptr] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = model(x)
    out.square().mean().backward()
    return sum(seen.values())


def compiled_step(model, x):
    loss = kiln.compile(model)(x).square().mean()
    loss.backward()
    return loss


def check_grads(model, ref, x, rtol=None, atol=None):
    ref.zero_grad(set_to_none=True)
    ref(x).square().mean().backward()
    for (name, p), rp in zip(model.named_parameters(), ref.parameters()):
        assert p.grad is not None, name
        assert_close(p.grad, rp.grad, rtol, atol)


def mlp_block():
    return nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 64)).train()


def test_mlp_block_saves_the_gemm_output_and_recomputes_gelu():
    model, x = mlp_block(), torch.randn(32, 64)
    ref = copy.deepcopy(model)
    compiled_step(model, x)
    s = stats()
    assert s["compiled_backwards"] == 1 and s["backward_calls"] == 1, s
    # One 32x256 f32 tensor (the first linear's output); eager keeps it and
    # GELU's output.
    assert s["saved_activations"] == 1 and s["saved_activation_bytes"] == 32 * 256 * 4, s
    assert eager_saved_bytes(copy.deepcopy(ref), x) == 2 * 32 * 256 * 4
    check_grads(model, ref, x)


def test_transformer_layer_saves_fewer_bytes_than_eager():
    layer = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.0,
                                       batch_first=True).train()
    ref = copy.deepcopy(layer)
    x = torch.randn(2, 8, 32)
    compiled_step(layer, x)
    s = stats()
    assert s["compiled_backwards"] == 1 and s["backward_calls"] == 1, s
    eager = eager_saved_bytes(copy.deepcopy(ref), x)
    assert 0 < s["saved_activation_bytes"] < eager, (s, eager)
    check_grads(layer, ref, x, rtol=1e-4, atol=1e-5)


def test_conv_bn_relu_saves_fewer_bytes_than_eager():
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.Conv2d(8, 4, 3)).train()
    ref = copy.deepcopy(model)
    x = torch.randn(2, 3, 12, 12)
    compiled_step(model, x)
    s = stats()
    assert s["compiled_backwards"] == 1 and s["backward_calls"] == 1, s
    eager = eager_saved_bytes(copy.deepcopy(ref), x)
    assert 0 < s["saved_activation_bytes"] < eager, (s, eager)
    check_grads(model, ref, x, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("budget", [0.0, 0.5])
def test_activation_memory_budget_recomputes_gemms(budget):
    model, x = mlp_block(), torch.randn(32, 64)
    ref = copy.deepcopy(model)
    with kiln.config.patch(activation_memory_budget=budget):
        compiled_step(model, x)
    s = stats()
    assert s["compiled_backwards"] == 1 and s["backward_calls"] == 1, s
    # 0: the GEMM is recomputed from the saved input and weight too; 0.5:
    # halfway between that and the default's one GEMM output.
    assert s["saved_activation_bytes"] <= budget * 32 * 256 * 4, s
    check_grads(model, ref, x)


def test_dropout_masks_are_never_redrawn_at_budget_zero():
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 3)).train()
    x = torch.randn(16, 8)
    grads = []
    for compiled_backward in (True, False):
        kiln.reset()
        model.zero_grad(set_to_none=True)
        with kiln.config.patch(compiled_backward=compiled_backward, activation_memory_budget=0.0):
            torch.manual_seed(1)
            kiln.compile(model)(x).square().mean().backward()
        grads.append([p.grad.clone() for p in model.parameters()])
        if compiled_backward:
            assert stats()["backward_calls"] == 1, stats()
    assert_close(grads[0], grads[1])


def backward_intermediate_peak(model, x):
    """Peak bytes of kiln's compiled intermediates during one compiled
    backward (after a warm-up step)."""
    compiled = kiln.compile(model)
    compiled(x).square().mean().backward()
    model.zero_grad(set_to_none=True)
    loss = compiled(x).square().mean()
    kiln._C.intermediate_memory(reset_peak=True)
    loss.backward()
    return kiln._C.intermediate_memory()["peak"]


def test_backward_recomputes_each_activation_where_it_is_used():
    # Six GELUs recomputed from their saved GEMM outputs (512 x 256 f32,
    # 0.5 MiB each). The backward reaches the first layer last: recomputed
    # all at its start, the six would be live together with the gradients;
    # recomputed where each is used, three such buffers at most are live
    # (a GELU's gradient, the recomputed input of its weight's GEMM, the
    # input's gradient), four since the weight gradients are allocated
    # where they are first written (kiln.lazy_output): the buffers still
    # live there leave the arena, which is held whole while they live (the
    # step's total peak went from 6.5 to 5.5 MiB; eager's is 8.0).
    layers = []
    for _ in range(6):
        layers += [nn.Linear(256, 256), nn.GELU()]
    model, x = nn.Sequential(*layers).train(), torch.randn(512, 256)
    ref = copy.deepcopy(model)
    peak = backward_intermediate_peak(model, x)
    activation = 512 * 256 * 4
    assert peak <= 4 * activation + 4096, peak / activation
    assert stats()["compiled_backwards"] == 1
    check_grads(model, ref, x, rtol=1e-4, atol=1e-5)


def test_backward_writes_weight_gradients_into_the_gradients():
    # Convolution weight gradients (oneDNN calls) are computed in the
    # gradient tensors the backward returns, not in kiln's intermediates
    # copied out at its end: 3 weights of 256 x 256 x 3 x 3 (2.25 MiB each)
    # against activations of 2 x 256 x 6 x 6 (72 KiB).
    model = nn.Sequential(*[m for _ in range(3) for m in (nn.Conv2d(256, 256, 3, padding=1),
                                                           nn.ReLU())]).train()
    x = torch.randn(2, 256, 6, 6)
    ref = copy.deepcopy(model)
    peak = backward_intermediate_peak(model, x)
    weight = 256 * 256 * 9 * 4
    assert peak < weight / 2, peak / weight
    assert stats()["compiled_backwards"] == 1
    check_grads(model, ref, x, rtol=1e-4, atol=1e-4)


def test_max_pool_backward_needs_no_per_tap_buffers():
    # resnet's stem pool (3x3, stride 2, padding 1): the winning tap is found
    # once per window and each tap's gradient read as a shifted slice of one
    # padded tensor, and the four stride phases are computed in their place
    # in the interleave (kiln-cpu-order-slice-inserts), so the backward holds
    # the -inf padded input and the interleave: 1.8 input sizes. With the
    # phases in buffers of their own it held 2.9, with the nine taps'
    # gradients materialized 3.8.
    import torch.nn.functional as F

    x = torch.randn(8, 64, 32, 32, requires_grad=True)
    compiled = kiln.compile(lambda x: F.max_pool2d(x, 3, 2, 1).square().sum())
    compiled(x).backward()
    want = x.grad.clone()
    x.grad = None
    loss = compiled(x)
    kiln._C.intermediate_memory(reset_peak=True)
    loss.backward()
    peak = kiln._C.intermediate_memory()["peak"]
    assert peak < 2.0 * x.numel() * 4, peak / (x.numel() * 4)
    assert stats()["compiled_backwards"] == 1
    assert_close(x.grad, want)
    x.grad = None
    F.max_pool2d(x, 3, 2, 1).square().sum().backward()
    assert_close(want, x.grad)
