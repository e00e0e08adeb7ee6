# SPDX-License-Identifier: Apache-2.0
"""Runs corpus cases in this process: eagerly, then through one system
(kiln.compile or torch.compile(backend="eager")) from a fresh state, and
returns one JSON-able record per case (tools/capture_coverage.py starts
this in a subprocess per chunk so that a crash or hang costs one case).

A record: name, theme, system, ``status`` (match | wrong | raised |
error-differs | eager-error), ``detail`` (the first difference), the
system's graph and break counts, whole-graph flag, break categories or
reasons, and the seconds the case took.
"""
from __future__ import annotations

import json
import time
import traceback
import warnings

import torch

from capture_corpus import SIZES, all_cases
from capture_corpus.compare import same, snapshot


def _calls(case, fn, target) -> list[tuple]:
    """Calls `fn` (`target` or its compiled form) at each size; per call
    ("ok", snapshot) or ("raise", type, message)."""
    out = []
    for n in SIZES:
        if case.before is not None:
            case.before(target, n)
        args, kwargs = case.args(n)
        torch.manual_seed(2000 + n)
        try:
            result = fn(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - the exception type is the result
            kinds = [t.__name__ for t in type(e).__mro__]
            out.append(("raise", kinds, f"{type(e).__name__}: {e}"[:300]))
            continue
        state = {}
        if isinstance(target, torch.nn.Module):
            state = dict(target.state_dict(keep_vars=False))
        extra = case.after() if case.after is not None else None
        out.append(("ok", snapshot((result, args, kwargs, state, extra))))
    return out


def _compare(case, eager: list, compiled: list) -> tuple[str, str]:
    """(status, detail) of the compiled calls against the eager ones."""
    for (ekind, *evalue), (ckind, *cvalue) in zip(eager, compiled):
        if ekind == "raise" and ckind == "raise":
            # The same type, or a subclass of it (an `except` of eager's
            # type catches it).
            if evalue[0][0] not in cvalue[0]:
                return "error-differs", f"raised {cvalue[0][0]} vs eager {evalue[0][0]}"
            continue
        if ekind == "raise":
            return "wrong", f"returned a result where eager raised {evalue[1]}"
        if ckind == "raise":
            return "raised", cvalue[1]
        labels = ("result", "args", "kwargs", "module state", "after")
        for label, e, c in zip(labels, evalue[0], cvalue[0]):
            diff = same(e, c, case.random, label)
            if diff:
                return "wrong", diff
    return "match", ""


def _kiln(case) -> tuple[list, dict]:
    import kiln
    from kiln import _C
    kiln.reset()
    target = case.make()
    calls = _calls(case, kiln.compile(target), target)
    s = kiln.stats()
    breaks = [{"category": b["category"], "message": b["message"][:200],
               "location": b["location"]} for b in _C.graph_breaks()]
    info = {"graphs": s["graphs_compiled"], "breaks": s["graph_breaks"],
            "eager_frames": s["eager_calls"], "fallback_ops": s["fallback_ops"],
            "recompiles": s["recompiles"], "break_records": breaks}
    info["whole_graph"] = (info["graphs"] >= 1 and info["breaks"] == 0
                           and info["eager_frames"] == 0)
    return calls, info


def _dynamo(case) -> tuple[list, dict]:
    import torch._dynamo
    from torch._dynamo.utils import counters
    torch._dynamo.reset()
    counters.clear()
    target = case.make()
    calls = _calls(case, torch.compile(target, backend="eager"), target)
    # torch 2.11 counts only some breaks under "graph_break": a data-dependent
    # branch, for one, appears under "unimplemented" and makes a resume
    # function (counters["resumes"]). A case is whole graph only when none of
    # the three saw anything and no frame was skipped.
    reasons = {str(k)[:300]: int(v) for k, v in counters["graph_break"].items()}
    for k, v in counters["unimplemented"].items():
        reasons.setdefault(str(k)[:300], int(v))
    resumes = sum(int(v) for v in counters["resumes"].values())
    frames = counters["frames"]
    skipped = int(frames.get("total", 0)) - int(frames.get("ok", 0))
    graphs = int(counters["stats"]["unique_graphs"])
    info = {"graphs": graphs, "breaks": max(sum(reasons.values()), resumes), "reasons": reasons,
            "recompiles": max(0, graphs - 1), "eager_frames": skipped}
    info["whole_graph"] = graphs >= 1 and info["breaks"] == 0 and skipped == 0
    return calls, info


SYSTEMS = {"kiln": _kiln, "dynamo": _dynamo}


def run_case(case, system: str) -> dict:
    """The record of `case` under `system` (see the module docstring)."""
    t0 = time.perf_counter()
    record = {"name": case.name, "theme": case.theme, "system": system}
    target = case.make()
    eager = _calls(case, target, target)
    if all(kind == "raise" for kind, *_ in eager):
        record["eager_raises"] = True
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            calls, info = SYSTEMS[system](case)
        record.update(info)
        record["status"], record["detail"] = _compare(case, eager, calls)
    except Exception:  # noqa: BLE001 - a failure of the harness itself
        record["status"], record["detail"] = "raised", traceback.format_exc()[-600:]
        record["whole_graph"] = False
    record["seconds"] = round(time.perf_counter() - t0, 3)
    return record


def run(names: list[str], system: str, out_path: str) -> None:
    """Runs `names` under `system`, appending one JSON line per event to
    out_path: {"start": name} before a case, its record after it."""
    cases = {c.name: c for c in all_cases()}
    torch.set_num_threads(1)
    with open(out_path, "a") as out:
        for name in names:
            out.write(json.dumps({"start": name}) + "\n")
            out.flush()
            record = run_case(cases[name], system)
            out.write(json.dumps(record, default=str) + "\n")
            out.flush()
