# SPDX-License-Identifier: Apache-2.0
"""The .kiln container: writing it (kiln.export) and listing its sections
(tests, tools). The byte layout is runtime/artifact/Format.h's; the runtime
validates it (runtime/artifact/Artifact.cpp). This module imports no kiln
compiler code.

Weights are one safetensors file: an 8-byte little-endian header length, a
JSON header (padded with spaces, as the format allows, so that the data
starts 64-byte aligned) and the tensors' bytes. Each tensor starts at a
multiple of 64 bytes; the gaps are filled by ``__kiln_pad<i>`` uint8
tensors, so the file stays valid for any safetensors reader.
"""
from __future__ import annotations

import json
import os
import struct
import zlib

MAGIC = b"KILNMOD\0"
VERSION = 1
HEADER_SIZE = 64
ENTRY_SIZE = 32
SECTION_ALIGN = 4096
WEIGHT_ALIGN = 64
KINDS = {"meta": 1, "plan": 2, "cpu_code": 3, "weights": 4, "program": 5,
         "cpu_code_baseline": 6, "cuda_plan": 7, "cuda_images": 8}

_ST_DTYPES = {"float32": "F32", "float64": "F64", "float16": "F16", "bfloat16": "BF16",
              "int64": "I64", "int32": "I32", "bool": "BOOL"}


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def _tensor_bytes(t) -> bytes:
    import torch
    return t.detach().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()


def build_weights(named):
    """A safetensors file of `named` [(name, tensor)] with every tensor at a
    multiple of 64 bytes; returns (bytes, {name: (offset in the file, nbytes)})."""
    blobs = [(n, t, _tensor_bytes(t)) for n, t in named]
    entries, layout, pos = {}, [], 0
    for i, (name, t, data) in enumerate(blobs):
        start = _align(pos, WEIGHT_ALIGN)
        if start > pos:
            entries[f"__kiln_pad{i}"] = {"dtype": "U8", "shape": [start - pos],
                                         "data_offsets": [pos, start]}
        dtype = _ST_DTYPES[str(t.dtype).removeprefix("torch.")]
        entries[name] = {"dtype": dtype, "shape": list(t.shape),
                         "data_offsets": [start, start + len(data)]}
        layout.append((name, start, data))
        pos = start + len(data)
    entries["__metadata__"] = {"format": "pt", "producer": "kiln.export"}
    header = json.dumps(entries, separators=(",", ":")).encode()
    header += b" " * (_align(8 + len(header), WEIGHT_ALIGN) - 8 - len(header))
    base = 8 + len(header)
    out = bytearray(struct.pack("<Q", len(header)) + header + bytes(pos))
    offsets = {}
    for name, start, data in layout:
        out[base + start:base + start + len(data)] = data
        offsets[name] = (base + start, len(data))
    return bytes(out), offsets


def pack(sections) -> bytes:
    """The container bytes of `sections` [(kind name, bytes)]."""
    table_end = HEADER_SIZE + ENTRY_SIZE * len(sections)
    offset = _align(table_end, SECTION_ALIGN)
    table, body = b"", bytearray()
    for kind, data in sections:
        table += struct.pack("<IIQQQ", KINDS[kind], zlib.crc32(data), offset, len(data), 0)
        body += bytes(offset - table_end - len(body)) + data
        offset = _align(offset + len(data), SECTION_ALIGN)
    size = table_end + len(body)
    head = MAGIC + struct.pack("<IIQ", VERSION, len(sections), size)
    crc = zlib.crc32(table, zlib.crc32(head))
    head += struct.pack("<II", crc, 0) + bytes(32)
    return head + table + bytes(body)


def write_artifact(path, meta: str, plan: str, code: bytes | None, weights: bytes, program: str,
                   code_baseline: bytes | None = None, cuda: tuple | None = None):
    """Writes the artifact atomically (a temporary file renamed over `path`).
    `code` None: no CPU build; `cuda`: (CUDA plan text, images bytes)."""
    sections = [("meta", meta.encode()), ("plan", plan.encode())]
    if code is not None:
        sections.append(("cpu_code", code))
    sections += [("weights", weights), ("program", program.encode())]
    if code_baseline is not None:
        sections.append(("cpu_code_baseline", code_baseline))
    if cuda is not None:
        sections += [("cuda_plan", cuda[0].encode()), ("cuda_images", cuda[1])]
    data = pack(sections)
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def sections(data: bytes):
    """{kind name: (offset, size)} of a well-formed artifact's sections."""
    count = struct.unpack_from("<I", data, 12)[0]
    names = {v: k for k, v in KINDS.items()}
    out = {}
    for i in range(count):
        kind, _crc, off, size, _ = struct.unpack_from("<IIQQQ", data, HEADER_SIZE + ENTRY_SIZE * i)
        out[names.get(kind, str(kind))] = (off, size)
    return out


def rewrite_weights(data: bytearray, fill) -> list[str]:
    """Rewrites the weights of the well-formed artifact `data` in place:
    each tensor of the weights section for which `fill(name, safetensors
    dtype, shape)` returns bytes (exactly its size) gets them, and the
    section's and the header's CRC-32 are updated. Returns the names
    rewritten (tools/gpu_check_models.py ships artifacts with zeroed
    weights and fills them on the GPU machine)."""
    count = struct.unpack_from("<I", data, 12)[0]
    for i in range(count):
        at = HEADER_SIZE + ENTRY_SIZE * i
        kind, _crc, off, size, _ = struct.unpack_from("<IIQQQ", data, at)
        if kind != KINDS["weights"]:
            continue
        hlen = struct.unpack_from("<Q", data, off)[0]
        header = json.loads(bytes(data[off + 8:off + 8 + hlen]))
        base, done = off + 8 + hlen, []
        for name, e in header.items():
            if name == "__metadata__" or name.startswith("__kiln_pad"):
                continue
            new = fill(name, e["dtype"], e["shape"])
            if new is None:
                continue
            begin, end = e["data_offsets"]
            if len(new) != end - begin:
                raise ValueError(f"weight {name}: {len(new)} bytes for {end - begin}")
            data[base + begin:base + end] = new
            done.append(name)
        view = memoryview(data)
        struct.pack_into("<I", data, at + 4, zlib.crc32(view[off:off + size]))
        table = view[HEADER_SIZE:HEADER_SIZE + ENTRY_SIZE * count]
        struct.pack_into("<I", data, 24, zlib.crc32(table, zlib.crc32(view[:24])))
        return done
    raise ValueError("the artifact has no weights section")
