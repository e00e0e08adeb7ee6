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
    }
    for name, argtypes in sig.items():
        f = getattr(lib, name)
        f.argtypes = argtypes
        f.restype = ctypes.c_int
    lib.kiln_cuda_module_unload.argtypes = [vp]
    lib.kiln_cuda_module_unload.restype = None
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


def synchronize(stream: int = 0) -> None:
    _call("kiln_cuda_synchronize", ctypes.c_void_p(stream))


def _dims3(d):
    if isinstance(d, int):
        return (d, 1, 1)
    d = tuple(d) + (1, 1, 1)
    return d[:3]
