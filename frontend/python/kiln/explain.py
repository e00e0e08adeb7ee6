# SPDX-License-Identifier: Apache-2.0
"""kiln.explain(fn)(*args): what kiln captures from one call of ``fn``.

Like torch._dynamo.explain, it starts from an empty cache (kiln.reset()),
runs ``fn`` once under kiln.compile with the graph, graph_breaks, guards and
recompiles log channels routed to a collector instead of stderr, and returns
an ExplainOutput: the graphs with their op counts and IR, each graph break
with its reason and source line, the ops that run through torch inside a
graph (per-op fallback), each graph's guards, and fn's result.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from kiln import _C
from kiln.api import compile as _compile, reset as _reset, stats as _stats
from kiln.config import config

_CHANNELS = frozenset({"graph", "graph_breaks", "guards", "recompiles", "fallbacks"})
_CAPTURED = re.compile(r"captured (?P<name>.+?) \((?P<ops>\d+) kiln ops\):\n(?P<ir>.*)", re.S)


@dataclass
class GraphInfo:
    """One captured graph: the frame it came from, its kiln op count, IR."""
    name: str
    op_count: int
    ir: str


@dataclass
class ExplainOutput:
    graphs: list[GraphInfo] = field(default_factory=list)
    graph_breaks: list[str] = field(default_factory=list)
    guards: list[str] = field(default_factory=list)
    recompiles: list[str] = field(default_factory=list)
    # Ops run through torch inside a graph (no kiln lowering yet).
    fallback_ops: list[str] = field(default_factory=list)
    stats: dict = field(default_factory=dict)
    out: object = None

    @property
    def graph_count(self) -> int:
        return len(self.graphs)

    @property
    def graph_break_count(self) -> int:
        return len(self.graph_breaks)

    @property
    def op_count(self) -> int:
        return sum(g.op_count for g in self.graphs)

    def __str__(self) -> str:
        lines = [f"Graph count: {self.graph_count}",
                 f"Graph break count: {self.graph_break_count}",
                 f"Op count: {self.op_count}"]
        lines += [f"  {g.name}: {g.op_count} kiln ops" for g in self.graphs]
        if self.graph_breaks:
            lines.append("Break reasons:")
            lines += [f"  {i + 1}. {b}" for i, b in enumerate(self.graph_breaks)]
        if self.fallback_ops:
            lines.append("Fallback ops (run through torch inside the graph):")
            lines += [f"  {f}" for f in self.fallback_ops]
        if self.recompiles:
            lines.append("Recompiles:")
            lines += [f"  {r}" for r in self.recompiles]
        if self.guards:
            lines.append("Guards:")
            lines += ["  " + g.replace("\n", "\n  ") for g in self.guards]
        return "\n".join(lines)


def explain(fn, **compile_options):
    """Returns a function that runs ``fn(*args, **kwargs)`` once through
    kiln (after kiln.reset()) and returns an ExplainOutput."""
    def run(*args, **kwargs) -> ExplainOutput:
        result = ExplainOutput()

        def collect(channel: str, message: str) -> None:
            if channel == "graph":
                m = _CAPTURED.match(message)
                if m:
                    result.graphs.append(GraphInfo(m["name"], int(m["ops"]), m["ir"]))
            elif channel == "graph_breaks":
                result.graph_breaks.append(message)
            elif channel == "guards":
                result.guards.append(message)
            elif channel == "recompiles":
                result.recompiles.append(message)
            elif channel == "fallbacks":
                result.fallback_ops.append(message)

        _reset()
        _C.set_log_sink(collect)
        try:
            with config.patch(logs=config.logs | _CHANNELS):
                result.out = _compile(fn, **compile_options)(*args, **kwargs)
        finally:
            _C.set_log_sink(None)
        result.stats = _stats()
        return result

    return run
