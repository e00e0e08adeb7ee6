# SPDX-License-Identifier: Apache-2.0
"""kiln's typed configuration, read once from the environment.

Every knob says whether it is part of the compile-cache key (``cache_key``):
knobs that change generated code must be. Use ``config.patch(name=value)`` in
tests to change a knob temporarily.
"""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field


_CACHE_OFF = ("", "off", "0", "none", "false")


def _default_cache_dir() -> str:
    """$KILN_CACHE_DIR; else $XDG_CACHE_HOME/kiln; else ~/.cache/kiln.
    "off", "0", "none", "false" or "" (set but empty) disable the cache."""
    raw = os.environ.get("KILN_CACHE_DIR")
    if raw is not None:
        return _cache_dir_or_empty(raw)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kiln")


def _cache_dir_or_empty(value) -> str:
    """The cache folder to use, or "" when `value` disables the cache."""
    value = os.fspath(value) if value else ""
    return "" if value.strip().lower() in _CACHE_OFF else os.path.abspath(value)


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    try:
        value = int(raw) if raw else default
    except ValueError:
        raise ValueError(f"{name} must be a whole number, got {raw!r}") from None
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return value


def _env_list(name: str) -> frozenset[str]:
    raw = os.environ.get(name, "")
    return frozenset(p.strip() for p in raw.split(",") if p.strip())


@dataclass
class _Config:
    # KILN_LOGS: comma-separated channels: graph, graph_breaks, recompiles,
    # fallbacks (ops run through torch inside a graph: no kiln lowering),
    # guards, ir (IR after each pass is written to KILN_DEBUG_DIR, or to a
    # temporary folder whose path is logged), cache (disk cache hits and
    # misses), dynamic (sizes made symbolic, symbolic sizes specialized and
    # why). Not in cache key.
    logs: frozenset = field(default_factory=lambda: _env_list("KILN_LOGS"))
    # KILN_DEBUG_DIR: one folder per compilation with the IR after each pass
    # and the reproducing kiln-opt command. Not in cache key.
    debug_dir: str = os.environ.get("KILN_DEBUG_DIR", "")
    # KILN_RECOMPILE_LIMIT: compiled entries per code object before the frame
    # runs eagerly (with a warning naming the failing guard). Not in cache key.
    recompile_limit: int = int(os.environ.get("KILN_RECOMPILE_LIMIT", "8"))
    # KILN_CACHE_DIR: on-disk compile cache folder (compiled object files
    # keyed by captured IR, pipeline, host CPU, LLVM version and kiln build),
    # shared by all processes; default $XDG_CACHE_HOME/kiln or ~/.cache/kiln;
    # "off" (or "" here) disables it. Not in cache key (it is the cache).
    cache_dir: str = field(default_factory=_default_cache_dir)
    # KILN_CACHE_MAX_MB: bound on the cache folder's total size in MiB; past
    # it the least recently used entries are deleted (0: unbounded). The
    # folder must be private to the user (not group/world-writable), else
    # kiln warns and runs without it. Not in cache key.
    cache_max_mb: int = field(default_factory=lambda: _env_int("KILN_CACHE_MAX_MB", 1024))
    # KILN_PARALLEL_LOOPS=0 compiles every loop serial; otherwise big loop
    # nests run on several threads when torch.get_num_threads() > 1 at compile
    # time. In cache key (the pipeline text records it).
    parallel_loops: bool = os.environ.get("KILN_PARALLEL_LOOPS", "1") != "0"
    # KILN_DNNL_CONVS=1/0: f32 convolutions run as oneDNN calls on
    # channels-last buffers (codegen/cpu/ConvsToDnnl.cpp) when kiln was
    # built with oneDNN, BatchNorm folded and ReLU/SiLU fused; off, they use
    # kiln's im2col + MKL / direct depthwise lowering (docs/performance.md,
    # "Real sizes"), except those whose im2col columns would be >= 1 MiB and
    # >= 8x their weight (resnet's stem and first stage), still oneDNN calls. None (unset): on exactly when freeze_weights is, since
    # oneDNN only wins with its weights packed once. In cache key (the
    # pipeline text records it).
    dnnl_convs: bool | None = (None if "KILN_DNNL_CONVS" not in os.environ
                               else os.environ["KILN_DNNL_CONVS"] != "0")
    # KILN_LAYOUT=0: no kiln-layout pass (transforms/Layout.cpp: in graphs
    # with convolutions, NHWC<->NCHW permutes sink and cancel and the
    # depthwise / tiling / 1x1 convolutions between channels-last values run
    # on NHWC; ConvNeXt's blocks stay channels-last). In cache key.
    layout: bool = os.environ.get("KILN_LAYOUT", "1") != "0"
    # KILN_DNNL_CONV_GRADS=0 turns it off: in compiled backwards, the input
    # and weight gradients of f32 convolutions run oneDNN's backward-data /
    # backward-weights primitives (runtime/cpu/DnnlConvBwd.cpp) when kiln
    # was built with oneDNN; off, kiln's own decomposition (a transposed
    # convolution, an im2col GEMM). In cache key (the pipeline text).
    dnnl_conv_grads: bool = os.environ.get("KILN_DNNL_CONV_GRADS", "1") != "0"
    # KILN_FREEZE_WEIGHTS=1 (opt-in, like torch.compile's
    # `torch._inductor.config.freezing`): oneDNN convolutions, and GEMMs
    # with an nn.Linear weight (x @ W^T, 2+ rows: runtime/cpu/PackedGemm.h),
    # pack their weights once per weight tensor and version (3x3 stride-1
    # convolutions then run oneDNN's Winograd kernels, whose weight
    # transform only pays once) (`t._version`: in-place
    # updates through torch bump it, a new tensor gets a new stamp), cached
    # until the tensor dies. Writes that bypass the version counter
    # (`p.data.mul_(...)`, numpy views of a weight) are NOT seen: the packed
    # copy goes stale. Off (default): weights are read on every call. Not in
    # cache key (a call-time choice): a graph compiled with it on (its
    # convolutions on oneDNN, see dnnl_convs) and called with it off
    # reorders every weight on every call (resnet50 at 2 threads: 106 vs 37
    # ms), so keep it on around the calls too.
    freeze_weights: bool = os.environ.get("KILN_FREEZE_WEIGHTS", "0") == "1"
    # KILN_PERF_JITDUMP=1: compiled code is announced to `perf` (jit-<pid>.dump
    # records for `perf inject --jit`). Not in cache key.
    perf_jitdump: bool = os.environ.get("KILN_PERF_JITDUMP", "0") == "1"
    # Functions (print, warnings.warn, logging.Logger.info, a logger's bound
    # .info ...) whose calls inside compiled code are replayed after the graph
    # with the arguments' values at the call instead of breaking it (Dynamo's
    # knob of the same name). Read at capture. Not in cache key.
    reorderable_logging_functions: set = field(default_factory=set)
    # KILN_COMPILED_BACKWARD=0: graphs that need gradients keep the eager
    # backward (the forward compiled, the backward recomputing the Python
    # function eagerly) instead of a compiled one (kiln-autodiff). Read at
    # compile (kiln.reset() applies it to compiled functions). Not in cache key.
    compiled_backward: bool = os.environ.get("KILN_COMPILED_BACKWARD", "1") != "0"
    # KILN_ACTIVATION_MEMORY_BUDGET (AOTAutograd's activation_memory_budget):
    # in [0, 1], how many bytes a graph compiled with its backward keeps from
    # its forward for the backward. 1 (default): kiln-autodiff's min-cut
    # partitioner saves GEMM/conv/reduction outputs and recomputes cheap
    # pointwise chains; 0: the fewest bytes, recomputing also GEMMs and
    # convolutions (never random ops) in the backward; in between,
    # expensive ops are recomputed, cheapest per byte first, until the saved
    # bytes fit (transforms/autodiff/Partition.h). Read at compile (kiln.reset()
    # applies it). Not in cache key (the compiled IR differs).
    activation_memory_budget: float = float(
        os.environ.get("KILN_ACTIVATION_MEMORY_BUDGET", "1.0"))
    # KILN_AUTOMATIC_DYNAMIC_NUMBERS=0 (Dynamo's `specialize_int = True`): with
    # kiln.compile's default dynamic=None, an int argument of a compiled
    # frame (not a global, attribute or bool) whose value changes between
    # calls stays a guarded constant, one graph per value, instead of
    # becoming a symbolic int in the next compilations (values >= 2; 0 and
    # 1 stay static). Read at the next recompile. Not in cache key.
    automatic_dynamic_numbers: bool = os.environ.get("KILN_AUTOMATIC_DYNAMIC_NUMBERS", "1") != "0"
    # KILN_DISABLE=1 turns kiln.compile into a no-op wrapper. Not in cache key.
    disable: bool = os.environ.get("KILN_DISABLE", "0") == "1"

    @contextlib.contextmanager
    def patch(self, **changes):
        """Temporarily sets knobs; restores them on exit."""
        old = {k: getattr(self, k) for k in changes}
        for k, v in changes.items():
            if not hasattr(self, k):
                raise AttributeError(f"kiln.config has no knob {k!r}")
            setattr(self, k, v)
        try:
            _push_to_native()
            yield self
        finally:
            for k, v in old.items():
                setattr(self, k, v)
            _push_to_native()


config = _Config()


def _push_to_native() -> None:
    from kiln import _C

    _C.set_options(
        logs=sorted(config.logs),
        debug_dir=config.debug_dir,
        recompile_limit=config.recompile_limit,
        cache_dir=_cache_dir_or_empty(config.cache_dir),
        parallel_loops=config.parallel_loops,
        perf_jitdump=config.perf_jitdump,
        cache_max_mb=max(0, int(config.cache_max_mb)),
        compiled_backward=bool(config.compiled_backward),
        dnnl_convs=(config.freeze_weights if config.dnnl_convs is None
                    else config.dnnl_convs),
        layout=bool(config.layout),
        dnnl_conv_grads=bool(config.dnnl_conv_grads),
        automatic_dynamic_numbers=bool(config.automatic_dynamic_numbers),
    )
    _C.set_freeze_weights(bool(config.freeze_weights))
    _C.set_activation_memory_budget(float(config.activation_memory_budget))


def __getattr__(name):
    return getattr(config, name)


patch = config.patch
