# SPDX-License-Identifier: Apache-2.0
"""Checks that keep the house clean; `make test` runs it (`make check-house`).

1. format: every tracked C/C++ file is clang-format clean (.clang-format:
   LLVM style, 100 columns). `make format` fixes it.
2. sizes: no source file over 800 lines and no C++ function over 150 lines,
   outside generated code. Files and functions that were over before the
   limits existed are listed in tools/house_debt.txt with their size then;
   they may only shrink (the check fails when one grows, and asks for the
   entry to be removed once it is under the limit).
3. environment: C++ below frontend/ (ir, transforms, codegen, registration,
   runtime, tools) reads no environment variable: configuration flows from
   kiln.config into typed options.
4. layout: every top-level source folder and each of its subfolders has a
   README.md saying what it holds and what it may depend on (tools/README.md
   covers the one-file tool folders; the Python package documents itself in
   docstrings).
5. lit: a `CHECK` directive without its colon (silently ignored by
   FileCheck).
6. statics: no function-local `static` in frontend/csrc initialized by a
   call or a lambda (its guard is a lock: Python run inside deadlocks
   against the GIL; use GilOnce.h), unless its line says `// no Python`.

Usage: python tools/check_house.py [--only NAME] [--list-debt]
Exit status 1 with one line per problem.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 150
CXX_SUFFIXES = (".cpp", ".h", ".c")
SOURCE_SUFFIXES = CXX_SUFFIXES + (".td", ".py")
SOURCE_FOLDERS = ("ir", "transforms", "codegen", "registration", "runtime", "frontend", "tools",
                  "cmake")
BELOW_FRONTEND = ("ir", "transforms", "codegen", "registration", "runtime", "tools")
DEBT_FILE = ROOT / "tools" / "house_debt.txt"


def tracked_files() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True,
                         capture_output=True).stdout.decode()
    return [ROOT / p for p in out.split("\0") if p and (ROOT / p).is_file()]


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def clang_format() -> str | None:
    for candidate in ("/usr/lib/llvm-19/bin/clang-format", "clang-format-19"):
        found = shutil.which(candidate) or (candidate if os.path.exists(candidate) else None)
        if found:
            return found
    return None


def check_format(files: list[Path]) -> list[str]:
    tool = clang_format()
    if tool is None:
        return ["format: clang-format-19 not found (tools/bootstrap.sh installs it)"]
    cxx = [str(f) for f in files if f.suffix in CXX_SUFFIXES]
    problems = []
    for start in range(0, len(cxx), 50):
        run = subprocess.run([tool, "--dry-run", "--Werror", *cxx[start:start + 50]],
                             cwd=ROOT, capture_output=True, text=True)
        for line in run.stderr.splitlines():
            m = re.match(r"(.+?):(\d+):\d+: (?:error|warning): code should be clang-formatted", line)
            if m:
                problems.append(f"format: {rel(Path(m.group(1)))}:{m.group(2)}: not clang-format "
                                "clean (run `make format`)")
    # One line per file is enough.
    seen, unique = set(), []
    for p in problems:
        key = p.split(":")[1]
        if key not in seen:
            seen.add(key)
            unique.append(p)
    return unique


_FUNCTION_START = re.compile(
    r"^(?P<indent>(?:  )?)(?!(?:namespace|class|struct|union|enum|extern|if|for|while|switch|do|"
    r"else|return|case|default|template|using|typedef)\b)[A-Za-z_~]")
_SIGNATURE = re.compile(
    r"^[A-Za-z_~][^;{}=]*\)\s*(?:const\s*)?(?:noexcept\s*)?(?:override\s*)?(?:->\s*[^{;]+)?"
    r"(?::[^;{}]*\))?\s*\{$")
_MAX_SIGNATURE_LINES = 10


def functions(path: Path) -> list[tuple[str, int, int]]:
    """(signature, first line, length) of each function defined at namespace
    or class scope in a clang-formatted C++ file. A signature may span lines
    (clang-format wraps long parameter lists and constructor initializers);
    the body ends at the closing brace at the signature's indentation."""
    lines = path.read_text(errors="replace").splitlines()
    found = []
    i = 0
    while i < len(lines):
        m = _FUNCTION_START.match(lines[i])
        if not m:
            i += 1
            continue
        indent = m.group("indent")
        end = i
        while (end < len(lines) - 1 and end - i < _MAX_SIGNATURE_LINES
               and not lines[end].rstrip().endswith(("{", ";", "}", "\\"))
               and lines[end + 1].strip() and not lines[end + 1].lstrip().startswith("#")):
            end += 1
        signature = " ".join(line.strip() for line in lines[i:end + 1])
        if not _SIGNATURE.match(signature):
            i += 1
            continue
        closing = indent + "}"
        j = end + 1
        while j < len(lines) and not (lines[j] == closing or lines[j].startswith(closing + " ")
                                      or lines[j].startswith(closing + ";")):
            j += 1
        found.append((signature, i + 1, j - i + 1))
        i = j + 1
    return found


def function_name(signature: str) -> str:
    """The qualified name in a joined signature ('Foo::bar' of
    '__attribute__((x)) int Foo::bar(int a) {')."""
    signature = re.sub(r"__attribute__\s*\(\(.*?\)\)", "", signature)
    return re.sub(r"\(.*", "", signature).split()[-1].lstrip("*&")


def size_report(files: list[Path]) -> dict[str, int]:
    """'path' -> lines for oversized files, 'path:function' -> lines for
    oversized functions."""
    report = {}
    for f in files:
        if f.suffix not in SOURCE_SUFFIXES:
            continue
        n = len(f.read_text(errors="replace").splitlines())
        if n > MAX_FILE_LINES:
            report[rel(f)] = n
        if f.suffix in (".cpp", ".c"):
            for signature, line, length in functions(f):
                if length > MAX_FUNCTION_LINES:
                    report[f"{rel(f)}:{function_name(signature)}"] = length
    return report


def read_debt() -> dict[str, int]:
    debt = {}
    if DEBT_FILE.exists():
        for line in DEBT_FILE.read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                key, n = line.rsplit(None, 1)
                debt[key] = int(n)
    return debt


def check_sizes(files: list[Path]) -> list[str]:
    debt = read_debt()
    problems = []
    for key, n in sorted(size_report(files).items()):
        limit = MAX_FUNCTION_LINES if ":" in key else MAX_FILE_LINES
        what = "function" if ":" in key else "file"
        if key not in debt:
            problems.append(f"sizes: {key}: {what} has {n} lines (limit {limit}); split it")
        elif n > debt[key]:
            problems.append(f"sizes: {key}: {what} grew to {n} lines (was {debt[key]}, limit "
                            f"{limit}); split it")
    current = size_report(files)
    for key in sorted(debt):
        if key not in current:
            problems.append(f"sizes: {key} is within the limits now: remove it from "
                            f"{rel(DEBT_FILE)}")
    return problems


def check_environment(files: list[Path]) -> list[str]:
    problems = []
    for f in files:
        if f.suffix not in CXX_SUFFIXES or rel(f).split("/")[0] not in BELOW_FRONTEND:
            continue
        for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
            if re.search(r"\b(std::)?(getenv|secure_getenv)\s*\(", line):
                problems.append(f"environment: {rel(f)}:{n}: C++ below frontend/ reads the "
                                "environment; pass a typed option from kiln.config instead")
    return problems


def check_layout(files: list[Path]) -> list[str]:
    folders = set()
    for f in files:
        parts = rel(f).split("/")
        if parts[0] in SOURCE_FOLDERS and len(parts) > 1:
            for depth in range(1, len(parts)):
                folder = "/".join(parts[:depth])
                # Source folders only (not data, caches or the Python package's subpackages).
                if any(x.startswith((".", "__")) for x in parts[:depth]):
                    continue
                folders.add(folder)
    problems = []
    for folder in sorted(folders):
        has_sources = any(p.suffix in SOURCE_SUFFIXES + (".txt",)
                          for p in (ROOT / folder).iterdir() if p.is_file())
        if has_sources and not (ROOT / folder / "README.md").exists() and \
                folder.count("/") <= 3 and not folder.startswith(("frontend/python/", "tools/")):
            problems.append(f"layout: {folder}/ has no README.md (what it holds, what it may "
                            "depend on)")
    return problems


def check_lit(files: list[Path]) -> list[str]:
    problems = []
    pattern = re.compile(r"//\s*(CHECK(?:-[A-Z]+)?)\s+(?!:)[^\s]")
    for f in files:
        if f.suffix != ".mlir":
            continue
        for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
            m = pattern.search(line)
            if m and not line.lstrip().startswith("// RUN"):
                problems.append(f"lit: {rel(f)}:{n}: '{m.group(1)}' without a colon is ignored")
    return problems


def check_statics(files: list[Path]) -> list[str]:
    problems = []
    pattern = re.compile(r"^\s+static\s+(?!constexpr\b|thread_local\b|PyOnce\b|GilOnce\b)"
                         r"[^;(]*?\s*=\s*(\[|[A-Za-z_][\w:<>]*\s*\(|$)")
    for f in files:
        if f.suffix not in CXX_SUFFIXES or not rel(f).startswith("frontend/csrc/"):
            continue
        for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
            if pattern.search(line) and "no Python" not in line:
                problems.append(f"statics: {rel(f)}:{n}: a function-local static initialized by "
                                "a call may run Python under its guard lock (deadlock against "
                                "the GIL): use GilOnce/PyOnce (frontend/csrc/GilOnce.h), or "
                                "mark a pure C++ initializer `// no Python`")
    return problems


CHECKS = {"format": check_format, "sizes": check_sizes, "environment": check_environment,
          "layout": check_layout, "lit": check_lit, "statics": check_statics}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(CHECKS))
    parser.add_argument("--list-debt", action="store_true",
                        help="print the current oversized files/functions in debt-file form")
    args = parser.parse_args()
    files = tracked_files()
    if args.list_debt:
        for key, n in sorted(size_report(files).items()):
            print(f"{key} {n}")
        return 0
    problems = []
    for name, check in CHECKS.items():
        if args.only in (None, name):
            problems += check(files)
    for p in problems:
        print(p)
    print(f"check_house: {len(problems)} problem(s)" if problems else "check_house: clean")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
