#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What `make test-asan` does after its pytest run exited nonzero, from the
run's JUnit XML file and console log; prints one word:

  rerun   every failed test failed only because LeakSanitizer's
          stop-the-world tracer died in it (tools/sanitize.sh runs those
          tests again, twice at most)
  passed  no test failed: the nonzero exit was the tracer dying in pytest's
          own exit scan, after the session ended
  failed  anything else: a leak report, any other failure, or a nonzero
          exit nobody explains

    python3 tools/lsan_tracer_deaths.py BUILD/asan-junit.xml BUILD/asan-pytest.log

A child python's tracer death is already taken care of by the suite's
run_python (test/python/conftest.py interpreter_status); this covers the
rest (tests that start processes otherwise, the runner itself).
"""
import sys
import xml.etree.ElementTree as ET

# What a dying tracer prints; a leak report says "detected memory leaks".
MARKERS = ("Tracer caught signal", "LeakSanitizer has encountered a fatal error")
LEAK = "detected memory leaks"


def verdict(junit, log):
    failed = 0
    for case in ET.parse(junit).getroot().iter("testcase"):
        for bad in list(case.findall("failure")) + list(case.findall("error")):
            failed += 1
            text = (bad.get("message") or "") + (bad.text or "")
            if LEAK in text or not any(m in text for m in MARKERS):
                print(f"lsan_tracer_deaths: {case.get('classname')}::{case.get('name')} "
                      "failed for another reason", file=sys.stderr)
                return "failed"
    if failed:
        return "rerun"
    tail = open(log, errors="replace").read()[-4000:]
    if LEAK not in tail and all(m in tail for m in MARKERS):
        return "passed"
    return "failed"


if __name__ == "__main__":
    print(verdict(sys.argv[1], sys.argv[2]))
