#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Exit 0 when every failed test in a pytest JUnit XML file failed only
because LeakSanitizer's stop-the-world tracer died (tools/sanitize.sh then
reruns those tests once); exit 1 when there is no failure or any other one.

    python3 tools/lsan_tracer_deaths.py BUILD/asan-junit.xml
"""
import sys
import xml.etree.ElementTree as ET

# What a dying tracer prints (in the failing test's subprocess output); a
# leak report says "detected memory leaks" instead and is a real failure.
MARKERS = ("Tracer caught signal", "LeakSanitizer has encountered a fatal error",
           "LeakSanitizer does not work under ptrace")


def main(path):
    failed = 0
    for case in ET.parse(path).getroot().iter("testcase"):
        for bad in list(case.findall("failure")) + list(case.findall("error")):
            failed += 1
            text = (bad.get("message") or "") + (bad.text or "")
            if "detected memory leaks" in text or not any(m in text for m in MARKERS):
                print(f"lsan_tracer_deaths: {case.get('classname')}::{case.get('name')} "
                      "failed for another reason")
                return 1
    return 0 if failed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
