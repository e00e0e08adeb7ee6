# SPDX-License-Identifier: Apache-2.0
"""The CUDA backend as the frame hook sees it (frontend/csrc/CudaEntry.cpp).

When every tensor input of a captured graph is on a CUDA device, the hook
calls ``compile_graph(ir, device)`` instead of the CPU JIT and keeps the
runner it returns; each call of the entry is ``runner(*graph_inputs)`` →
tuple of results. Inputs on ``meta`` compile the same way and run as a
dry run (GEMMs shape-checked on meta, kernels not launched): results are
meta tensors of the right shapes. An exception here (an op without a CUDA
lowering, ...) makes the frame run eagerly with that reason.
"""
from __future__ import annotations

import collections

from . import emit
from .graph import CudaGraph

META_DEVICE = -2

#: The graphs compiled in this process, newest last (for tests and debugging).
compiled = collections.deque(maxlen=32)


def compile_graph(ir: str, device: int):
    graph = CudaGraph(emit(ir, collect_unsupported=True), "forward")
    compiled.append(graph)
    if device == META_DEVICE:
        def dry_run(*inputs):
            return graph.launches(*inputs)[1]
        dry_run.graph = graph
        return dry_run
    return graph
