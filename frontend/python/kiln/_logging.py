# SPDX-License-Identifier: Apache-2.0
"""Logging calls recorded in a graph (kiln.config.reorderable_logging_functions),
run after it by the side-effect replay (frontend/csrc/capture/interp/LoggingCalls.cpp)."""


def replay(packed):
    """Calls `fn(*args, **kwargs)` with the values the arguments had at the call."""
    fn, args, kwargs = packed
    fn(*args, **dict(kwargs))
