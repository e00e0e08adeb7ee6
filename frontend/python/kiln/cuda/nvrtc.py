# SPDX-License-Identifier: Apache-2.0
"""NVRTC through kiln's extension: compile emitted sources, check whole IR files.

``compile_source(source, arch)`` returns a cubin for sm_<arch> (NVRTC runs
without a GPU). ``check_ir(ir)`` emits a captured graph with
``collect_unsupported`` (unsupported ops are listed with their reason, the
rest is still emitted), compiles it for each arch and verifies every
kernel is in each cubin; ``check_dir(folder)`` does that for every
``captured.mlir`` below a ``KILN_DEBUG_DIR`` folder. Binaries are cached
with the compile cache (``KILN_CACHE_DIR``, subfolder ``cuda``).
"""
from __future__ import annotations

import collections
import os


def _c():
    from kiln import _C
    return _C


def compile_source(source: str, arch: int, cubin: bool = True) -> bytes:
    """Cubin (or PTX) bytes of `source` for sm_<arch>; RuntimeError with
    NVRTC's log and the numbered source on failure. Binaries are cached in
    ``<kiln.config.cache_dir>/cuda`` (keyed by NVRTC version, arch, kind
    and the whole source)."""
    return compile_source_info(source, arch, cubin)[0]


def compile_source_info(source: str, arch: int, cubin: bool = True):
    """(binary, NVRTC log, seconds, from_cache)."""
    from kiln.config import config
    return tuple(_c().nvrtc_compile(source, arch, cubin, cache_dir=config.cache_dir or "",
                                      cache_max_mb=max(0, int(config.cache_max_mb))))


def check_ir(ir: str, archs=(80, 90), fuse_rows: bool = True) -> dict:
    """Emits `ir` (kiln IR text) and compiles the kernels for each arch.

    Returns {'kernels': [names], 'externs': [names], 'unsupported': [dicts
    with function, op, location, reason], 'binaries': {arch: bytes}}.
    Raises RuntimeError if NVRTC rejects the source or a kernel is missing
    from a cubin; ValueError if the IR cannot be prepared for emission.
    """
    emitted = _c().cuda_emit(ir, collect_unsupported=True, fuse_rows=fuse_rows)
    kernels = [k["name"] for k in emitted["kernels"]]
    out = {"kernels": kernels, "externs": [e["name"] for e in emitted["externs"]],
           "unsupported": emitted["unsupported"], "binaries": {}, "source": emitted["source"]}
    if not kernels:
        return out
    for arch in archs:
        binary = compile_source(emitted["source"], arch)
        missing = [k for k in kernels if k.encode() not in binary]
        if missing:
            raise RuntimeError(f"kiln.cuda: kernels {missing} missing from the sm_{arch} cubin")
        out["binaries"][arch] = binary
    return out


def captured_files(folder: str):
    """Every captured.mlir below `folder` (a KILN_DEBUG_DIR), sorted."""
    hits = []
    for root, _dirs, files in os.walk(folder):
        if "captured.mlir" in files:
            hits.append(os.path.join(root, "captured.mlir"))
    return sorted(hits)


def check_dir(folder: str, archs=(80, 90)) -> dict:
    """check_ir on every distinct captured graph below `folder`.

    Returns a summary: graphs (distinct IR texts), kernels (compiled for
    every arch), externs, unsupported (op, reason, location, file) and
    failed (graphs the emitter could not even start on, with the reason),
    plus `by_reason`: unsupported counts per (op, reason), and nvrtc_failed
    (graphs whose source NVRTC rejected, with its log)."""
    seen = {}
    for path in captured_files(folder):
        with open(path, encoding="utf-8") as f:
            seen.setdefault(f.read(), path)
    summary = {"graphs": len(seen), "kernels": 0, "externs": 0, "unsupported": [],
               "failed": [], "nvrtc_failed": [], "archs": list(archs)}
    for ir, path in seen.items():
        try:
            r = check_ir(ir, archs)
        except ValueError as e:
            summary["failed"].append({"file": path, "reason": str(e)})
            continue
        except RuntimeError as e:  # NVRTC rejected the source: a kiln bug
            summary["nvrtc_failed"].append({"file": path, "reason": str(e)})
            continue
        summary["kernels"] += len(r["kernels"])
        summary["externs"] += len(r["externs"])
        for u in r["unsupported"]:
            summary["unsupported"].append(dict(u, file=path))
    summary["by_reason"] = collections.Counter(
        (u["op"], u["reason"]) for u in summary["unsupported"])
    return summary


def format_summary(s: dict) -> str:
    """A human-readable report of check_dir's summary."""
    lines = [f"{s['graphs']} graphs: {s['kernels']} kernels compiled for "
             f"{', '.join('sm_%d' % a for a in s['archs'])}, {s['externs']} extern GEMMs, "
             f"{len(s['unsupported'])} unsupported ops, {len(s['failed'])} graphs not emitted, "
             f"{len(s['nvrtc_failed'])} graphs NVRTC rejected"]
    for (op, reason), n in sorted(s["by_reason"].items(), key=lambda kv: -kv[1]):
        lines.append(f"  {n:4d} x {op}: {reason}")
    for f in s["failed"]:
        lines.append(f"  not emitted: {f['file']}: {f['reason'].strip()}")
    for f in s["nvrtc_failed"]:
        lines.append(f"  NVRTC rejected: {f['file']}: {f['reason'].strip()[:2000]}")
    return "\n".join(lines)
