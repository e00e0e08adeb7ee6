# SPDX-License-Identifier: Apache-2.0
"""torch.compiler.disable (and torch._disable_dynamo, which
torch.utils.checkpoint carries) is honoured as under Dynamo: the function
and everything it calls run eagerly (EvalFrameHook.c pauses the hook for
Dynamo's disable wrapper). kiln used to capture the disabled function's
frame; a non-reentrant checkpoint then recomputed kiln-compiled code that
saved other tensors than its forward and backward() raised CheckpointError."""
import pytest
import torch
import torch.utils.checkpoint

import kiln


def test_disabled_function_runs_eagerly():
    def inner(x):
        return x.sin()

    @torch.compiler.disable
    def helper(x):
        return inner(x) * 2

    def f(x):
        return helper(x + 1) - 1

    x = torch.randn(4)
    torch.testing.assert_close(kiln.compile(f)(x), f(x))
    # f before and after the break; neither helper nor inner is captured.
    assert kiln.stats()["graphs_compiled"] == 2, kiln.stats()


@pytest.mark.parametrize("reentrant", [False, True])
def test_checkpoint_inside_compiled_code(reentrant):
    torch.manual_seed(0)
    w = torch.randn(4, 4, requires_grad=True)

    def block(x, w):
        return (x @ w).sin() @ w

    def f(x, w):
        return torch.utils.checkpoint.checkpoint(block, x, w, use_reentrant=reentrant)

    x = torch.randn(3, 4, requires_grad=True)
    x2 = x.detach().clone().requires_grad_()
    w2 = w.detach().clone().requires_grad_()
    kiln.compile(f)(x, w).sum().backward()
    f(x2, w2).sum().backward()
    torch.testing.assert_close(x.grad, x2.grad)
    torch.testing.assert_close(w.grad, w2.grad)
