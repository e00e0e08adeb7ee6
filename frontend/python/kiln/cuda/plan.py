# SPDX-License-Identifier: Apache-2.0
"""kiln's CUDA executors: a function's whole plan in one C call, and CUDA
graphs of it (``mode="reduce-overhead"``).

``build_spec`` turns a ``CudaGraph``'s steps into runtime/cuda/Plan.h's
text spec: inputs and results by position, every other buffer at a fixed
offset of one scratch arena (256-byte aligned), then the cuBLASLt
workspace. ``PlanExecutor`` holds the loaded ``_driver.Plan`` and an
arena per stream (``torch.empty`` once: torch's caching allocator); a
call allocates only the results. ``GraphExecutor`` records the plan into
a CUDA graph on its second call (the first is a plain run: modules and
cuBLASLt are set up outside any capture) with static results and arena:

- inputs whose address did not change between the first two calls
  (weights, typically) are captured at that address, and a replay is
  allowed only while each such input is still at it (a guard, checked
  per call; a miss records another graph, up to ``MAX_GRAPHS``, then
  runs the plan without a graph);
- every other input is copied into a static buffer of the graph before
  each replay (one cuMemcpyDtoDAsync each, in the same C call).

Results of a graph replay are the graph's static tensors: the next call
of the same graph overwrites them (as torch.compile's reduce-overhead
mode; clone a result to keep it). Imports only torch and the standard
library (the GPU machine has no kiln._C).
"""
from __future__ import annotations

import ctypes

import torch

from . import _driver

ALIGN = 256
GEMM_WORKSPACE = 32 << 20  # cuBLASLt workspace (torch uses 32 MiB on Hopper)
MAX_GRAPHS = 4

# Buffer storage type → cudaDataType; GEMM epilogue → Cublaslt.h's Epilogue.
CUDA_TYPES = {"float": 0, "double": 1, "__half": 2, "__nv_bfloat16": 14,
              "signed char": 3, "int": 10, "__nv_fp8_e4m3": 28}
EPILOGUES = {"none": 0, "bias": 1, "bias_relu": 2, "bias_gelu_tanh": 3}


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _dims3(d):
    d = (d,) if isinstance(d, int) else tuple(d)
    return (d + (1, 1, 1))[:3]


def output_names(graph) -> list[str]:
    """The buffers the caller gets as results (each once; inputs excluded)."""
    out = []
    for n in graph.results:
        if n not in graph.inputs and n not in out:
            out.append(n)
    return out


def build_spec(graph, dtypes: dict, tf32: bool) -> tuple[str, int]:
    """(spec text, arena bytes) for `graph` (a CudaGraph)."""
    from .graph import CudaUnsupportedError
    names = list(graph.buffers)
    index = {n: i for i, n in enumerate(names)}
    outs = output_names(graph)
    # Kernel scalars (dynamic dims' values): `val` slots after the buffers.
    values = sorted({v for kind, item in graph.steps if kind == "kernels" for k in item
                     for v in k.get("scalars", ())})
    slot = {v: len(names) + i for i, v in enumerate(values)}
    lines = [f"kiln-plan 1 {len(names) + len(values)} {len(graph.inputs)} {len(outs)}"]
    lines += [f"buf {slot[v]} val {v}" for v in values]
    offset = 0
    for n in names:
        if n in graph.inputs:
            lines.append(f"buf {index[n]} in {graph.inputs.index(n)}")
        elif n in outs:
            lines.append(f"buf {index[n]} out {outs.index(n)}")
        else:
            b = graph.buffers[n]
            lines.append(f"buf {index[n]} tmp {offset}")
            numel = 1
            for s in b["shape"]:
                numel *= s
            offset += _align(max(1, numel) * dtypes[b["type"]].itemsize)
    gemms = [item for kind, item in graph.steps if kind == "gemm"]
    if gemms:
        lines.append(f"ws {offset} {GEMM_WORKSPACE}")
        offset += GEMM_WORKSPACE
    for kind, item in graph.steps:
        if kind == "kernels":
            for k in item:
                args = [str(index[a]) for a in k["args"]]
                args += [str(slot[v]) for v in k.get("scalars", ())]
                lines.append(f"kernel {k['name']} {' '.join(map(str, _dims3(k['grid'])))} "
                             f"{' '.join(map(str, _dims3(k['block'])))} 0 {len(args)} "
                             f"{' '.join(args)}")
            continue
        g = item
        a, b, c = (graph.buffers[n]["type"] for n in g["args"][:3])
        epi = g.get("epilogue", "none")
        if a in ("signed char", "__nv_fp8_e4m3") and b == "int":  # byte weights in int32 words
            b = a
        if a != b or a not in CUDA_TYPES or c not in CUDA_TYPES or epi not in EPILOGUES:
            raise CudaUnsupportedError(f"kiln.cuda: GEMM {g['name']} ({a} x {b} -> {c}, "
                                       f"epilogue {epi}) has no cuBLASLt lowering")
        bias = index[g["args"][3]] if epi != "none" else -1
        args = " ".join(str(index[n]) for n in g["args"][:3])
        lines.append(f"gemm {CUDA_TYPES[a]} {CUDA_TYPES[c]} {g['batch'] if g['batched'] else 1} "
                     f"{g['m']} {g['n']} {g['k']} {int(g['trans_b'])} {int(tf32)} "
                     f"{EPILOGUES[epi]} {args} {bias}")
    return "\n".join(lines) + "\n", max(offset, ALIGN)


def _pointers(tensors):
    return (ctypes.c_void_p * max(1, len(tensors)))(*[t.data_ptr() for t in tensors])


class PlanExecutor:
    """Runs a CudaGraph's plan with one C call per execution."""

    def __init__(self, graph, module, device: torch.device, dtypes: dict, tf32: bool):
        spec, self.arena_bytes = build_spec(graph, dtypes, tf32)
        self.plan = _driver.Plan(module, spec)
        self.graph, self.device = graph, device
        outs = output_names(graph)
        self.outputs = [(tuple(graph.buffers[n]["shape"]), dtypes[graph.buffers[n]["type"]])
                        for n in outs]
        # Each result: ("out", position) or ("in", position), with its shape.
        self.results = [(("in", graph.inputs.index(n)) if n in graph.inputs
                         else ("out", outs.index(n)), s)
                        for n, s in zip(graph.results, graph.result_shapes)]
        self._arenas = {}  # stream -> arena tensor

    def arena(self, stream: int) -> torch.Tensor:
        a = self._arenas.get(stream)
        if a is None:
            a = self._arenas[stream] = torch.empty(self.arena_bytes, dtype=torch.uint8,
                                                   device=self.device)
        return a

    def new_outputs(self):
        return [torch.empty(s, dtype=d, device=self.device) for s, d in self.outputs]

    def pick(self, inputs, outputs):
        return tuple((inputs if kind == "in" else outputs)[i].view(s)
                     for (kind, i), s in self.results)

    def run(self, inputs, stream: int):
        inputs = [t if t.is_contiguous() else t.contiguous() for t in inputs]
        outputs = self.new_outputs()
        self.plan.run(_pointers(inputs), _pointers(outputs), self.arena(stream).data_ptr(),
                      stream)
        return self.pick(inputs, outputs)


class _Captured:
    """One CUDA graph of a plan: its static tensors and the guard."""

    def __init__(self, ex: PlanExecutor, inputs, stable: list[bool]):
        self.stable = stable
        self.static_inputs = [t if keep else torch.empty_like(t, memory_format=torch.contiguous_format)
                              for t, keep in zip(inputs, stable)]
        self.addresses = [t.data_ptr() if keep else None for t, keep in zip(inputs, stable)]
        self.outputs = ex.new_outputs()
        self.arena = torch.empty(ex.arena_bytes, dtype=torch.uint8, device=ex.device)
        self.graph = ex.plan.capture(_pointers(self.static_inputs), _pointers(self.outputs),
                                     self.arena.data_ptr())
        copied = [i for i, keep in enumerate(stable) if not keep]
        self.copied = copied
        self.dst = (ctypes.c_void_p * max(1, len(copied)))(
            *[self.static_inputs[i].data_ptr() for i in copied])
        self.sizes = (ctypes.c_size_t * max(1, len(copied)))(
            *[self.static_inputs[i].numel() * self.static_inputs[i].element_size()
              for i in copied])
        self.results = ex.pick(self.static_inputs, self.outputs)

    def matches(self, inputs) -> bool:
        for t, addr in zip(inputs, self.addresses):
            if addr is not None and (t.data_ptr() != addr or not t.is_contiguous()):
                return False
        return True

    def replay(self, inputs, stream: int):
        src = [inputs[i] if inputs[i].is_contiguous() else inputs[i].contiguous()
               for i in self.copied]
        self.graph.replay(len(src), self.dst, _pointers(src), self.sizes, stream)
        return self.results


class GraphExecutor:
    """``mode="reduce-overhead"``: the plan recorded into CUDA graphs."""

    def __init__(self, ex: PlanExecutor):
        self.ex = ex
        self.graphs: list[_Captured] = []
        self.max_graphs = MAX_GRAPHS
        self.capture_error = None  # why graphs are off (a failed capture), or None
        self._first_addresses = None
        self.replays = self.plain_runs = 0

    def run(self, inputs, stream: int):
        for g in self.graphs:
            if g.matches(inputs):
                self.replays += 1
                return g.replay(inputs, stream)
        if self._first_addresses is None or len(self.graphs) >= self.max_graphs:
            # Warm-up (modules, cuBLASLt set-up) or no more graphs.
            if self._first_addresses is None:
                self._first_addresses = [t.data_ptr() for t in inputs]
            self.plain_runs += 1
            return self.ex.run(inputs, stream)
        stable = [t.is_contiguous() and t.data_ptr() == a
                  for t, a in zip(inputs, self._first_addresses)]
        try:
            g = _Captured(self.ex, inputs, stable)
        except _driver.CudaDriverError as e:
            # Not capturable here: say why, and run the plan from now on.
            self.capture_error, self.max_graphs = str(e), 0
            self.plain_runs += 1
            return self.ex.run(inputs, stream)
        self.graphs.append(g)
        self.replays += 1
        return g.replay(inputs, stream)
