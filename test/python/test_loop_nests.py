# SPDX-License-Identifier: Apache-2.0
"""Model-sized graphs: their loop nests are outlined into functions of their
own before LLVM's O3 and equal nests (a model's repeated blocks) share one
function (codegen/cpu/LoopNests.cpp), and a training graph's forward and
backward compile at once, the backward on a second thread in an MLIR context
of its own (frontend/csrc/ProgramCompile.cpp compileForCpuPair). Results
must be eager's; the optimized LLVM IR in the debug folder shows the
sharing."""
import re

import torch
from torch import nn

import kiln


def _blocks(n=16, width=48):
    torch.manual_seed(0)
    return nn.Sequential(*[nn.Sequential(nn.LayerNorm(width), nn.Linear(width, width), nn.GELU(),
                                         nn.Dropout(0.0)) for _ in range(n)])


def _nest_calls(folder):
    """Calls per outlined nest function, over every optimized module."""
    calls = {}
    for path in folder.rglob("llvm-optimized.ll"):
        text = path.read_text()
        for name in re.findall(r"^define internal .*?(@\S+\.nest[.\d]*)\(", text, re.M):
            calls[f"{path}:{name}"] = len(re.findall(r"call .*" + re.escape(name) + r"\(", text))
    return calls


def test_repeated_blocks_share_their_loop_nests(tmp_path):
    kiln.reset()
    model = _blocks().eval()
    x = torch.randn(16, 48)
    with torch.no_grad(), kiln.config.patch(debug_dir=str(tmp_path)):
        compiled = kiln.compile(model)
        for _ in range(2):
            torch.testing.assert_close(compiled(x), model(x))
    assert kiln.stats()["graphs_compiled"] == 1
    # Sixteen equal blocks: one nest function serves the blocks between the
    # first and the last (which read the input / write the result: other
    # alias patterns); without the merge each would be called once.
    calls = _nest_calls(tmp_path)
    assert max(calls.values(), default=0) >= 12, calls


def test_training_step_compiles_forward_and_backward_together():
    kiln.reset()
    model = _blocks().train()
    ref = _blocks().train()
    x = torch.randn(16, 48)
    compiled = kiln.compile(model)
    for _ in range(2):
        for m, fn in ((model, compiled), (ref, ref)):
            m.zero_grad()
            fn(x).square().mean().backward()
        for p, q in zip(model.parameters(), ref.parameters()):
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5)
    stats = kiln.stats()
    assert (stats["graphs_compiled"], stats["compiled_backwards"], stats["backward_calls"],
            stats["eager_calls"]) == (1, 1, 2, 0)
