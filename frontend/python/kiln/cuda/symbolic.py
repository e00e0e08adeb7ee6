# SPDX-License-Identifier: Apache-2.0
"""Plans with dynamic dims: binding the symbols of one call.

A function whose arguments have dynamic (``?``) dims is emitted once with
symbols ``s<k>`` (codegen/cuda/CudaSymbolic.cpp): ``symbols`` lists the
(argument, dim) each comes from, ``constraints`` and ``bounds`` the sizes
that must be equal or not exceed others, buffers carry ``dims`` (text: a
number or a polynomial such as ``s0 * s1 * 4`` or ``s0 + 1``), kernels over symbolic sizes take the
symbols as trailing ``long long`` parameters and carry ``work`` (the
pointwise loop's trip count, or the number of rows) and ``row_length``
instead of a grid, GEMM steps (externs) carry ``dims`` (their batch, m, n
and k as text). ``specialize`` evaluates all of that for one call's
symbol values and returns a static plan (the same schema as a static
function's, kernels with ``scalars``: the values passed after the buffers)
that every executor runs unchanged; the source (and so the cubin) stays
the same for every size. The launch rules mirror codegen/cuda's
``pointwiseGridSize`` / ``reductionBlockSize`` (README, "Launch
configuration"). Imports only the standard library.
"""
from __future__ import annotations

import ast
import operator

POINTWISE_BLOCK = 256
MAX_POINTWISE_GRID = 4096
MAX_GRID = 65535
ITEMSIZE = {"float": 4, "__half": 2, "__nv_bfloat16": 2, "double": 8, "bool": 1,
            "signed char": 1, "short": 2, "int": 4, "long long": 8, "__nv_fp8_e4m3": 1}


_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}


def evaluate(expr, values) -> int:
    """The value of a dim (an int, or text like ``s0 * s1 * 4`` or
    ``s0 + 1``: a polynomial in the symbols, as codegen/cuda prints it)."""
    if isinstance(expr, int):
        return expr

    def walk(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name) and node.id[:1] == "s" and node.id[1:].isdigit():
            return values[int(node.id[1:])]
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](walk(node.left), walk(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -walk(node.operand)
        raise ValueError(f"kiln.cuda: not a size expression: {expr!r}")
    return walk(ast.parse(str(expr), mode="eval").body)


def pointwise_grid(work: int) -> int:
    return max(1, min((work + POINTWISE_BLOCK - 1) // POINTWISE_BLOCK, MAX_POINTWISE_GRID))


def reduction_block(row_length: int) -> int:
    want, threads = (row_length + 3) // 4, 32
    while threads < want and threads < 1024:
        threads *= 2
    return threads


def bind(fn: dict, shapes) -> tuple:
    """The symbol values of a call with inputs of these shapes; ValueError
    when the plan's size constraints do not hold."""
    values = tuple(int(shapes[arg][dim]) for arg, dim in fn["symbols"])
    for a, b in fn.get("constraints", ()):
        if evaluate(a, values) != evaluate(b, values):
            names = {f"s{k}": f"input {arg} dim {dim}" for k, (arg, dim) in enumerate(fn["symbols"])}
            raise ValueError(f"kiln.cuda: {fn['name']}: sizes {a} and {b} must be equal "
                             f"(symbols: {names}; values {values})")
    for a, b in fn.get("bounds", ()):
        if evaluate(a, values) > evaluate(b, values):
            names = {f"s{k}": f"input {arg} dim {dim}" for k, (arg, dim) in enumerate(fn["symbols"])}
            raise ValueError(f"kiln.cuda: {fn['name']}: a slice ends at {a}, past the size {b} "
                             f"(symbols: {names}; values {values})")
    return values


def specialize(emitted: dict, function: str, values: tuple) -> dict:
    """`emitted` with `function`'s plan evaluated for `values` (static)."""
    fn = next(f for f in emitted["functions"] if f["name"] == function)
    buffers = []
    for b in emitted["buffers"]:
        if b["function"] == function and "dims" in b:
            b = dict(b)
            b["shape"] = [evaluate(d, values) for d in b.pop("dims")]
            numel = 1
            for d in b["shape"]:
                numel *= d
            b["bytes"] = numel * ITEMSIZE[b["type"]]
        buffers.append(b)
    kernels = []
    for k in emitted["kernels"]:
        if k["function"] == function and k.get("symbols"):
            k = dict(k)
            work = evaluate(k.pop("work"), values)
            if "row_length" in k:
                k["grid"] = max(1, min(work, MAX_GRID))
                k["block"] = reduction_block(evaluate(k.pop("row_length"), values))
            else:
                k["grid"], k["block"] = pointwise_grid(work), POINTWISE_BLOCK
            k["scalars"] = list(values[:k.pop("symbols")])
        kernels.append(k)
    externs = []
    for e in emitted["externs"]:
        if e["function"] == function and "dims" in e:
            e = dict(e)
            e.update({key: evaluate(d, values) for key, d in e.pop("dims").items()})
        externs.append(e)
    fn = dict(fn)
    fn["result_shapes"] = [[evaluate(d, values) for d in dims]
                           for dims in fn.pop("result_dims", fn["result_shapes"])]
    fn["symbols"], fn["constraints"], fn["bounds"] = [], [], []
    functions = [fn if f["name"] == function else f for f in emitted["functions"]]
    return dict(emitted, buffers=buffers, kernels=kernels, externs=externs, functions=functions)
