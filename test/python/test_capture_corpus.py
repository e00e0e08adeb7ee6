# SPDX-License-Identifier: Apache-2.0
"""A fixed sample of the capture-coverage corpus (tools/capture_corpus,
capture_corpus.SAMPLE: about three cases per theme, among them the cases
whose wrong results were fixed) run through kiln by
tools/capture_coverage.py: none may give a result that differs from
eager's, raise where eager does not, crash or hang, and the sample's cases
that are whole graphs today stay whole graphs. The tool runs the cases in
its own subprocess with a per-case timeout."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "capture_coverage.py")
sys.path.insert(0, os.path.join(ROOT, "tools"))

from capture_corpus import SAMPLE, all_cases  # noqa: E402

# Whole graphs on the landed main (graphs >= 1, no break, no eager frame).
WHOLE_GRAPH = {"hf.repeat_kv", "hf.greedy_next_token", "hf.invert_mask_min_value",
               "vision.window_partition", "vision.channel_shuffle", "training.mse_and_l1",
               "control.shape_arith_reshape", "mutation.iadd_input", "mutation.zero_input",
               "scalars.item_in_arithmetic", "scalars.int_float_bool_of_tensor",
               "scalars.numpy_roundtrip"}


def test_sample_names_exist():
    names = {c.name for c in all_cases()}
    assert len(names) >= 300
    assert set(SAMPLE) <= names and WHOLE_GRAPH <= set(SAMPLE)


def test_capture_corpus_sample_has_no_wrong_result(tmp_path):
    out = tmp_path / "coverage.json"
    r = subprocess.run([sys.executable, TOOL, "--only", "kiln", "--cases", ",".join(SAMPLE),
                        "--timeout", "60", "--json", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    data = json.loads(out.read_text())
    summary = data["summary"]["kiln"]
    records = {rec["name"]: rec for rec in data["records"]["kiln"]}
    assert summary["cases"] == len(SAMPLE)
    details = {n: records[n].get("detail", "") for n in summary["wrong"] + summary["raised"]}
    assert summary["wrong"] == [] and summary["raised"] == [], details
    assert summary["matches"] == len(SAMPLE)
    whole = {n for n, rec in records.items() if rec["whole_graph"]}
    assert WHOLE_GRAPH <= whole, WHOLE_GRAPH - whole
