# SPDX-License-Identifier: Apache-2.0
"""Peak memory of one call, for tools/bench.py.

torch's CPU allocations (eager's intermediates and outputs, kiln's outputs)
are read from the profiler's memory events: the running sum of allocated
minus freed bytes over the call, its maximum is the peak. kiln's
intermediates are malloc'ed by the compiled code, outside torch: kiln's
buffer pool counts them (`kiln._C.intermediate_memory`). kiln's figure is
the sum of both peaks, an upper bound (they need not coincide).
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
    before = kiln._C.intermediate_memory(reset_peak=True)["live"]
    torch_peak = torch_peak_bytes(fn)
    return torch_peak + max(0, kiln._C.intermediate_memory()["peak"] - before)
