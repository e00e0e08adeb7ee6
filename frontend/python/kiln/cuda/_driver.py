# SPDX-License-Identifier: Apache-2.0
"""ctypes binding of libkiln_cuda (runtime/cuda): kiln's CUDA runtime.

The library loads the CUDA driver with dlopen on first use; nothing here
runs at import. Without a driver every call raises ``CudaDriverError``
("CUDA driver not found: libcuda.so.1 (...)"). This module imports only
the standard library, so it also works where kiln's MLIR extension is not
built (tools/gpu-check.sh loads it on the GPU machine).
"""
from __future__ import annotations

import ctypes
import os

_ERR_CAP = 2048


class CudaDriverError(RuntimeError):
    """The CUDA driver is missing or a driver call failed (message says which)."""


def library_path() -> str:
    """$KILN_CUDA_RUNTIME, else libkiln_cuda.so next to this package's parent."""
    env = os.environ.get("KILN_CUDA_RUNTIME")
    if env:
        return env
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "libkiln_cuda.so")


_lib = None


def cublaslt_path() -> str:
    """The cuBLASLt library kiln's GEMMs use: $KILN_CUBLASLT, else the copy
    already loaded in this process (torch's, found in /proc/self/maps),
    else "" (the runtime tries libcublasLt.so.13/.12/.11)."""
    env = os.environ.get("KILN_CUBLASLT")
    if env:
        return env
    try:
        with open("/proc/self/maps", encoding="utf-8") as f:
            for line in f:
                path = line.rstrip().split(" ")[-1]
                if "/libcublasLt.so" in path:
                    return path
    except OSError:
        pass
    return ""


def _load():
    global _lib
    if _lib is not None:
        return _lib
    path = library_path()
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise CudaDriverError(f"kiln's CUDA runtime library is not available: {path} ({e}); "
                              "build it with `ninja -C build kiln_cuda`") from None
    vp, sz, i32, u32p = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.POINTER(ctypes.c_uint32)
    err = ctypes.c_char_p
    sig = {
        "kiln_cuda_init": [err, sz],
        "kiln_cuda_driver_version": [ctypes.POINTER(i32), err, sz],
        "kiln_cuda_device_count": [ctypes.POINTER(i32), err, sz],
        "kiln_cuda_device_attribute": [i32, i32, ctypes.POINTER(i32), err, sz],
        "kiln_cuda_module_load": [i32, ctypes.c_char_p, sz, ctypes.POINTER(vp), err, sz],
        "kiln_cuda_module_kernel": [vp, ctypes.c_char_p, ctypes.POINTER(vp), err, sz],
        "kiln_cuda_launch": [vp, u32p, vp, ctypes.POINTER(vp), i32, err, sz],
        "kiln_cuda_launch_many": [i32, ctypes.POINTER(vp), u32p, ctypes.POINTER(ctypes.c_int32),
                                  ctypes.POINTER(vp), vp, err, sz],
        "kiln_cuda_synchronize": [vp, err, sz],
        "kiln_cuda_gemm_describe": [i32, i32, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                                    ctypes.c_int64, i32, i32, i32, err, sz, err, sz],
        "kiln_cuda_plan_create": [vp, ctypes.c_char_p, ctypes.POINTER(vp),
                                  ctypes.POINTER(ctypes.c_int32), err, sz],
        "kiln_cuda_plan_run": [vp, ctypes.POINTER(vp), ctypes.POINTER(vp), vp, vp, err, sz],
        "kiln_cuda_plan_capture": [vp, ctypes.POINTER(vp), ctypes.POINTER(vp), vp,
                                   ctypes.POINTER(vp), err, sz],
        "kiln_cuda_graph_replay": [vp, i32, ctypes.POINTER(vp), ctypes.POINTER(vp),
                                   ctypes.POINTER(sz), vp, err, sz],
    }
    for name, argtypes in sig.items():
        f = getattr(lib, name)
        f.argtypes = argtypes
        f.restype = ctypes.c_int
    for name in ("kiln_cuda_module_unload", "kiln_cuda_plan_destroy", "kiln_cuda_graph_destroy"):
        getattr(lib, name).argtypes = [vp]
        getattr(lib, name).restype = None
    lib.kiln_cuda_set_cublaslt_library.argtypes = [ctypes.c_char_p]
    lib.kiln_cuda_set_cublaslt_library.restype = None
    lib.kiln_cuda_set_cublaslt_library(cublaslt_path().encode())
    # $KILN_CUDA_DRIVER: the driver library to dlopen instead of libcuda.so.1
    # (tests point it at a fake or a missing file). C++ reads no environment.
    lib.kiln_cuda_set_driver_library.argtypes = [ctypes.c_char_p]
    lib.kiln_cuda_set_driver_library.restype = None
    lib.kiln_cuda_set_driver_library(os.environ.get("KILN_CUDA_DRIVER", "").encode())
    _lib = lib
    return lib


def _call(name, *args):
    buf = ctypes.create_string_buffer(_ERR_CAP)
    lib = _load()
    if getattr(lib, name)(*args, buf, _ERR_CAP) != 0:
        raise CudaDriverError(buf.value.decode(errors="replace"))


def init() -> None:
    """Loads the driver (cuInit); raises CudaDriverError saying why it cannot."""
    _call("kiln_cuda_init")


def available() -> bool:
    """Whether the driver loads and initializes (never raises)."""
    try:
        init()
        return True
    except CudaDriverError:
        return False


def driver_version() -> int:
    v = ctypes.c_int()
    _call("kiln_cuda_driver_version", ctypes.byref(v))
    return v.value


def device_count() -> int:
    v = ctypes.c_int()
    _call("kiln_cuda_device_count", ctypes.byref(v))
    return v.value


def device_attribute(device: int, attr: int) -> int:
    v = ctypes.c_int()
    _call("kiln_cuda_device_attribute", device, attr, ctypes.byref(v))
    return v.value


def sm_count(device: int = 0) -> int:
    return device_attribute(device, 16)


def compute_capability(device: int = 0) -> tuple[int, int]:
    return device_attribute(device, 75), device_attribute(device, 76)


class Module:
    """A cubin/PTX image loaded on a device; kernels looked up by name."""

    def __init__(self, image: bytes, device: int = 0):
        self.device = device
        self._handle = None
        h = ctypes.c_void_p()
        _call("kiln_cuda_module_load", device, image, len(image), ctypes.byref(h))
        self._handle = h
        self._lib = _lib
        self._kernels = {}

    def kernel(self, name: str) -> ctypes.c_void_p:
        k = self._kernels.get(name)
        if k is None:
            k = ctypes.c_void_p()
            _call("kiln_cuda_module_kernel", self._handle, name.encode(), ctypes.byref(k))
            self._kernels[name] = k
        return k

    def launch(self, name: str, grid, block, ptrs, stream: int = 0, shared: int = 0) -> None:
        """Launches kernel `name`; `ptrs` are device pointers (ints)."""
        dims = (ctypes.c_uint32 * 7)(*_dims3(grid), *_dims3(block), shared)
        args = (ctypes.c_void_p * max(1, len(ptrs)))(*ptrs)
        _call("kiln_cuda_launch", self.kernel(name), dims, ctypes.c_void_p(stream), args,
              len(ptrs))

    def __del__(self):
        if self._handle is not None and self._lib is not None:
            self._lib.kiln_cuda_module_unload(self._handle)
            self._handle = None


class LaunchSequence:
    """Kernels of one module launched in order on one stream by one C call.
    The launch arrays are built once; each run fills in the pointers."""

    def __init__(self, module: Module, launches):
        """`launches`: (kernel name, grid, block, number of pointer args)."""
        self.module = module
        n = len(launches)
        self.n = n
        self.kernels = (ctypes.c_void_p * max(1, n))(*[module.kernel(l[0]) for l in launches])
        dims = []
        for _, grid, block, _nargs in launches:
            dims += [*_dims3(grid), *_dims3(block), 0]
        self.dims = (ctypes.c_uint32 * max(1, len(dims)))(*dims)
        self.counts = (ctypes.c_int32 * max(1, n))(*[l[3] for l in launches])
        self.total = sum(l[3] for l in launches)
        self._ptr_type = ctypes.c_void_p * max(1, self.total)

    def run(self, ptrs, stream: int = 0) -> None:
        if len(ptrs) != self.total:
            raise ValueError(f"expected {self.total} pointers, got {len(ptrs)}")
        _call("kiln_cuda_launch_many", self.n, self.kernels, self.dims, self.counts,
              self._ptr_type(*ptrs), ctypes.c_void_p(stream))


def gemm_call(in_type: int, out_type: int, batch: int, m: int, n: int, k: int,
              trans_b: bool, tf32: bool, epilogue: int) -> str:
    """The cuBLASLt call kiln makes for one row-major GEMM, as text
    (runtime/cuda/Cublaslt.h's lowering; no driver or GPU needed)."""
    out = ctypes.create_string_buffer(512)
    _call("kiln_cuda_gemm_describe", in_type, out_type, batch, m, n, k, int(trans_b), int(tf32),
          epilogue, out, 512)
    return out.value.decode()


class Plan:
    """A whole launch plan in libkiln_cuda (runtime/cuda/Plan.h): one C
    call runs every kernel and cuBLASLt GEMM of a function."""

    def __init__(self, module: Module, spec: str):
        h, counts = ctypes.c_void_p(), (ctypes.c_int32 * 2)()
        _call("kiln_cuda_plan_create", module._handle, spec.encode(), ctypes.byref(h), counts)
        self._handle, self._lib, self.module = h, _lib, module
        self.kernels, self.gemms = counts[0], counts[1]
        self._err = ctypes.create_string_buffer(_ERR_CAP)

    def run(self, inputs, outputs, arena: int, stream: int) -> None:
        """`inputs`/`outputs`: ctypes arrays of device pointers."""
        if self._lib.kiln_cuda_plan_run(self._handle, inputs, outputs, arena, stream, self._err,
                                        _ERR_CAP) != 0:
            raise CudaDriverError(self._err.value.decode(errors="replace"))

    def capture(self, inputs, outputs, arena: int) -> "CapturedPlan":
        h = ctypes.c_void_p()
        _call("kiln_cuda_plan_capture", self._handle, inputs, outputs, arena, ctypes.byref(h))
        return CapturedPlan(h, self)

    def __del__(self):
        if getattr(self, "_handle", None) is not None and self._lib is not None:
            self._lib.kiln_cuda_plan_destroy(self._handle)
            self._handle = None


class CapturedPlan:
    """A plan recorded into a CUDA graph (fixed addresses); replay copies
    the given inputs into its static buffers, then launches the graph."""

    def __init__(self, handle, plan: Plan):
        self._handle, self._lib, self.plan = handle, _lib, plan
        self._err = ctypes.create_string_buffer(_ERR_CAP)

    def replay(self, n: int, dst, src, sizes, stream: int) -> None:
        if self._lib.kiln_cuda_graph_replay(self._handle, n, dst, src, sizes, stream, self._err,
                                            _ERR_CAP) != 0:
            raise CudaDriverError(self._err.value.decode(errors="replace"))

    def __del__(self):
        if getattr(self, "_handle", None) is not None and self._lib is not None:
            self._lib.kiln_cuda_graph_destroy(self._handle)
            self._handle = None


def synchronize(stream: int = 0) -> None:
    _call("kiln_cuda_synchronize", ctypes.c_void_p(stream))


def _dims3(d):
    if isinstance(d, int):
        return (d, 1, 1)
    d = tuple(d) + (1, 1, 1)
    return d[:3]
