# SPDX-License-Identifier: Apache-2.0
"""Ahead-of-time CUDA artifacts: emitted graphs + cubins in one file.

A machine with kiln's MLIR extension and NVRTC (no GPU needed) emits and
compiles graphs; a GPU machine with only torch and libkiln_cuda (no
LLVM/MLIR) loads the file and runs each graph with ``CudaGraph``. Format:
gzip'ed JSON ``{"format": 1, "nvrtc": "13.0", "entries": {name: {
"emitted": <kiln._C.cuda_emit dict>, "function": "forward", "images":
{"80": base64 cubin, "90": ..., "ptx": base64 PTX}, "meta": {...}}}}``.
Standard library only (plus graph.py for ``graph()``).
"""
from __future__ import annotations

import base64
import gzip
import json

FORMAT = 1


def save(path: str, entries: dict, nvrtc_version: str) -> None:
    """Writes `entries` (name → {"emitted", "images": {arch|"ptx": bytes}, "meta"})."""
    doc = {"format": FORMAT, "nvrtc": nvrtc_version, "entries": {}}
    for name, e in entries.items():
        doc["entries"][name] = {
            "emitted": e["emitted"], "function": e.get("function", "forward"),
            "meta": e.get("meta", {}),
            "images": {str(k): base64.b64encode(v).decode() for k, v in e["images"].items()},
        }
    with gzip.open(path, "wt", encoding="utf-8") as f:
        json.dump(doc, f)


def load(path: str) -> dict:
    """name → {"emitted", "function", "meta", "images": {80: bytes, ..., "ptx": bytes}}."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        doc = json.load(f)
    if doc.get("format") != FORMAT:
        raise ValueError(f"kiln.cuda: {path} has artifact format {doc.get('format')}, "
                         f"expected {FORMAT}")
    out = {}
    for name, e in doc["entries"].items():
        images = {}
        for k, v in e["images"].items():
            images[int(k) if k.isdigit() else k] = base64.b64decode(v)
        out[name] = dict(e, images=images)
    return out


def graph(entry: dict):
    """A CudaGraph for one loaded entry."""
    from .graph import CudaGraph
    return CudaGraph(entry["emitted"], entry.get("function", "forward"), entry["images"])
