# SPDX-License-Identifier: Apache-2.0
"""kiln.export: a model -> one self-contained ``.kiln`` artifact.

The model is called once through kiln with ``fullgraph=True`` on the example
inputs (under ``torch.no_grad()``) while the frontend records the compilation
(frontend/csrc/Export.h): the whole call must be one graph -- a graph break, a
per-op fallback, a side effect or a random op is an :class:`ExportError`
naming it. The graph is compiled once more as position-independent code and
linked into a shared library with ``ld.lld``; the artifact holds that
library, the call plan with the input/output specification, the weights
(a safetensors file, every tensor 64-byte aligned) and the toolchain
identities. ``libkiln_runtime`` (runtime/artifact) and ``kiln.load`` run it
without MLIR, LLVM or the compiler. Layout: docs/deployment.md.
"""
from __future__ import annotations

import datetime
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import types
import warnings

import torch

from kiln import _C, _autograd, _blas
from kiln._artifact_file import build_weights, write_artifact
from kiln._export_cuda import CudaExportError, parse_target
from kiln._export_cuda import build as build_cuda
from kiln.config import _push_to_native, config

__all__ = ["export", "ExportError"]

_DTYPES = {torch.float32: "f32", torch.float64: "f64", torch.float16: "f16",
           torch.bfloat16: "bf16", torch.int64: "i64", torch.int32: "i32", torch.bool: "bool"}


class ExportError(RuntimeError):
    """The model cannot become an artifact; the message says why."""


def export(model, example_inputs, path, dynamic_shapes=None, baseline=True,
           target="cpu") -> str:
    """Writes `model` (an nn.Module, a Python function or a
    torch.export.ExportedProgram) called on `example_inputs` (a tensor or a
    tuple of CPU tensors, passed positionally) to the artifact `path`;
    returns `path`.

    ``dynamic_shapes``: per input (a tuple/list in input order, or a dict by
    forward's parameter name), None or a dict {dim: spec}; a spec is a
    ``torch.export.Dim`` (its name, min and max), a (name, min, max) tuple or
    a name. Symbolic sizes are at least 2 (sizes 0 and 1 are specialized by
    kiln's capture); a dim kiln specializes anyway is an ExportError.
    ``baseline``: also compile for the architecture's baseline CPU (x86-64
    without AVX), which the runtime uses where the CPU lacks a feature of
    this one (doubles the LLVM time of the export).
    ``target``: "cpu", "cuda:sm_80,sm_90" ("cuda": sm_80 and sm_90) or a
    list of both: the CUDA build (kernels compiled with NVRTC, no GPU
    needed: cubins per arch plus PTX, the launch plan) is what
    ``kiln_model_load(path, "cuda")`` runs; static shapes only.
    """
    try:
        want_cpu, archs = parse_target(target)
    except CudaExportError as e:
        raise ExportError(str(e)) from None
    if isinstance(model, torch.export.ExportedProgram):
        model = _ProgramModule(model)
    if isinstance(model, torch.nn.Module) and (any(
            type(m).__module__.startswith("kiln.quant.") for m in model.modules()) or any(
            getattr(n.target, "__module__", "") == "kiln.quant._ops"  # kiln.quant.from_pt2e
            for m in model.modules() if isinstance(m, torch.fx.GraphModule)
            for n in m.graph.nodes)):
        raise ExportError("kiln.export: kiln.quant layers (int8 GEMMs) are not exportable yet; "
                          "export the float model")
    args = example_inputs if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
    for i, a in enumerate(args):
        if not isinstance(a, torch.Tensor):
            raise ExportError(f"kiln.export: example input {i} is a {type(a).__name__}; "
                              "only tensors are supported")
        if a.device.type != "cpu":
            raise ExportError(f"kiln.export: example input {i} is on {a.device}; export a CPU "
                              "model with CPU inputs (target='cuda:...' compiles it for GPUs)")
    # Fresh tensor objects (sharing storage): graph inputs are told apart
    # from weights by identity, and marks never touch the caller's tensors.
    args = tuple(a.detach() for a in args)
    wanted = _mark_dynamic(model, args, dynamic_shapes)
    rec, out = _record(model, args, baseline)
    if rec["error"]:
        raise ExportError(f"kiln.export: {rec['error']}")
    plan, weights, structure = _plan(model, args, rec, out, wanted)
    baseline = baseline and want_cpu
    code = _link(rec["object"]) if want_cpu else None
    code_baseline = _link(rec["baseline_object"]) if baseline else None
    cuda, cuda_meta = None, {}
    if archs:
        try:
            text, images, cuda_meta = build_cuda(rec, archs)
        except CudaExportError as e:
            raise ExportError(str(e)) from None
        cuda = (text, images)
    meta = _meta(rec, structure, cuda_meta)
    write_artifact(path, meta, plan, code, weights, rec["ir"], code_baseline, cuda)
    try:
        if want_cpu:
            _self_check(path, args, out, "cpu")
        if archs:
            _self_check_cuda(path, args, out)
    except ExportError:
        os.unlink(path)
        raise
    if baseline:
        try:
            _self_check(path, args, out, "cpu-baseline")
        except ExportError as e:
            warnings.warn(f"{e}; the artifact is written without a baseline build", stacklevel=2)
            write_artifact(path, meta, plan, code, weights, rec["ir"], None, cuda)
    return path


def _self_check(path, args, out, device):
    """Loads the written artifact through libkiln_runtime and runs it on the
    example inputs: its result must be the JIT path's (the same code)."""
    from kiln_runtime import KilnRuntimeError, load
    try:
        got = load(path, device)(*args)
    except KilnRuntimeError as e:
        raise ExportError(f"kiln.export: the {device} build does not load or run: {e}") from e
    _compare(got, out, device)


def _self_check_cuda(path, args, out):
    """With a GPU: runs the CUDA build like the CPU one. Without: loads it,
    which validates every section before it needs the driver (the load
    then stops at KILN_ERROR_DRIVER)."""
    import torch.cuda
    from kiln_runtime import KilnRuntimeError, load
    if torch.cuda.is_available():
        try:
            got = load(path, "cuda")(*[a.cuda() for a in args])
        except KilnRuntimeError as e:
            raise ExportError(f"kiln.export: the CUDA build does not load or run: {e}") from e
        got = [g.cpu() for g in got] if isinstance(got, (tuple, list)) else got.cpu()
        _compare(got, out, "cuda", 1e-3)  # other kernels: other rounding
        return
    try:
        load(path, "cuda")
    except KilnRuntimeError as e:
        if e.status != "KILN_ERROR_DRIVER":
            raise ExportError(f"kiln.export: the CUDA build does not load: {e}") from e


def _compare(got, out, device, tol32=1e-4):
    want = list(out) if isinstance(out, (tuple, list)) else [out]
    got = list(got) if isinstance(got, (tuple, list)) else [got]
    for j, (g, w) in enumerate(zip(got, want)):
        tol = tol32 if w.dtype in (torch.float32, torch.float64) else 1e-2
        if g.shape != w.shape or g.dtype != w.dtype or not torch.allclose(
                g.float(), w.float(), rtol=tol, atol=tol, equal_nan=True):
            raise ExportError(f"kiln.export: the {device} build's output {j} differs from the "
                              "JIT path's on the example inputs")


class _ProgramModule(torch.nn.Module):
    """An ExportedProgram as a module kiln captures: its graph module's
    forward (ATen calls, no pytree handling) called with the lifted
    parameters, buffers and constants as buffers of this module (so they
    become weights) and the caller's tensors in between."""

    def __init__(self, ep):
        super().__init__()
        from torch.export.graph_signature import InputKind, OutputKind
        if any(o.kind != OutputKind.USER_OUTPUT for o in ep.graph_signature.output_specs):
            raise ExportError("kiln.export: the ExportedProgram mutates buffers or inputs")
        self.gm, self.slots = ep.graph_module, []
        for i, spec in enumerate(ep.graph_signature.input_specs):
            if spec.kind == InputKind.USER_INPUT:
                self.slots.append(None)
                continue
            t = ep.state_dict.get(spec.target, ep.constants.get(spec.target))
            if not isinstance(t, torch.Tensor):
                raise ExportError(f"kiln.export: ExportedProgram input {spec.target} is not a "
                                  "tensor")
            self.register_buffer(f"lifted{i}", t.detach())
            self.slots.append(f"lifted{i}")
        self.single = len(ep.graph_signature.output_specs) == 1

    def forward(self, *args):
        flat, k = [], 0
        for slot in self.slots:
            if slot is None:
                flat.append(args[k])
                k += 1
            else:
                flat.append(getattr(self, slot))
        out = type(self.gm).forward(self.gm, *flat)
        return out[0] if self.single else tuple(out)


def _fresh(fn):
    """`fn` with a copy of its code object: kiln caches compilations per code
    object, and an export must compile (and record) even if the model was
    compiled before."""
    f = types.FunctionType(fn.__code__.replace(), fn.__globals__, fn.__name__, fn.__defaults__,
                           fn.__closure__)
    f.__kwdefaults__ = fn.__kwdefaults__
    return f


def _record(model, args, baseline):
    """Calls the model through kiln while the frontend records; returns the
    record and the call's result."""
    _push_to_native()
    _blas.select()
    if isinstance(model, torch.nn.Module):
        if not isinstance(type(model).forward, types.FunctionType):
            raise ExportError("kiln.export: the module's forward is not a Python function")
        call_args = (model, *args)
        fn = _fresh(type(model).forward)
    elif isinstance(model, types.FunctionType):
        call_args, fn = args, _fresh(model)
    else:
        raise ExportError(f"kiln.export expects an nn.Module or a Python function, got "
                          f"{type(model).__name__}")
    user_logs, dynamic_log = set(config.logs), []

    def sink(channel, message):  # keeps why symbolic sizes were dropped
        if channel == "dynamic":
            dynamic_log.append(message)
        if channel in user_logs or "all" in user_logs:
            sys.stderr.write(f"[kiln:{channel}] {message}\n")

    _C.set_log_sink(sink)
    try:
        with torch.no_grad(), config.patch(logs=config.logs | {"dynamic"}):
            _C.export_begin(baseline)
            try:
                out = _C.call(fn, call_args, {}, True, _autograd.apply, 0)
            except RuntimeError as e:
                _C.export_end()
                raise ExportError(f"kiln.export: the model is not one graph: {e}") from e
            rec = _C.export_end()
    finally:
        _C.set_log_sink(None)
    rec["dynamic_log"] = dynamic_log
    return rec, out


def _dim_spec(spec, input_index, dim):
    """(name, min, max) of one dynamic_shapes entry."""
    if isinstance(spec, str):
        return spec, 2, 2**62
    if isinstance(spec, tuple) and len(spec) == 3:
        return spec
    name = getattr(spec, "__name__", None)
    if name is not None and hasattr(spec, "min"):
        lo, hi = int(spec.min), spec.max
        hi = 2**62 if hi is None or hi > 2**62 else int(hi)
        return name, lo, hi
    raise ExportError(f"kiln.export: dynamic_shapes of input {input_index} dim {dim}: expected a "
                      f"torch.export.Dim, a (name, min, max) tuple or a name, got {spec!r}")


def _mark_dynamic(model, args, dynamic_shapes):
    """Marks the requested dims symbolic (kiln.mark_dynamic) on `args`;
    returns {(input, dim): (name, min, max)}."""
    if dynamic_shapes is None:
        return {}
    specs = dynamic_shapes
    if isinstance(specs, dict):
        fn = type(model).forward if isinstance(model, torch.nn.Module) else model
        names = fn.__code__.co_varnames[int(isinstance(model, torch.nn.Module)):]
        specs = [specs.get(n) for n in names[:len(args)]]
    if len(specs) != len(args):
        raise ExportError(f"kiln.export: dynamic_shapes has {len(specs)} entries for "
                          f"{len(args)} inputs")
    wanted = {}
    for i, (a, dims) in enumerate(zip(args, specs)):
        for d, spec in (dims or {}).items():
            name, lo, hi = _dim_spec(spec, i, d)
            if lo < 2:
                warnings.warn(f"kiln.export: input {i} dim {d} ('{name}'): kiln's symbolic "
                              f"sizes are >= 2; the artifact accepts [2, {hi}]", stacklevel=3)
            wanted[(i, d % a.dim())] = (name, max(lo, 2), hi)
        marked = [d for (k, d) in wanted if k == i]
        if marked:
            a._kiln_dynamic_dims = frozenset(marked)
    return wanted


def _sanitize(name: str) -> str:
    return "".join(c if c.isalnum() or c in "_.-[]" else "_" for c in name) or "_"


def _weight_names(model):
    """{id(tensor): qualified name} of the model's parameters and buffers."""
    if not isinstance(model, torch.nn.Module):
        return {}
    named = list(model.named_parameters(remove_duplicate=False))
    named += list(model.named_buffers(remove_duplicate=False))
    return {id(t): n for n, t in reversed(named)}


def _classify(model, args, graph_inputs, sources):
    """Per graph input: ("user", k) or ("weight", name, tensor)."""
    by_id = {id(a): k for k, a in enumerate(args)}
    storages = {a.untyped_storage().data_ptr(): k for k, a in enumerate(args) if a.numel()}
    names = _weight_names(model)
    kinds, seen = [], set()
    for i, t in enumerate(graph_inputs):
        k = by_id.get(id(t))
        if k is not None:
            if k in seen:
                raise ExportError(f"kiln.export: example input {k} is two graph inputs")
            seen.add(k)
            kinds.append(("user", k))
            continue
        if t.numel() and t.untyped_storage().data_ptr() in storages:
            raise ExportError(f"kiln.export: graph input {sources[i][0]} is derived from example "
                              f"input {storages[t.untyped_storage().data_ptr()]} in a way export "
                              "cannot follow; pass it as an input itself")
        kinds.append(("weight", names.get(id(t), f"constant.{i}"), t))
    unused = sorted(set(range(len(args))) - seen)
    if unused:
        raise ExportError(f"kiln.export: example input {unused[0]} is not read by the graph "
                          "(an artifact takes only tensors the graph computes with)")
    return kinds


def _outputs(out, results):
    """(result index per output, structure) of the model's return value."""
    items = list(out) if isinstance(out, (tuple, list)) else [out]
    structure = type(out).__name__ if isinstance(out, (tuple, list)) else "tensor"
    index = []
    for j, o in enumerate(items):
        # The result itself, or another tensor object over its memory (results
        # are fresh allocations, so the same pointer, shape and strides are it).
        hit = [r for r, t in enumerate(results) if t is o or (
            isinstance(o, torch.Tensor) and t.data_ptr() == o.data_ptr() and t.numel() > 0
            and t.shape == o.shape and t.stride() == o.stride() and t.dtype == o.dtype)]
        if not hit:
            raise ExportError(f"kiln.export: output {j} is not a tensor the graph computes "
                              f"({type(o).__name__}: an input, a view of one or a Python value)")
        index.append(hit[0])
    return index, structure


def _symbols(rec, kinds, wanted):
    """[(name, min, max)] of the record's symbols, and {(graph input, dim): s}."""
    user_of = {i: k[1] for i, k in enumerate(kinds) if k[0] == "user"}
    dims, symbols = {}, []
    for s, (_captured, where, text) in enumerate(rec["symbols"]):
        specs = [wanted[(user_of[i], d)] for i, d in where if (user_of.get(i), d) in wanted]
        if not specs:
            raise ExportError(f"kiln.export: the graph has a symbolic size no dynamic_shapes "
                              f"entry asked for: {text}")
        names = sorted({repr(p[0]) for p in specs})
        if len(names) > 1:  # one example size for two Dims: one symbol
            raise ExportError(f"kiln.export: dynamic dims {' and '.join(names)} have the same "
                              f"example size {_captured}, so kiln's capture makes them one size; "
                              "export with example inputs where they differ")
        symbols.append((_sanitize(specs[0][0]), max(p[1] for p in specs),
                        min(p[2] for p in specs)))
        for i, d in where:
            dims[(i, d)] = s
    graph_of = {k[1]: i for i, k in enumerate(kinds) if k[0] == "user"}
    for (k, d), (name, _, _) in wanted.items():
        if (graph_of[k], d) not in dims:
            why = "; ".join(rec["dynamic_log"]) or ("it equals a static size the graph uses, or "
                                                    "the graph needs its value")
            raise ExportError(f"kiln.export: dynamic dim '{name}' (input {k} dim {d}) was "
                              f"specialized by kiln's capture: {why}")
    return symbols, dims


def _plan(model, args, rec, out, wanted):
    """The plan text, the weights file (bytes) and the output structure."""
    graph_inputs = rec["graph_inputs"]
    if graph_inputs is None:
        raise ExportError("kiln.export: the compiled graph did not run")
    kinds = _classify(model, args, graph_inputs, rec["inputs"])
    outputs, structure = _outputs(out, rec["graph_results"])
    symbols, sym_dims = _symbols(rec, kinds, wanted)
    weights, offsets = build_weights([(k[1], k[2]) for k in kinds if k[0] == "weight"])
    lines = ["kiln-plan 1", f"entry {rec['entry']}", f"imports {len(rec['imports'])}"]
    lines += [f"import {n}" for n in rec["imports"]]
    lines.append(f"symbols {len(symbols)}")
    lines += [f"symbol {n} {lo} {hi}" for n, lo, hi in symbols]
    lines.append(f"inputs {len(kinds)}")
    user_names = _input_names(model, len(args))
    for i, (kind, t) in enumerate(zip(kinds, graph_inputs)):
        if t.dtype not in _DTYPES:
            raise ExportError(f"kiln.export: graph input {rec['inputs'][i][0]} has dtype {t.dtype}")
        dims = " ".join(f"${sym_dims[(i, d)]}" if (i, d) in sym_dims else str(s)
                        for d, s in enumerate(t.shape))
        spec = f"{_DTYPES[t.dtype]} {t.dim()}" + (f" {dims}" if dims else "")
        if kind[0] == "user":
            lines.append(f"input user {kind[1]} {user_names[kind[1]]} {spec}")
        else:
            off, nbytes = offsets[kind[1]]
            lines.append(f"input weight {_sanitize(kind[1])} {spec} {off} {nbytes}")
    lines.append(f"results {len(rec['results'])}")
    for sizes, dtype, symbol_of in rec["results"]:
        dims = [f"${symbol_of[d]}" if symbol_of and symbol_of[d] >= 0 else str(s)
                for d, s in enumerate(sizes)]
        lines.append(" ".join(["result", dtype, str(len(sizes)), *dims]))
    lines.append(f"outputs {len(outputs)}")
    lines += [f"output {r} output{j}" for j, r in enumerate(outputs)]
    if rec.get("index_check", -1) >= 0:  # Entry::indexCheck: eager's IndexError
        lines.append(f"index_check {rec['index_check']}")
    return "\n".join(lines) + "\n", weights, structure


def _input_names(model, n):
    """Forward's parameter names of the n inputs (input0... when unknown)."""
    fn = type(model).forward if isinstance(model, torch.nn.Module) else model
    skip = int(isinstance(model, torch.nn.Module))
    names = list(fn.__code__.co_varnames[skip:fn.__code__.co_argcount])
    return [_sanitize(names[k]) if k < len(names) else f"input{k}" for k in range(n)]


def _linker():
    for cand in ("ld.lld", "/usr/lib/llvm-19/bin/ld.lld", "ld"):
        found = shutil.which(cand)
        if found:
            return found
    raise ExportError("kiln.export: no linker (ld.lld or ld) to build the artifact's library")


def _vector_math_library() -> str:
    """The path of glibc's libmvec.so.1 (codegen/cpu/VectorMath.h: the
    compiler loaded it when it vectorized sin/cos/tan through it)."""
    import ctypes
    ctypes.CDLL("libmvec.so.1")
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if os.path.basename(path) == "libmvec.so.1":
                return path
    raise ExportError("kiln.export: the code calls glibc's vector math (libmvec.so.1), "
                      "which this process cannot find to link against")


def _link(obj: bytes) -> bytes:
    """Links the exported object into a shared library (no soname: two
    models loaded in one process stay apart); code that calls libmvec's
    vector sin/cos/tan (`_ZGV...` symbols) gets it as a needed library."""
    with tempfile.TemporaryDirectory(prefix="kiln-export-") as tmp:
        o, so = os.path.join(tmp, "graph.o"), os.path.join(tmp, "graph.so")
        with open(o, "wb") as f:
            f.write(obj)
        cmd = [_linker(), "-shared", "--build-id=sha1", "-z", "noexecstack", "-z", "now",
               "-z", "relro", "-o", so, o]
        if b"_ZGV" in obj:
            cmd.append(_vector_math_library())
        r = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if r.returncode != 0:
            raise ExportError(f"kiln.export: linking failed: {' '.join(cmd)}\n{r.stderr}")
        with open(so, "rb") as f:
            return f.read()


def _meta(rec, structure, extra) -> str:
    """The Meta section: who made the artifact and for which CPU."""
    host = rec["host"].split(" ")
    from kiln import __version__
    lines = {"format": "kiln artifact 1", "kiln": __version__, "kiln-build": rec["build"],
             "llvm-target": " ".join(host[:2]),
             "cpu-features": host[2] if len(host) > 2 else "",
             "torch": torch.__version__, "python": platform.python_version(),
             "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
             "output-structure": structure, **extra}
    return "".join(f"{k}: {v}\n" for k, v in lines.items())
