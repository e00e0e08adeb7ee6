# SPDX-License-Identifier: Apache-2.0
"""kiln_runtime: run ``.kiln`` artifacts (made by ``kiln.export``) on torch
tensors with only ``libkiln_runtime`` loaded -- no kiln compiler, MLIR or
LLVM in the process. ``kiln.load`` is this package's ``load``.

    model = kiln_runtime.load("model.kiln")
    y = model(x)

The library is found through ``$KILN_RUNTIME_LIB``, else next to kiln's
extension (``frontend/python/kiln/libkiln_runtime.so`` in a source tree).
Calls release the GIL (ctypes), so threads run one model concurrently.

``load(path, "cuda")`` runs an artifact's CUDA build (kiln.export
``target="cuda:..."``) on CUDA tensors (outputs on the inputs' GPU) or CPU
tensors (copied to the GPU and back); ``$KILN_CUDA_DRIVER`` and
``$KILN_CUBLASLT`` name the driver and cuBLASLt libraries (as for
kiln.cuda; tests point them at a fake). Calls on CUDA tensors run on
torch's current stream without waiting (kiln_model_run_async); calls on
CPU tensors copy and wait.
"""
from __future__ import annotations

import ctypes
import os
import threading

import torch

__all__ = ["load", "LoadedModel", "KilnRuntimeError"]


class KilnRuntimeError(RuntimeError):
    """A libkiln_runtime call failed; `status` is the kiln_status name."""

    def __init__(self, status: str, message: str):
        super().__init__(f"{status}: {message}")
        self.status = status


class _Tensor(ctypes.Structure):
    """kiln_tensor (DLPack's DLTensor layout)."""
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


_TORCH = {(2, 32): torch.float32, (2, 64): torch.float64, (2, 16): torch.float16,
          (4, 16): torch.bfloat16, (0, 64): torch.int64, (0, 32): torch.int32, (6, 8): torch.bool}
_CODES = {v: k for k, v in _TORCH.items()}
_lib = None
_lib_lock = threading.Lock()


def _library_path() -> str:
    env = os.environ.get("KILN_RUNTIME_LIB")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(os.path.dirname(here), "kiln", "libkiln_runtime.so")


def _library():
    global _lib
    with _lib_lock:
        if _lib is None:
            lib = ctypes.CDLL(_library_path())
            p, sz, st = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int
            sigs = {"kiln_last_error": ([], ctypes.c_char_p),
                    "kiln_status_name": ([st], ctypes.c_char_p),
                    "kiln_model_load": ([ctypes.c_char_p, ctypes.c_char_p,
                                         ctypes.POINTER(p)], st),
                    "kiln_model_free": ([p], None), "kiln_model_meta": ([p], ctypes.c_char_p),
                    "kiln_model_num_inputs": ([p], sz), "kiln_model_num_outputs": ([p], sz),
                    "kiln_model_output_info": ([p, sz, ctypes.POINTER(ctypes.c_char_p),
                                                ctypes.POINTER(_DType),
                                                ctypes.POINTER(ctypes.c_int32),
                                                ctypes.POINTER(ctypes.POINTER(ctypes.c_int64))],
                                               st),
                    "kiln_model_output_shape": ([p, ctypes.POINTER(_Tensor), sz, sz,
                                                 ctypes.POINTER(ctypes.c_int64)], st),
                    "kiln_model_run": ([p, ctypes.POINTER(_Tensor), sz,
                                        ctypes.POINTER(_Tensor), sz], st),
                    "kiln_model_run_async": ([p, ctypes.POINTER(_Tensor), sz,
                                              ctypes.POINTER(_Tensor), sz, p], st),
                    "kiln_set_num_threads": ([ctypes.c_int], None),
                    "kiln_set_cuda_libraries": ([ctypes.c_char_p, ctypes.c_char_p], None)}
            for name, (args, res) in sigs.items():
                f = getattr(lib, name)
                f.argtypes, f.restype = args, res
            lib.kiln_set_cuda_libraries(os.environ.get("KILN_CUDA_DRIVER", "").encode(),
                                        os.environ.get("KILN_CUBLASLT", "").encode())
            _lib = lib
    return _lib


class KilnIndexError(KilnRuntimeError, IndexError):
    """KILN_ERROR_INDEX: an index input was out of range (eager's IndexError)."""


def _check(status: int):
    if status != 0:
        lib = _library()
        name = lib.kiln_status_name(status).decode()
        error = KilnIndexError if name == "KILN_ERROR_INDEX" else KilnRuntimeError
        raise error(name, lib.kiln_last_error().decode())


class LoadedModel:
    """A loaded artifact: call it with the exported model's tensor inputs."""

    def __init__(self, path: str, device: str = "cpu"):
        lib = _library()
        handle = ctypes.c_void_p()
        _check(lib.kiln_model_load(os.fsencode(path), device.encode(), ctypes.byref(handle)))
        self._lib, self._handle, self.path, self.device = lib, handle, path, device
        meta = lib.kiln_model_meta(handle).decode()
        self.meta = dict(line.split(": ", 1) for line in meta.splitlines() if ": " in line)
        self._outputs = []
        for k in range(lib.kiln_model_num_outputs(handle)):
            dtype, ndim, dims = _DType(), ctypes.c_int32(), ctypes.POINTER(ctypes.c_int64)()
            _check(lib.kiln_model_output_info(handle, k, None, ctypes.byref(dtype),
                                              ctypes.byref(ndim), ctypes.byref(dims)))
            shape = [dims[d] for d in range(ndim.value)]
            static = shape if all(s >= 0 for s in shape) else None  # no symbolic dim
            self._outputs.append((_TORCH[(dtype.code, dtype.bits)], ndim.value, static))
        self.num_inputs = lib.kiln_model_num_inputs(handle)
        self._threads = None
        self._range = f"kiln::{os.path.basename(path)}"

    def __copy__(self):
        # One native model per load: a copy sharing the handle freed it twice.
        # The model holds no per-object state a copy could diverge in.
        return self

    def __deepcopy__(self, memo):
        return self

    def __del__(self):
        if getattr(self, "_handle", None):
            self._lib.kiln_model_free(self._handle)
            self._handle = None

    def __call__(self, *inputs):
        """Runs the model on `inputs` (CPU tensors, or CUDA tensors for a
        model loaded on "cuda"; non-contiguous ones are copied); returns
        fresh output tensors on the inputs' device. Inside torch.profiler the call
        is a ``kiln::<file name>`` range."""
        threads = torch.get_num_threads()  # BLAS and parallel loops follow torch's count
        if threads != self._threads:
            self._lib.kiln_set_num_threads(threads)
            self._threads = threads
        if torch._C._autograd._profiler_enabled():
            with torch.profiler.record_function(self._range):
                return self._run(inputs)
        return self._run(inputs)

    def _run(self, inputs):
        keep, views = [], (_Tensor * max(len(inputs), 1))()
        for i, t in enumerate(inputs):
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"kiln_runtime: input {i} is a {type(t).__name__}, not a tensor")
            t = t.detach()
            if not t.is_contiguous():
                t = t.contiguous()
            keep.append(t)
            views[i] = self._view(t, keep)
        # Outputs on the inputs' device (a CUDA model also takes CPU tensors).
        device = keep[0].device if keep else torch.device("cpu")
        outs, out_views = [], (_Tensor * max(len(self._outputs), 1))()
        for k, (dtype, ndim, static) in enumerate(self._outputs):
            if static is None:
                shape = (ctypes.c_int64 * max(ndim, 1))()
                _check(self._lib.kiln_model_output_shape(self._handle, views, len(inputs), k,
                                                         shape))
                static = list(shape[:ndim])
            outs.append(torch.empty(static, dtype=dtype, device=device))
            out_views[k] = self._view(outs[-1], keep)
        if device.type == "cuda":  # on torch's current stream, not waited for
            stream = torch.cuda.current_stream(device).cuda_stream
            _check(self._lib.kiln_model_run_async(self._handle, views, len(inputs), out_views,
                                                  len(outs), stream))
        else:
            _check(self._lib.kiln_model_run(self._handle, views, len(inputs), out_views,
                                            len(outs)))
        structure = self.meta.get("output-structure", "tensor")
        if structure == "tensor":
            return outs[0]
        return tuple(outs) if structure == "tuple" else outs

    @staticmethod
    def _view(t: torch.Tensor, keep) -> _Tensor:
        shape = (ctypes.c_int64 * max(t.dim(), 1))(*t.shape)
        keep.append(shape)
        code, bits = _CODES.get(t.dtype, (255, 0))
        device = 1 if t.device.type == "cpu" else 2 if t.device.type == "cuda" else 0
        return _Tensor(t.data_ptr(), device, t.device.index or 0, t.dim(), code, bits, 1, shape,
                       None, 0)


def load(path: str, device: str = "cpu") -> LoadedModel:
    """Loads the artifact at `path` (validated in full first; a damaged or
    incompatible file raises KilnRuntimeError)."""
    return LoadedModel(path, device)
