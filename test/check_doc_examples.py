# SPDX-License-Identifier: Apache-2.0
"""Checks that every ```mlir example block of an ODS file appears in a test.

Usage: check_doc_examples.py OPS.td TEST.mlir

Each non-empty line of each example block (leading/trailing spaces ignored)
must be a line of TEST.mlir, so the examples in the generated op reference
stay parseable (test/ir/ops.mlir parses them). Exits 1 listing what is missing.
"""
import re
import sys


def main(td_path, test_path):
    td = open(td_path, encoding="utf-8").read()
    test_lines = {line.strip() for line in open(test_path, encoding="utf-8")}
    blocks = re.findall(r"```mlir\n(.*?)```", td, re.S)
    if not blocks:
        print(f"{td_path}: no ```mlir example blocks found")
        return 1
    missing = [line.strip() for block in blocks for line in block.splitlines()
               if line.strip() and line.strip() not in test_lines]
    for line in missing:
        print(f"{test_path}: missing example line from {td_path}: {line}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
