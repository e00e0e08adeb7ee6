# SPDX-License-Identifier: Apache-2.0
"""tools/bench.py (`make bench`) runs and writes its generated section.

A smoke test on the smallest configuration (one model, batch 1, one
thread, no torch.compile): the row is there with kiln's status "ok" and a
ratio, a model kiln cannot capture is reported as a graph break rather
than crashing the tool, and rewriting the document replaces the generated
section instead of appending a second one.
"""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "tools", "bench.py")
CAPTURE = os.path.join(ROOT, "tools", "bench_capture.py")


def run_bench(out, only):
    args = [sys.executable, BENCH, "--only", only, "--batches", "1", "--threads", "1",
            "--rounds", "3", "--round-ms", "2", "--no-inductor", "--no-cache-check",
            "--capture-repeats", "0",
            "--bandwidth-mib", "1", "--output", str(out)]
    r = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    return r.stdout


def test_bench_writes_the_generated_section(tmp_path):
    doc = tmp_path / "performance.md"
    doc.write_text("# kiln performance\n\nIntro.\n\n## Older section\n\nkept\n")
    run_bench(doc, "^MLP|GPT2Block")
    text = doc.read_text()
    assert text.count("<!-- BEGIN make bench") == 1 and text.count("<!-- END make bench") == 1
    assert text.index("Intro.") < text.index("<!-- BEGIN") < text.index("## Older section")
    mlp = next(ln for ln in text.splitlines() if ln.startswith("| MLP 256-512-512-10 | 1 |"))
    assert mlp.rstrip().endswith("| ok |") and "x |" in mlp, mlp
    gpt = next(ln for ln in text.splitlines() if ln.startswith("| transformers GPT2Block"))
    assert "| ok |" in gpt or "graph break: " in gpt or "error: " in gpt, gpt
    assert "Geomean over the" in text and "copy into a preallocated tensor" in text
    # The MLP's batch-1 call: eager holds its two 512-float hidden states
    # and the output; kiln reports a non-zero peak as well.
    mem = next(ln for ln in text.split("### Peak memory")[1].splitlines()
               if ln.startswith("| MLP 256-512-512-10 | 1 |"))
    cells = [c.strip() for c in mem.strip("|").split("|")]
    assert float(cells[2]) > 0 and float(cells[3]) > 0, mem
    run_bench(doc, "^MLP")
    again = doc.read_text()
    assert again.count("<!-- BEGIN make bench") == 1 and "kept" in again
    assert "GPT2Block" not in again


def test_capture_bench_reports_kiln_and_dynamo():
    """tools/bench_capture.py times both captures of one model and shows
    the graph/break counts next to them (1 graph, no break for the MLP)."""
    r = subprocess.run([sys.executable, CAPTURE, "--only", "MLP", "--repeats", "1"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    row = next(ln for ln in r.stdout.splitlines() if ln.startswith("| MLP 256-512-512-10 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert float(cells[1]) > 0 and cells[2] == "1 / 0", row
    assert float(cells[3]) > 0 and cells[4] == "1 / 0", row
    assert "Geomean over the 1 model kiln captured" in r.stdout


def test_demo_checks_and_times_a_row():
    """tools/demo.py (`make demo`): a row is checked against eager, its
    graphs/breaks/fallbacks/eager frames counted, timed; exit status 0."""
    demo = os.path.join(ROOT, "tools", "demo.py")
    r = subprocess.run([sys.executable, demo, "--only", "^MLP", "--rounds", "1",
                        "--round-s", "0.01"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    row = next(ln for ln in r.stdout.splitlines() if ln.startswith("MLP 256-512-512-10"))
    assert " ok " in row and " 1/0/0/0 " in row and row.rstrip().split()[-2].endswith("x"), row
    assert "geomean speedup over eager" in r.stdout
