# SPDX-License-Identifier: Apache-2.0
"""Running one emitted function on CUDA tensors: ``CudaGraph``.

The CUDA emitter (kiln._C.cuda_emit) returns the source and a launch plan:
buffers (contiguous, row-major), and per function the steps in order —
kernels (grid, block, buffer arguments) and extern GEMMs. ``CudaGraph``
runs that plan: inputs are the caller's tensors (made contiguous), every
other buffer is a ``torch.empty`` on the inputs' device (torch's caching
allocator), consecutive kernels are launched by one call into
libkiln_cuda on torch's current stream, and GEMMs run as ``torch.matmul``
segments on the same stream (cuBLAS through torch; kiln does not load
cuBLAS itself yet); a GEMM step with a bias / bias + ReLU epilogue runs as
one ``torch.addmm`` / ``torch._addmm_activation`` call (cuBLASLt's
epilogues on CUDA) writing the consumer's result. ``launches()`` is the dry run: the same plan on any
device, including ``meta``, without a driver.

This module imports only torch and the standard library at import time
(it is also loaded on a GPU machine without kiln's MLIR extension).
"""
from __future__ import annotations

import contextvars
import os

import torch

from . import _driver, symbolic

# CUDA storage type (the emitter's spelling) → torch dtype.
DTYPES = {
    "float": torch.float32, "__half": torch.float16, "__nv_bfloat16": torch.bfloat16,
    "double": torch.float64, "bool": torch.bool, "signed char": torch.int8,
    "short": torch.int16, "int": torch.int32, "long long": torch.int64,
    "__nv_fp8_e4m3": torch.float8_e4m3fn,
}


#: The mode of the current call when the caller chose one
#: (kiln.compile(mode="reduce-overhead") sets it around its calls);
#: None: each CudaGraph's own mode.
call_mode = contextvars.ContextVar("kiln_cuda_mode", default=None)


class CudaUnsupportedError(NotImplementedError):
    """The graph has ops the CUDA backend cannot run (each listed with its reason)."""


class CudaGraph:
    """One function of an emitted CUDA module, runnable on CUDA tensors.

    ``emitted`` is kiln._C.cuda_emit's dict (or an artifact's, see
    kiln/cuda/artifact.py); ``images`` maps an arch (80, 90, ...) to a cubin
    and may hold ``"ptx"``; missing cubins are compiled with NVRTC on first
    use when kiln's extension is available.
    """

    #: Executors: "plan" (default: the whole plan in one C call, GEMMs
    #: through cuBLASLt) or "python" (kernel runs through ctypes, GEMMs
    #: through torch; $KILN_CUDA_EXECUTOR=python, or where cuBLASLt is
    #: missing). Modes: "default", "reduce-overhead" (CUDA graphs, plan.py).
    MODES = ("default", "reduce-overhead")

    def __init__(self, emitted: dict, function: str = "forward", images: dict | None = None,
                 mode: str = "default"):
        if mode not in self.MODES:
            raise ValueError(f"kiln.cuda: unknown mode {mode!r} (known: {self.MODES})")
        self.mode = mode
        self.executor = os.environ.get("KILN_CUDA_EXECUTOR", "plan")
        self.fallback_reason = None  # why the plan executor is not used, or None
        self._executors = {}  # (device index, tf32) -> PlanExecutor / GraphExecutor
        plans = {f["name"]: f for f in emitted["functions"]}
        if function not in plans:
            missing = [u for u in emitted.get("unsupported", ()) if u["function"] == function]
            if missing:
                raise CudaUnsupportedError(_describe(function, missing))
            raise KeyError(f"kiln.cuda: no function {function!r} in the module "
                           f"(has {sorted(plans)})")
        fn = plans[function]
        bad = [emitted["unsupported"][i] for kind, i in fn["steps"] if kind == "unsupported"]
        if bad:
            raise CudaUnsupportedError(_describe(function, bad))
        self.function = function
        self.source = emitted["source"]
        self.images = dict(images or {})
        # Dynamic dims (kiln/cuda/symbolic.py): one plan per symbol values,
        # all sharing this graph's images and loaded modules.
        self.symbols = [tuple(s) for s in fn.get("symbols", ())]
        self._emitted = emitted if self.symbols else None
        self._specialized = {}  # symbol values -> CudaGraph
        self._modules = {}  # device index -> _driver.Module
        self.buffers = {b["name"]: b for b in emitted["buffers"] if b["function"] == function}
        self.inputs = list(fn["inputs"])
        self.results = list(fn["results"])
        self.result_shapes = [tuple(s) for s in fn["result_shapes"]]
        # Steps: ("kernels", [kernel dicts]) for runs of consecutive kernels,
        # ("gemm", extern dict).
        self.steps = []
        for kind, i in fn["steps"]:
            if kind == "kernel":
                k = emitted["kernels"][i]
                if self.steps and self.steps[-1][0] == "kernels":
                    self.steps[-1][1].append(k)
                else:
                    self.steps.append(("kernels", [k]))
            else:
                self.steps.append(("gemm", emitted["externs"][i]))
        self.kernel_names = [k["name"] for kind, ks in self.steps if kind == "kernels" for k in ks]
        self.kernel_args = {k["name"]: k["args"] for kind, ks in self.steps if kind == "kernels"
                            for k in ks}
        self._loaded = {}  # device index -> (Module, [LaunchSequence per kernels step])

    # -- dynamic dims -----------------------------------------------------
    def specialize(self, inputs) -> "CudaGraph":
        """This graph, or (dynamic dims) its static plan for these inputs'
        sizes: made once per distinct sizes, same source and cubins."""
        if not self.symbols:
            return self
        if len(inputs) != len(self.inputs):
            raise TypeError(f"kiln.cuda: {self.function} takes {len(self.inputs)} tensors, "
                            f"got {len(inputs)}")
        fn = next(f for f in self._emitted["functions"] if f["name"] == self.function)
        values = symbolic.bind(fn, [tuple(t.shape) for t in inputs])
        g = self._specialized.get(values)
        if g is None:
            g = CudaGraph(symbolic.specialize(self._emitted, self.function, values),
                          self.function, mode=self.mode)
            g.images, g._modules, g.executor = self.images, self._modules, self.executor
            self._specialized[values] = g
        return g

    # -- buffers ----------------------------------------------------------
    def _check_inputs(self, inputs):
        if len(inputs) != len(self.inputs):
            raise TypeError(f"kiln.cuda: {self.function} takes {len(self.inputs)} tensors, "
                            f"got {len(inputs)}")
        device = None
        for i, (t, name) in enumerate(zip(inputs, self.inputs)):
            b = self.buffers[name]
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"kiln.cuda: input {i} is not a tensor")
            if tuple(t.shape) != tuple(b["shape"]) or t.dtype != DTYPES[b["type"]]:
                raise ValueError(f"kiln.cuda: input {i} must be {DTYPES[b['type']]} "
                                 f"{tuple(b['shape'])}, got {t.dtype} {tuple(t.shape)}")
            if device is None:
                device = t.device
            elif t.device != device:
                raise ValueError(f"kiln.cuda: inputs on different devices ({device}, {t.device})")
        return device

    def _allocate(self, inputs, device):
        bufs = {}
        for name, t in zip(self.inputs, inputs):
            bufs[name] = t.contiguous()
        for name, b in self.buffers.items():
            if name not in bufs:
                bufs[name] = torch.empty(b["shape"], dtype=DTYPES[b["type"]], device=device)
        return bufs

    def _results(self, bufs):
        return tuple(bufs[n].view(s) for n, s in zip(self.results, self.result_shapes))

    @staticmethod
    def _gemm(g, bufs):
        a, b, c = (bufs[n] for n in g["args"][:3])
        if a.dtype in (torch.int8, torch.float8_e4m3fn) and b.dtype == torch.int32:
            b = b.view(a.dtype)  # int8 / fp8 weights in their int32 words
        batch = (g["batch"],) if g["batched"] else ()
        a = a.view(*batch, g["m"], g["k"])
        b = b.view(*batch, g["n"], g["k"]).transpose(-1, -2) if g["trans_b"] \
            else b.view(*batch, g["k"], g["n"])
        c = c.view(*batch, g["m"], g["n"])
        if a.dtype == torch.int8:  # int8 x int8 -> int32, exact
            c.copy_(_int8_matmul(a, b))
            return
        if a.dtype == torch.float8_e4m3fn:  # e4m3 products (exact in f32) summed in f32
            c.copy_(torch.matmul(a.float(), b.float()))
            return
        epilogue = g.get("epilogue", "none")
        if epilogue != "none":
            # 2-d, c.dtype == a.dtype (the emitter's rule). One library call:
            # on CUDA torch runs these as cuBLASLt GEMMs with a bias / bias +
            # ReLU epilogue; elsewhere they are addmm + relu.
            bias = bufs[g["args"][3]]
            if epilogue == "bias_relu":
                torch._addmm_activation(bias, a, b, use_gelu=False, out=c)
            elif epilogue == "bias_gelu_tanh":  # _addmm_activation's GELU is erf on the CPU
                torch.addmm(bias, a, b, out=c)
                c.copy_(torch.nn.functional.gelu(c, approximate="tanh"))
            else:
                torch.addmm(bias, a, b, out=c)
            return
        if c.dtype == a.dtype:
            torch.matmul(a, b, out=c)
        else:  # 16-bit inputs, f32 accumulator: torch's own GEMM, widened
            c.copy_(torch.matmul(a, b))

    # -- dry run ----------------------------------------------------------
    def launches(self, *inputs):
        """The plan on these inputs without a GPU: GEMMs run (on meta
        tensors they only check shapes), kernels are recorded. Returns
        (steps, results): steps are dicts with the kernel or GEMM name and
        the tensors of its buffer arguments."""
        if self.symbols:
            return self.specialize(inputs).launches(*inputs)
        device = self._check_inputs(inputs)
        bufs = self._allocate(inputs, device)
        steps = []
        for kind, item in self.steps:
            if kind == "gemm":
                self._gemm(item, bufs)
                steps.append({"kind": "gemm", "name": item["name"],
                              "args": [bufs[n] for n in item["args"]]})
                continue
            for k in item:
                steps.append({"kind": "kernel", "name": k["name"], "grid": k["grid"],
                              "block": k["block"], "args": [bufs[n] for n in k["args"]],
                              "scalars": k.get("scalars", [])})
        return steps, self._results(bufs)

    # -- execution --------------------------------------------------------
    def image_for(self, arch: int) -> bytes:
        """The cubin for sm_<arch> (compiled with NVRTC and kept if missing),
        else the PTX image."""
        if arch in self.images:
            return self.images[arch]
        try:
            from kiln import _C
        except ImportError:
            _C = None
        if _C is not None and _C.nvrtc_available():
            from .nvrtc import compile_source
            self.images[arch] = compile_source(self.source, arch)
            return self.images[arch]
        if "ptx" in self.images:
            return self.images["ptx"]
        raise _driver.CudaDriverError(
            f"kiln.cuda: no cubin for sm_{arch} and no NVRTC to compile one "
            f"(images: {sorted(map(str, self.images))})")

    def _load(self, index: int):
        loaded = self._loaded.get(index)
        if loaded is None:
            module = self._modules.get(index)
            if module is None:
                _driver.init()
                major, minor = _driver.compute_capability(index)
                module = self._modules[index] = _driver.Module(
                    self.image_for(major * 10 + minor), index)
            seqs = [_driver.LaunchSequence(module, [(k["name"], k["grid"], k["block"],
                                                     len(kernel_args(k, None))) for k in item])
                    for kind, item in self.steps if kind == "kernels"]
            loaded = self._loaded[index] = (module, seqs)
        return loaded

    def _execute(self, bufs, device_index: int, stream: int) -> None:
        """Runs every step on `bufs` (name → tensor): kernels through the
        driver on `stream` of device `device_index`, GEMMs through torch."""
        _, seqs = self._load(device_index)
        s = 0
        for kind, item in self.steps:
            if kind == "gemm":
                self._gemm(item, bufs)
                continue
            seqs[s].run([v for k in item for v in kernel_args(k, bufs)], stream)
            s += 1

    def __call__(self, *inputs):
        if self.symbols:
            return self.specialize(inputs)(*inputs)
        device = self._check_inputs(inputs)
        if device.type != "cuda":
            raise ValueError(f"kiln.cuda: inputs must be CUDA tensors, got {device} "
                             "(use launches() for a dry run)")
        index = device.index if device.index is not None else torch.cuda.current_device()
        stream = torch.cuda.current_stream(device).cuda_stream
        if index != torch.cuda.current_device():
            with torch.cuda.device(index):
                return self.run_on(inputs, device, index, stream)
        return self.run_on(inputs, device, index, stream)

    def run_on(self, inputs, device, index: int, stream: int):
        """Runs on checked inputs of `device` (driver device `index`) on
        `stream`; CPU tensors with the fake driver in host emulation."""
        if self.symbols:
            g = self.specialize(inputs)
            g._check_inputs(inputs)
            return g.run_on(inputs, device, index, stream)
        if self.executor == "plan":
            tf32 = device.type == "cuda" and torch.backends.cuda.matmul.allow_tf32
            mode = call_mode.get() or self.mode
            key = (index, tf32, mode)
            ex = self._executors.get(key)
            first = ex is None
            if first:
                ex = self._executors[key] = self._make_executor(device, index, tf32, mode)
            try:
                return ex.run(inputs, stream)
            except _driver.CudaDriverError as e:
                # A plan that cannot start here (no cuBLASLt, no algorithm
                # for a GEMM) runs through the Python executor, with the
                # reason kept; a later failure is an error.
                if not first and "cuBLASLt not found" not in str(e):
                    raise
                del self._executors[key]
                self.executor, self.fallback_reason = "python", str(e)
        bufs = self._allocate(inputs, device)
        self._execute(bufs, index, stream)
        return self._results(bufs)

    def _make_executor(self, device, index: int, tf32: bool, mode: str):
        from .plan import GraphExecutor, PlanExecutor
        module, _ = self._load(index)
        ex = PlanExecutor(self, module, device, DTYPES, tf32)
        return GraphExecutor(ex) if mode == "reduce-overhead" else ex


def _int8_matmul(a, b):
    """a [m, k] @ b [k, n] of int8 in int32: torch._int_mm where CUDA takes
    it (m > 16, k and n multiples of 8), else through a wider type that
    holds every sum exactly (float64 on CUDA, which has no int32 matmul)."""
    m, k = a.shape
    n = b.shape[1]
    if a.is_cuda and m > 16 and k % 8 == 0 and n % 8 == 0:
        return torch._int_mm(a, b)
    if a.is_cuda:
        return torch.matmul(a.double(), b.double()).to(torch.int32)
    return torch.matmul(a.to(torch.int32), b.to(torch.int32))


def kernel_args(k: dict, bufs) -> list:
    """A kernel's parameter values: its buffers' device pointers, then its
    scalars (dynamic dims' symbol values); `bufs` None: placeholders."""
    ptrs = [bufs[n].data_ptr() if bufs is not None else 0 for n in k["args"]]
    return ptrs + list(k.get("scalars", ()))


def _describe(function, unsupported):
    lines = [f"kiln.cuda: {len(unsupported)} op(s) of {function} have no CUDA lowering:"]
    for u in unsupported:
        lines.append(f"  {u['op']} at {u['location']}: {u['reason']}")
    return "\n".join(lines)
