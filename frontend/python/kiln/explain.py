# SPDX-License-Identifier: Apache-2.0
"""kiln.explain(fn)(*args): what kiln captures from one call of ``fn``.

Like torch._dynamo.explain, it starts from an empty cache (kiln.reset()),
runs ``fn`` once under kiln.compile with the graph, graph_breaks, guards and
recompiles log channels routed to a collector instead of stderr, and returns
an ExplainOutput: the graphs with their op counts and IR, each graph break
as a structured record (category, message with the underlying Python error,
the user's file:line, hint; see capture/breaks/GraphBreak.h), the ops that
run through torch inside a graph (per-op fallback), each graph's guards, and
fn's result.
"""
from __future__ import annotations

import re
from collections import Counter
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


@dataclass(frozen=True)
class GraphBreak:
    """One graph break: what kind of construct stopped the capture
    (``category``: unsupported-op, python-builtin, data-dependent,
    side-effect, random, dynamic-shape, user-error, ...), why (``message``,
    with the text of the Python exception behind it, if any), where in the
    user's code (``location``: "file:line", "" when unknown), what to do
    about it (``hint``, may be ""), the frame's function, and whether the
    rest of the frame resumed after it (else the whole frame ran eagerly).
    ``str()`` is the line KILN_LOGS=graph_breaks prints."""
    category: str
    message: str
    location: str
    hint: str
    function: str
    resumed: bool
    text: str

    def __str__(self) -> str:
        return self.text


@dataclass
class ExplainOutput:
    graphs: list[GraphInfo] = field(default_factory=list)
    # The graph breaks, in the order they happened.
    break_records: list[GraphBreak] = field(default_factory=list)
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
    def graph_breaks(self) -> list[str]:
        """Each break as its log line: "<category> at <file>:<line>: ..."."""
        return [str(b) for b in self.break_records]

    @property
    def graph_break_count(self) -> int:
        return len(self.break_records)

    def breaks_by_category(self) -> dict[str, list[GraphBreak]]:
        """The breaks grouped by category, the most frequent category first."""
        groups: dict[str, list[GraphBreak]] = {}
        for category, _ in self.break_counts().most_common():
            groups[category] = [b for b in self.break_records if b.category == category]
        return groups

    def break_counts(self) -> Counter:
        """How many breaks of each category."""
        return Counter(b.category for b in self.break_records)

    @property
    def op_count(self) -> int:
        return sum(g.op_count for g in self.graphs)

    def __str__(self) -> str:
        lines = [f"Graph count: {self.graph_count}",
                 f"Graph break count: {self.graph_break_count}",
                 f"Op count: {self.op_count}"]
        lines += [f"  {g.name}: {g.op_count} kiln ops" for g in self.graphs]
        if self.break_records:
            lines.append("Break reasons:")
            for category, breaks in self.breaks_by_category().items():
                lines.append(f"  {category} ({len(breaks)}):")
                for b in breaks:
                    where = f" at {b.location}" if b.location else ""
                    lines.append(f"    {b.function}{where}: {b.message}")
                    if b.hint:
                        lines.append(f"      hint: {b.hint}")
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
        # The same records the graph_breaks channel printed (collected, not printed here).
        result.break_records = [GraphBreak(**b) for b in _C.graph_breaks()]
        result.stats = _stats()
        return result

    return run
