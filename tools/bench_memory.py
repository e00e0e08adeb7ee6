# SPDX-License-Identifier: Apache-2.0
"""Peak memory of one call, for tools/bench.py.

torch's CPU allocations (eager's intermediates and outputs, kiln's outputs)
are read from the profiler's memory events: the running sum of allocated
minus freed bytes over the call, its maximum is the peak. kiln's
intermediates come from kiln's buffer pool, outside torch's allocator; the
pool reports its blocks to the profiler too (frontend/csrc/PoolProfiler.h),
so they are on the same timeline and the peak is read off it. Where the
profiler hooks cannot be found (`kiln._C.intermediate_memory()["profiled"]`
false), kiln's figure is the sum of torch's peak and the pool's, an upper
bound.
"""
from __future__ import annotations

import os
import warnings

os.environ.setdefault("KINETO_LOG_LEVEL", "5")  # no "gpuGetDeviceCount failed" on CPU-only hosts

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

import kiln  # noqa: E402


def torch_peak_bytes(fn) -> int:
    """Most bytes torch's CPU allocator held at once during fn(), counted
    from zero at the start (memory allocated before the call is not in it)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            fn()
    events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    live = peak = 0
    for e in sorted(events, key=lambda e: e.start_ns()):
        live += e.nbytes()
        peak = max(peak, live)
    return peak


def call_peak_bytes(fn) -> int:
    """Peak bytes of one call of fn: torch's allocations plus kiln's
    intermediates (0 for an eager function)."""
    pool = kiln._C.intermediate_memory(reset_peak=True)
    torch_peak = torch_peak_bytes(fn)
    if pool["profiled"]:  # the pool's blocks are in the profiler's events
        return torch_peak
    return torch_peak + max(0, kiln._C.intermediate_memory()["peak"] - pool["live"])
