# SPDX-License-Identifier: Apache-2.0
"""HF BERT and GPT-2 with dynamic sequence lengths on kiln's CUDA path,
without a GPU: `kiln.compile(model, dynamic=True)` on `meta` keeps ONE `?`
graph for every length (no size specialized, no eager frame; before, the
first GEMM, transpose or slice over a `?` dim specialized every length),
and that graph, run in host emulation (cuda_host.py: the emitted kernels
compiled for the CPU, GEMM steps through torch) with the CPU model's
weights, equals eager at each length. Small random configurations: the
architectures (masks, position ids, attention, GELU, layer norms) are the
real ones; sizes do not change which ops appear."""
import copy
import itertools

import pytest
import torch

import kiln
from cuda_helpers import requires_nvrtc

transformers = pytest.importorskip("transformers")

LENGTHS = (5, 9, 17)


def _bert():
    cfg = transformers.BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                  intermediate_size=64, vocab_size=100,
                                  max_position_embeddings=64)
    return transformers.BertModel(cfg).eval(), 2  # batch 2


def _gpt2():
    cfg = transformers.GPT2Config(n_embd=32, n_layer=2, n_head=4, vocab_size=100, n_positions=64,
                                  use_cache=False)
    # Batch 1: with dynamic=True a batch of 2 is symbolic too, and GPT-2's
    # Conv1D views [batch, length, d] as [batch * length, d], a reshape
    # merging two symbolic sizes that the capture specializes (docs/status.md,
    # dynamic shapes row).
    return transformers.GPT2Model(cfg).eval(), 1


def _capture(model, batch):
    """Calls kiln.compile(meta copy, dynamic=True) at each length; returns
    [(CudaGraph, its graph inputs as CPU tensors, token ids)] and stats."""
    import kiln.cuda._frontend as frontend
    meta = copy.deepcopy(model).to("meta")
    names = {id(t): n for n, t in itertools.chain(meta.named_parameters(), meta.named_buffers())}
    state = dict(itertools.chain(model.named_parameters(), model.named_buffers()))
    recorded, original = [], frontend.compile_graph

    def recording(ir, device):
        runner = original(ir, device)

        def run(*inputs):
            recorded.append((runner.graph, inputs))
            return runner(*inputs)
        run.graph = runner.graph
        return run

    kiln.reset()
    frontend.compile_graph = recording
    calls = []
    try:
        compiled = kiln.compile(meta, dynamic=True)
        for n in LENGTHS:
            ids = torch.randint(0, 100, (batch, n))
            meta_ids = ids.to("meta")
            with torch.no_grad():
                compiled(meta_ids)
            calls.append((ids, meta_ids))
    finally:
        frontend.compile_graph = original
    runs = []
    for (graph, inputs), (ids, meta_ids) in zip(recorded, calls):
        runs.append((graph, [ids if x is meta_ids else state[names[id(x)]] for x in inputs], ids))
    return runs, kiln.stats()


@requires_nvrtc
@pytest.mark.parametrize("make", [_bert, _gpt2], ids=["bert", "gpt2"])
def test_one_dynamic_graph_equals_eager_at_every_length(make, tmp_path):
    from cuda_host import compile_host, run
    torch.manual_seed(0)
    model, batch = make()
    runs, s = _capture(model, batch)
    assert (s["graphs_compiled"], s["dynamic_graphs"], s["dynamic_specialized"]) == (1, 1, 0)
    assert s["compiled_calls"] == len(LENGTHS) and s["eager_calls"] == 0
    graphs = {id(g) for g, _, _ in runs}
    assert len(graphs) == 1 and len(runs) == len(LENGTHS)
    graph = runs[0][0]
    assert graph.symbols and any(kind == "gemm" for kind, _ in graph.steps)
    lib = compile_host(graph._emitted, tmp_path)
    if lib is None:
        pytest.skip("no host C++ compiler")
    for graph, inputs, ids in runs:
        with torch.no_grad():
            got = run(graph, lib, inputs)
            want = model(ids).last_hidden_state
        torch.testing.assert_close(got[0], want, rtol=1e-4, atol=1e-5)
    # One plan per length, all from the one source and cubin set.
    assert sorted(v[-1] for v in graph._specialized) == list(LENGTHS)
