#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Capture coverage: kiln.compile vs torch.compile(backend="eager") on the
corpus of tools/capture_corpus (functions and modules in the styles of
real model code), each compared with eager.

Per system it reports the share of cases whose results match eager (an
exception matches when eager raises the same type), captured as whole
graphs (kiln: graphs >= 1, no graph break, no eager frame; Dynamo: graphs
>= 1, no graph break), where nothing was compiled, the wrong results by
name (a result that differs from eager's, or a result where eager raised),
the cases that raised where eager did not or crashed/hung the process, and
the graph breaks by category (kiln's BreakCategory; Dynamo's reasons
bucketed by keyword). Each system runs in subprocesses of --chunk cases
with a per-case timeout; a crash or hang costs one case, and the chunk is
restarted after it. Writes a markdown table (stdout, --markdown) and a
JSON file (--json).

    python tools/capture_coverage.py                 # both systems, every case
    python tools/capture_coverage.py --only kiln --theme hf,vision
    python tools/capture_coverage.py --cases hf.rotary_embedding -v
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "frontend", "python"))

# Dynamo's break reasons bucketed onto kiln's category names where they
# mean the same (first keyword found wins).
DYNAMO_BUCKETS = (
    ("data-dependent", ("data dependent", "data-dependent", "item()", "generic_jump",
                        "tensor.item", "dynamic shape operator", "unbacked", "nonzero")),
    ("random", ("random", "rand", "bernoulli", "dropout", "generator")),
    ("numpy", ("numpy", "ndarray")),
    ("side-effect", ("print", "logging", "warn", "mutation", "inplace", "side effect",
                     "global", "backward", "set_grad", ".grad")),
    ("user-object", ("userdefined", "user-defined", "user defined", "__new__", "dataclass",
                     "namedtuple", "__init__")),
    ("iteration", ("iter", "next", "generator", "zip", "itertools", "stopiteration")),
    ("unsupported-op", ("torch.*", "call_function", "unsupported method", "attempted to call")),
    ("user-error", ("exception", "raise", "assert")),
)


def dynamo_bucket(reason: str) -> str:
    low = reason.lower()
    for name, keys in DYNAMO_BUCKETS:
        if any(k in low for k in keys):
            return name
    return "other"


def _worker_main(args) -> None:
    from capture_corpus.worker import run
    run(args.cases.split(","), args.system, args.out)


def _read_events(path: str) -> tuple[dict, str | None]:
    """The finished records in `path` by name, and the case started last
    without a record (the one a crash or hang interrupted), if any."""
    done, started = {}, None
    if not os.path.exists(path):
        return done, None
    with open(path) as f:
        for line in f:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if "start" in event:
                started = event["start"]
            else:
                done[event["name"]] = event
                started = None
    return done, started


def _run_chunk(names: list[str], system: str, timeout: float, verbose: bool) -> list[dict]:
    """Runs `names` under `system` in subprocesses until each has a record;
    a case that crashes its process or passes `timeout` seconds gets a
    "crash"/"hang" record and the rest of the chunk is restarted."""
    records: dict[str, dict] = {}
    env = dict(os.environ, KILN_CACHE_DIR="off", PYTHONWARNINGS="ignore")
    todo = list(names)
    while todo:
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as tmp:
            path = tmp.name
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--system", system,
               "--cases", ",".join(todo), "--out", path]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        last_change, seen, status = time.monotonic(), 0, None
        while proc.poll() is None:
            time.sleep(0.2)
            size = os.path.getsize(path)
            if size != seen:
                seen, last_change = size, time.monotonic()
            elif time.monotonic() - last_change > timeout:
                proc.kill()
                status = "hang"
        stderr = proc.communicate()[1] or ""
        done, interrupted = _read_events(path)
        os.unlink(path)
        records.update(done)
        for name in done:
            if verbose:
                r = done[name]
                print(f"  {system:6} {r['status']:13} {name} {r.get('detail', '')[:120]}",
                      file=sys.stderr)
        if interrupted is None and proc.returncode == 0:
            break
        if interrupted is None:
            interrupted = next((n for n in todo if n not in records), None)
            if interrupted is None:
                break
        kind = status or "crash"
        records[interrupted] = {"name": interrupted, "theme": interrupted.split(".")[0],
                                "system": system, "status": kind, "whole_graph": False,
                                "graphs": 0, "breaks": 0,
                                "detail": f"{kind} (rc {proc.returncode}): {stderr[-300:]}"}
        if verbose:
            print(f"  {system:6} {kind:13} {interrupted}", file=sys.stderr)
        todo = [n for n in todo if n not in records]
    return [records[n] for n in names]


def summarize(records: list[dict]) -> dict:
    """Counts and lists for one system's records."""
    n = len(records)
    status = Counter(r["status"] for r in records)
    matches = status["match"]
    categories: Counter = Counter()
    for r in records:
        for b in r.get("break_records", []):
            categories[b["category"]] += 1
        for reason, count in r.get("reasons", {}).items():
            categories[dynamo_bucket(reason)] += count
    themes: dict = {}
    for r in records:
        whole, count = themes.get(r["theme"], (0, 0))
        themes[r["theme"]] = (whole + bool(r.get("whole_graph")), count + 1)
    return {
        "cases": n,
        "themes": themes,
        "matches": matches,
        "whole_graph": sum(1 for r in records if r.get("whole_graph")),
        "nothing_compiled": sum(1 for r in records if r.get("graphs", 0) == 0),
        "wrong": sorted(r["name"] for r in records if r["status"] == "wrong"),
        "raised": sorted(r["name"] for r in records
                         if r["status"] in ("raised", "error-differs", "crash", "hang")),
        "fallback_op_cases": sum(1 for r in records if r.get("fallback_ops", 0) > 0),
        "break_categories": dict(categories.most_common()),
        "status": dict(status),
    }


def _pct(k: int, n: int) -> str:
    return f"{100.0 * k / max(n, 1):.1f}% ({k})"


def _theme_table(summaries: dict) -> str:
    """Whole-graph share per theme and system."""
    systems = list(summaries)
    themes = list(summaries[systems[0]].get("themes", {}))
    if not themes:
        return ""
    text = "\n| whole graph by theme | " + " | ".join(systems) + " |\n|---|" + \
        "---|" * len(systems) + "\n"
    for t in themes:
        cells = []
        for s in systems:
            whole, n = summaries[s]["themes"][t]
            cells.append(_pct(whole, n))
        text += f"| {t} | " + " | ".join(cells) + " |\n"
    return text


def markdown(summaries: dict, meta: dict) -> str:
    systems = list(summaries)
    header = "| | " + " | ".join(systems) + " |\n|---|" + "---|" * len(systems) + "\n"
    rows = [("cases", lambda s: str(s["cases"])),
            ("matches eager", lambda s: _pct(s["matches"], s["cases"])),
            ("whole graph (no break, no eager frame)", lambda s: _pct(s["whole_graph"], s["cases"])),
            ("nothing compiled", lambda s: _pct(s["nothing_compiled"], s["cases"])),
            ("silently wrong results", lambda s: str(len(s["wrong"]))),
            ("raised where eager did not / crashed", lambda s: str(len(s["raised"]))),
            ("top break categories (break sites)", lambda s: ", ".join(
                f"{k} {v}" for k, v in list(s["break_categories"].items())[:6]) or "-")]
    text = f"Capture coverage on {meta['date']} at commit {meta['commit']} " \
           f"(torch {meta['torch']}, {meta['cases']} cases):\n\n" + header
    for label, fn in rows:
        text += f"| {label} | " + " | ".join(fn(summaries[s]) for s in systems) + " |\n"
    text += _theme_table(summaries)
    for s in systems:
        for key, title in (("wrong", "wrong results"), ("raised", "raised or crashed")):
            if summaries[s][key]:
                text += f"\n{s} {title}: " + ", ".join(summaries[s][key]) + "\n"
    return text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=("kiln", "dynamo"), help="run one system")
    ap.add_argument("--theme", default="", help="comma-separated themes")
    ap.add_argument("--cases", default="", help="comma-separated case names")
    ap.add_argument("--chunk", type=int, default=40, help="cases per subprocess")
    ap.add_argument("--timeout", type=float, default=120, help="seconds per case")
    ap.add_argument("--json", default="", help="write the records and summary here")
    ap.add_argument("--markdown", default="", help="write the table here")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--report", default="", help="only print the table of a --json file")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--system", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        _worker_main(args)
        return 0
    if args.report:
        with open(args.report) as f:
            data = json.load(f)
        summaries = {s: summarize(r) for s, r in data["records"].items()}
        print(markdown(summaries, data["meta"]))
        return 0
    from capture_corpus import all_cases
    names = [c.name for c in all_cases()
             if (not args.theme or c.theme in args.theme.split(","))
             and (not args.cases or c.name in args.cases.split(","))]
    systems = [args.only] if args.only else ["kiln", "dynamo"]
    meta = _meta(len(names))
    records = {}
    for system in systems:
        records[system] = []
        for i in range(0, len(names), args.chunk):
            records[system] += _run_chunk(names[i:i + args.chunk], system, args.timeout,
                                          args.verbose)
    summaries = {s: summarize(records[s]) for s in systems}
    table = markdown(summaries, meta)
    print(table)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "summary": summaries, "records": records}, f, indent=1)
    return 0


def _meta(cases: int) -> dict:
    import torch
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    return {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
            "commit": commit, "torch": torch.__version__, "cases": cases}


if __name__ == "__main__":
    sys.exit(main())
