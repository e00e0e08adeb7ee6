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


def _env_list(name: str) -> frozenset[str]:
    raw = os.environ.get(name, "")
    return frozenset(p.strip() for p in raw.split(",") if p.strip())


@dataclass
class _Config:
    # KILN_LOGS: comma-separated channels: graph, graph_breaks, recompiles,
    # guards, ir (IR after each pass is written to KILN_DEBUG_DIR, or to a
    # temporary folder whose path is logged). Not in cache key.
    logs: frozenset = field(default_factory=lambda: _env_list("KILN_LOGS"))
    # KILN_DEBUG_DIR: one folder per compilation with the IR after each pass
    # and the reproducing kiln-opt command. Not in cache key.
    debug_dir: str = os.environ.get("KILN_DEBUG_DIR", "")
    # KILN_RECOMPILE_LIMIT: compiled entries per code object before the frame
    # runs eagerly (with a warning naming the failing guard). Not in cache key.
    recompile_limit: int = int(os.environ.get("KILN_RECOMPILE_LIMIT", "8"))
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
    )


def __getattr__(name):
    return getattr(config, name)


patch = config.patch
