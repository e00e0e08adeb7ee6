# SPDX-License-Identifier: Apache-2.0
"""The CUDA build of kiln.export (``target="cuda:sm_80,sm_90"``).

The graph kiln.export captured (its kiln IR, the artifact's program
section) goes through the CUDA emitter; every op must have a CUDA lowering
(else an ExportError lists them). The emitted kernels are compiled with
NVRTC for each requested arch (cubins) plus PTX for the newest one (the
driver compiles it for a newer GPU); the launch plan is runtime/cuda's
spec as kiln/cuda/plan.py builds it for the JIT path (``build_spec``: the
one plan format), inputs in the artifact plan's call order. Written as the
CudaPlan and CudaImages sections (runtime/artifact/CudaSection.h); no GPU
is needed. Static shapes only: the CUDA emitter takes no symbolic dims.
"""
from __future__ import annotations

DEFAULT_ARCHS = (80, 90)
ALIGN = 256  # images inside the CudaImages section


class CudaExportError(RuntimeError):
    """Raised as kiln.export's ExportError by _export.py."""


def parse_target(target) -> tuple[bool, list[int] | None]:
    """(CPU build wanted, CUDA archs or None) of kiln.export's `target`:
    "cpu", "cuda" (sm_80 and sm_90), "cuda:sm_80,sm_90" or a list of them."""
    items = [target] if isinstance(target, str) else list(target)
    cpu, archs = False, None
    for item in items:
        if item == "cpu":
            cpu = True
            continue
        if not isinstance(item, str) or not (item == "cuda" or item.startswith("cuda:")):
            raise CudaExportError(f"kiln.export: unknown target {item!r} (expected 'cpu', "
                                  "'cuda' or 'cuda:sm_80,sm_90', or a list of them)")
        archs = archs or []
        names = item[5:].split(",") if item != "cuda" else [f"sm_{a}" for a in DEFAULT_ARCHS]
        for name in names:
            name = name.strip()
            if not name.startswith("sm_") or not name[3:].isdigit():
                raise CudaExportError(f"kiln.export: target {item!r}: '{name}' is not an "
                                      "sm_XX arch")
            if int(name[3:]) not in archs:
                archs.append(int(name[3:]))
    if not cpu and not archs:
        raise CudaExportError("kiln.export: empty target")
    return cpu, sorted(archs) if archs else None


def _graph(ir: str):
    import kiln.cuda
    from kiln.cuda.graph import CudaGraph, CudaUnsupportedError
    try:
        return CudaGraph(kiln.cuda.emit(ir, collect_unsupported=True), "forward")
    except CudaUnsupportedError as e:
        raise CudaExportError(f"kiln.export: the graph does not run on CUDA: {e}") from e


def _check_signature(graph, graph_inputs, results):
    """The emitted function takes the artifact plan's inputs and returns its
    results, in the same order (both come from the same IR)."""
    from kiln.cuda.graph import DTYPES
    if len(graph.inputs) != len(graph_inputs) or len(graph.results) != len(results):
        raise CudaExportError(f"kiln.export: the CUDA function takes {len(graph.inputs)} inputs "
                              f"and returns {len(graph.results)} results; the graph has "
                              f"{len(graph_inputs)} and {len(results)}")
    for i, (name, t) in enumerate(zip(graph.inputs, graph_inputs)):
        b = graph.buffers[name]
        if tuple(b["shape"]) != tuple(t.shape) or DTYPES[b["type"]] != t.dtype:
            raise CudaExportError(f"kiln.export: CUDA input {i} is {b['type']}{b['shape']}, the "
                                  f"graph's is {t.dtype}{list(t.shape)}")
    for r, (shape, (sizes, _dtype, _sym)) in enumerate(zip(graph.result_shapes, results)):
        if list(shape) != list(sizes):
            raise CudaExportError(f"kiln.export: CUDA result {r} has shape {list(shape)}, the "
                                  f"graph's {list(sizes)}")
    for r, name in enumerate(graph.results):
        if name in graph.inputs:
            raise CudaExportError(f"kiln.export: result {r} is a graph input (CUDA artifacts "
                                  "return computed tensors)")


def _images(source: str, archs) -> tuple[list[tuple[str, int, int]], bytes]:
    """NVRTC cubins per arch, PTX for the newest, the source: (index, bytes)."""
    from kiln import _C
    from kiln.cuda import nvrtc
    if not _C.nvrtc_available():
        raise CudaExportError("kiln.export: target cuda needs NVRTC, and this kiln was built "
                              "without it")
    blobs = [(str(a), nvrtc.compile_source(source, a)) for a in archs]
    blobs.append(("ptx", nvrtc.compile_source(source, max(archs), cubin=False)))
    blobs.append(("cuda", source.encode()))
    index, data = [], bytearray()
    for name, blob in blobs:
        data += bytes(-len(data) % ALIGN)
        index.append((name, len(data), len(blob)))
        data += blob
    return index, bytes(data)


def build(rec, archs) -> tuple[str, bytes, dict]:
    """(CudaPlan text, CudaImages bytes, meta lines) for the recorded graph."""
    from kiln import _C
    from kiln.cuda.graph import DTYPES
    from kiln.cuda.plan import build_spec, output_names
    if rec["symbols"]:
        raise CudaExportError("kiln.export: CUDA builds have static shapes (artifacts do not "
                              "hold symbolic CUDA plans yet); export without dynamic_shapes")
    graph = _graph(rec["ir"])
    _check_signature(graph, rec["graph_inputs"], rec["results"])
    spec, arena = build_spec(graph, DTYPES, tf32=False)
    outs = output_names(graph)
    index, images = _images(graph.source, archs)
    lines = ["kiln-cuda 1", f"arena {arena}", f"images {len(index)}"]
    lines += [f"image {n} {off} {size}" for n, off, size in index]
    lines.append(f"results {len(graph.results)}")
    lines += [f"result {r} out {outs.index(n)}" for r, n in enumerate(graph.results)]
    lines.append("spec")
    kernels = sum(len(item) for kind, item in graph.steps if kind == "kernels")
    gemms = sum(kind == "gemm" for kind, _ in graph.steps)
    meta = {"cuda-archs": ",".join(f"sm_{a}" for a in archs) + ",ptx",
            "nvrtc": _C.nvrtc_version(), "cuda-kernels": kernels, "cuda-gemms": gemms}
    return "\n".join(lines) + "\n" + spec, images, meta
