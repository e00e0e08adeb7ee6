# SPDX-License-Identifier: Apache-2.0
"""A bounded mutation fuzzer for kiln's IR tools (kiln-opt, kiln-translate).

Takes the lit inputs under test/ as seeds, keeps the tool invocation of each
file's first RUN line (its passes and flags, without -verify-diagnostics),
mutates one `// -----` case of the file (integer and float literals,
element types, tensor shapes, attribute values and attribute types, deleted
attributes, swapped operands) and runs the tool on the result. Any input
may be rejected with a diagnostic; none may crash the tool: a signal
(SIGSEGV, SIGABRT), an "LLVM ERROR" / stack dump on stderr, or a run past
the per-input timeout fails the run. Each failing input is written to the
output folder with the command that reproduces it.

Deterministic for a given --seed and sequence of tool speeds (the time
budget bounds the number of inputs, not which ones come first):

    python tools/fuzz_ir.py --seconds 60 --seed 1 --out /tmp/fuzz
"""
from __future__ import annotations

import argparse
import os
import pathlib
import random
import re
import shlex
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]

# Values that break unchecked index arithmetic: signs, off-by-one, the
# int32/int64 edges and the dynamic-size sentinel's neighbours.
INTERESTING_INTS = [
    "-1", "0", "1", "2", "3", "-2", "7", "64", "-9", "2147483647", "2147483648",
    "-2147483648", "4294967296", "9223372036854775807", "-9223372036854775808",
    "9223372036854775806", "99999999999",
]
INTERESTING_FLOATS = ["0x7FC00000", "0x7F800000", "-0.0", "1.0e+308", "-1.0e-40", "0.0", "nan"]
ELEMENT_TYPES = [
    "f16", "bf16", "f32", "f64", "i1", "i8", "i16", "i32", "i64", "ui8", "si32", "index",
    "complex<f32>", "f8E4M3FN", "i4", "tf32", "vector<4xf32>", "none",
]
ATTR_TYPES = ["i64", "i32", "i1", "f32", "f64", "index", "ui64"]

INT_RE = re.compile(r"(?<![\w.%#@])-?\d+(?![\w.])")
FLOAT_RE = re.compile(r"-?\d+\.\d+(?:e[+-]?\d+)?")
ELT_RE = re.compile(r"\b(f16|bf16|f32|f64|i1|i8|i16|i32|i64)\b")
TENSOR_RE = re.compile(r"tensor<([0-9?x]*?)([a-z][\w<>]*)>")
ATTR_RE = re.compile(r"(\w+) = ([^,{}]+?)(?=[,}])")
ARRAY_RE = re.compile(r"array<i64(?::[^>]*)?>")
TYPED_ATTR_RE = re.compile(r": (i64|i32|f64|f32)\b(?=\s*[,}])")
SSA_RE = re.compile(r"%[\w.]+")


def _mutate_int(text: str, rng: random.Random) -> str:
    hits = list(INT_RE.finditer(text))
    if not hits:
        return text
    m = rng.choice(hits)
    value = rng.choice(INTERESTING_INTS + [str(int(m.group()) + rng.choice([-1, 1]))])
    return text[: m.start()] + value + text[m.end():]


def _mutate_float(text: str, rng: random.Random) -> str:
    hits = list(FLOAT_RE.finditer(text))
    if not hits:
        return _mutate_int(text, rng)
    m = rng.choice(hits)
    return text[: m.start()] + rng.choice(INTERESTING_FLOATS) + text[m.end():]


def _mutate_element_type(text: str, rng: random.Random) -> str:
    hits = list(ELT_RE.finditer(text))
    if not hits:
        return text
    m = rng.choice(hits)
    return text[: m.start()] + rng.choice(ELEMENT_TYPES) + text[m.end():]


def _mutate_shape(text: str, rng: random.Random) -> str:
    hits = list(TENSOR_RE.finditer(text))
    if not hits:
        return text
    m = rng.choice(hits)
    dims = [d for d in m.group(1).split("x") if d]
    action = rng.randrange(4)
    if action == 0 and dims:  # change one dim
        dims[rng.randrange(len(dims))] = rng.choice(["0", "1", "3", "?", "2147483648", "17"])
    elif action == 1 and dims:  # drop one dim
        del dims[rng.randrange(len(dims))]
    elif action == 2:  # add one dim
        dims.insert(rng.randrange(len(dims) + 1), rng.choice(["1", "2", "?", "0"]))
    else:  # all dims dynamic
        dims = ["?"] * len(dims)
    shape = "".join(d + "x" for d in dims)
    return text[: m.start()] + "tensor<" + shape + m.group(2) + ">" + text[m.end():]


def _mutate_attr(text: str, rng: random.Random) -> str:
    arrays = list(ARRAY_RE.finditer(text))
    typed = list(TYPED_ATTR_RE.finditer(text))
    attrs = list(ATTR_RE.finditer(text))
    action = rng.randrange(5)
    if action == 0 and arrays:  # new array contents
        m = rng.choice(arrays)
        n = rng.randrange(0, 6)
        vals = ", ".join(rng.choice(INTERESTING_INTS[:9]) for _ in range(n))
        new = f"array<i64: {vals}>" if n else "array<i64>"
        return text[: m.start()] + new + text[m.end():]
    if action == 1 and arrays:  # another array element type
        m = rng.choice(arrays)
        return text[: m.start()] + m.group().replace("i64", rng.choice(["i32", "i1", "f32"]), 1) \
            + text[m.end():]
    if action == 2 and typed:  # mistyped scalar attribute
        m = rng.choice(typed)
        return text[: m.start()] + ": " + rng.choice(ATTR_TYPES) + text[m.end():]
    if action == 3 and attrs:  # delete an attribute
        m = rng.choice(attrs)
        return text[: m.start()] + text[m.end():].lstrip(",")
    if attrs:  # replace an attribute value with another kind of value
        m = rng.choice(attrs)
        new = rng.choice(['"x"', "unit", "[1, 2]", "-1 : i64", "true", "array<i64: -1>",
                          "dense<1> : tensor<2xi64>", "1.5 : f32"])
        return text[: m.start(2)] + new + text[m.end(2):]
    return _mutate_int(text, rng)


def _swap_operands(text: str, rng: random.Random) -> str:
    names = sorted(set(SSA_RE.findall(text)))
    if len(names) < 2:
        return text
    a, b = rng.sample(names, 2)
    lines = text.splitlines(keepends=True)
    uses = [i for i, line in enumerate(lines) if a in line and "=" in line]
    if not uses:
        return text
    i = rng.choice(uses)
    head, eq, tail = lines[i].partition("=")
    lines[i] = head + eq + re.sub(re.escape(a) + r"\b", b, tail, count=1)
    return "".join(lines)


MUTATORS = [_mutate_int, _mutate_int, _mutate_float, _mutate_element_type, _mutate_shape,
            _mutate_shape, _mutate_attr, _mutate_attr, _mutate_attr, _swap_operands]


def _mutate(text: str, rng: random.Random) -> str:
    """One to three mutations, most of them confined to one op's line (so
    that the rest of the case still parses and the op's verifier and
    lowering see the odd value)."""
    lines = text.splitlines(keepends=True)
    ops = [i for i, line in enumerate(lines) if re.search(r"=\s*\"?[a-z_]+\.[a-z_]", line)]
    if ops and rng.random() < 0.7:
        i = rng.choice(ops)
        for _ in range(rng.choice([1, 1, 2])):
            lines[i] = rng.choice(MUTATORS)(lines[i], rng)
        return "".join(lines)
    for _ in range(rng.choice([1, 1, 2, 3])):
        text = rng.choice(MUTATORS)(text, rng)
    return text


def _run_line(path: pathlib.Path):
    """The first kiln-opt / kiln-translate command of the file's RUN lines,
    as (tool, args) with %s left in place; None when there is none."""
    joined, current = [], ""
    for line in path.read_text().splitlines():
        m = re.match(r"\s*//\s*RUN:(.*)", line)
        if not m:
            continue
        part = m.group(1).strip()
        if part.endswith("\\"):
            current += part[:-1] + " "
            continue
        joined.append(current + part)
        current = ""
    for cmd in joined:
        first = cmd.split("|")[0].strip()
        if first.startswith("not "):
            first = first[4:]
        words = shlex.split(first)
        if words and words[0] in ("kiln-opt", "kiln-translate") and "%s" in words:
            args = [w for w in words[1:] if w not in ("-verify-diagnostics", "--verify-diagnostics")
                    and not w.startswith(("2>", "-o"))]
            return words[0], args
    return None


def _strip_comments(text: str) -> str:
    """Drops `//` lines (CHECK lines would otherwise soak up mutations)."""
    return "".join(line for line in text.splitlines(keepends=True)
                   if not line.lstrip().startswith("//"))


def _seeds(test_root: pathlib.Path):
    """(file, tool, args, cases) for every lit input with a usable RUN line."""
    out = []
    for path in sorted(test_root.rglob("*.mlir")):
        run = _run_line(path)
        if run is None:
            continue
        text = path.read_text()
        split = "-split-input-file" in run[1] or "--split-input-file" in run[1]
        cases = text.split("// -----") if split else [text]
        args = [a for a in run[1] if a not in ("-split-input-file", "--split-input-file")]
        cases = [_strip_comments(c) for c in cases]
        out.append((path, run[0], args, [c for c in cases if "func" in c or "module" in c]))
    return [s for s in out if s[3]]


# Crashes inside MLIR 19 itself on inputs kiln never produces, told apart by
# a frame of the stack dump and a condition that places the bug upstream.
# They are counted and printed, not failed on: kiln cannot patch libMLIR.
KNOWN_UPSTREAM = [
    # linalg.transpose's verifier indexes the input shape with an unchecked
    # permutation entry; only while parsing a hand-written linalg op.
    ("mlir::linalg::TransposeOp::verify", lambda text, err: "parseSourceFile" in err),
    # linalg.generic's parser formats its error about a non-string
    # iterator_types entry from a dangling string.
    ("mlir::linalg::GenericOp::parse", lambda text, err: "parseSourceFile" in err
     or "iterator_types" in text),
    # `array<i1: 1, ...>` (integer literals for i1) parses into a malformed
    # DenseArrayAttr that crashes whoever prints it.
    ("printDenseArrayAttr", lambda text, err: re.search(r"array<i1:\s*-?\d", text) is not None),
]


def _known_upstream(text: str, err: str) -> str:
    for frame, applies in KNOWN_UPSTREAM:
        if frame in err and applies(text, err):
            return frame
    return ""


def _is_crash(proc) -> str:
    if proc.returncode < 0:
        return f"killed by signal {-proc.returncode}"
    err = proc.stderr
    for marker in ("LLVM ERROR", "Stack dump:", "PLEASE submit a bug report", "Assertion"):
        if marker in err:
            return f"stderr has {marker!r}"
    if proc.returncode not in (0, 1):
        return f"exit status {proc.returncode}"
    return ""


def fuzz(seconds: float, seed: int, bindir: pathlib.Path, out: pathlib.Path, timeout: float,
         max_cases: int) -> int:
    rng = random.Random(seed)
    seeds = _seeds(ROOT / "test")
    deadline = time.monotonic() + seconds
    out.mkdir(parents=True, exist_ok=True)
    runs = failures = known = 0
    with tempfile.TemporaryDirectory(prefix="kiln-fuzz-") as tmp:
        case_path = pathlib.Path(tmp) / "case.mlir"
        while time.monotonic() < deadline and runs < max_cases:
            path, tool, args, cases = rng.choice(seeds)
            text = _mutate(rng.choice(cases), rng)
            case_path.write_text(text)
            cmd = [str(bindir / tool)] + [str(case_path) if a == "%s" else a for a in args]
            runs += 1
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                                      errors="replace")
                why = _is_crash(proc)
                err = proc.stderr
            except subprocess.TimeoutExpired:
                why, err = f"no result within {timeout} s", ""
            if not why:
                continue
            upstream = _known_upstream(text, err)
            if upstream:
                known += 1
                print(f"[fuzz_ir] known MLIR 19 crash ({upstream}), not counted")
                continue
            failures += 1
            saved = out / f"crash-{failures}.mlir"
            saved.write_text(text)
            args_text = " ".join(shlex.quote(a) for a in cmd[1:]).replace(str(case_path), str(saved))
            print(f"[fuzz_ir] {why}: {tool} {args_text}  (seed file {path.relative_to(ROOT)})")
            print("\n".join(line for line in err.splitlines() if not line.startswith(" #"))[-800:],
                  flush=True)
    print(f"[fuzz_ir] {runs} inputs from {len(seeds)} seed files in {seconds:.0f} s, "
          f"seed {seed}: {failures} crashes ({known} known upstream)", flush=True)
    return 1 if failures else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="time budget")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bindir", type=pathlib.Path, default=ROOT / "build" / "bin",
                        help="folder with kiln-opt and kiln-translate")
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("fuzz-ir-crashes"),
                        help="where failing inputs are written")
    parser.add_argument("--timeout", type=float, default=20.0, help="per-input limit, seconds")
    parser.add_argument("--max-cases", type=int, default=10**9, help="stop after this many")
    a = parser.parse_args()
    return fuzz(a.seconds, a.seed, a.bindir, a.out, a.timeout, a.max_cases)


if __name__ == "__main__":
    sys.exit(main())
