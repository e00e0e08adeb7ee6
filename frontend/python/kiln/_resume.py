# SPDX-License-Identifier: Apache-2.0
"""Graph breaks that keep going: the code objects around one break.

When kiln's capture stops at an unsupported instruction of a frame, the
frame hook (frontend/csrc/hook/CompileDriver.cpp) compiles the graph up to it, and then
calls, with the graph's outputs (the interpreter stack and live locals):

* the *stub*: pushes the stack, runs exactly the unsupported instruction(s)
  (with their original source line, so tracebacks point at user code), and
  returns `resume(...)` for the way control left it (a conditional jump on a
  tensor has two exits, each with its own resume function);
* a *resume function*: the original code with a prologue that stores its
  arguments into the locals and cells, pushes the stack and jumps to the
  instruction after the break. It is an ordinary frame, captured by the hook
  like any other (cached per code object), so the rest of the function is
  compiled again, up to the next break;
* the *prefix* function (for autograd only): the original code returning the
  stack and locals at the break, run eagerly to recompute the graph's
  outputs in the backward.

Code objects are cached per (code, offset, layout), so a break generates its
code once. Python 3.11 (3.12 differences behind `_bytecode.PY312`).
"""
from __future__ import annotations

import dis
import inspect
import types

from kiln import _bytecode as B
from kiln._bytecode import Instr

_PREFIX = "___kiln_"
_GEN = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
_POP2 = {"BINARY_OP", "COMPARE_OP", "BINARY_SUBSCR", "IS_OP", "CONTAINS_OP"}
_UNARY = {"UNARY_NEGATIVE", "UNARY_NOT", "UNARY_INVERT", "UNARY_POSITIVE", "LOAD_ATTR"}
_STORES = {"STORE_ATTR": 2, "STORE_SUBSCR": 3, "DELETE_SUBSCR": 2, "DELETE_ATTR": 1,
           "STORE_GLOBAL": 1}
_cache: dict = {}


def _effect(ins: Instr):
    """(items popped, items pushed) by an instruction that may end a graph,
    or None when kiln cannot resume after it."""
    op, arg = ins.opname, ins.arg
    if op == "CALL":
        return arg + 2, 1
    if op == "CALL_FUNCTION_EX":
        return 3 + (arg & 1), 1
    if op.startswith("POP_JUMP"):
        return 1, 0
    if op in _POP2:
        return 2, 1
    if op in _UNARY and not (op == "LOAD_ATTR" and B.PY312 and arg & 1):
        return 1, 1
    if op in _STORES:
        return _STORES[op], 0
    if op == "FORMAT_VALUE":
        return 1 + bool(arg & 4), 1
    if op == "BUILD_STRING":
        return arg, 1
    if op == "UNPACK_SEQUENCE":
        return 1, arg
    if op == "RAISE_VARARGS":
        return arg, 0
    return None


def _find(bc: B.Bytecode, offset: int) -> int:
    for k, ins in enumerate(bc.instrs):
        if ins.offset == offset:
            return k
    raise ValueError(f"no instruction at offset {offset}")


def plan(code: types.CodeType, fail_offset: int) -> int:
    """The offset where the instructions run eagerly for a break at
    `fail_offset` start (a CALL's PRECALL/KW_NAMES come with it); raises
    NotImplementedError with the reason when kiln cannot resume there."""
    if code.co_flags & _GEN:
        raise NotImplementedError("the break is inside a generator or coroutine")
    bc = B.disassemble(code)
    k = _find(bc, fail_offset)
    ins = bc.instrs[k]
    if _effect(ins) is None:
        raise NotImplementedError(f"cannot resume after {ins.opname}")
    index = {id(i): j for j, i in enumerate(bc.instrs)}
    for e in bc.exc:
        if index[id(e.start)] <= k <= index[id(e.end)]:
            raise NotImplementedError("the break is inside a try/with block")
    start = k
    if ins.opname == "CALL":
        for prev in ("PRECALL", "KW_NAMES"):
            if start > 0 and bc.instrs[start - 1].opname == prev:
                start -= 1
    return bc.instrs[start].offset


def _exits(bc, k: int, layout: str):
    """[(target Instr or None for fall-through, layout after)] of the
    instruction at k whose stack before is `layout`."""
    ins = bc.instrs[k]
    pops, pushes = _effect(ins)
    if pops > len(layout):
        raise NotImplementedError("stack shallower than the instruction needs")
    after = layout[:len(layout) - pops] + "i" * pushes
    out = []
    if ins.opname not in B.NO_FALLTHROUGH:
        out.append((bc.instrs[k + 1], after))
    if ins.is_jump():
        out.append((ins.target, after))
    return out


def _call(n: int, pos) -> list:
    ops = [] if B.PY312 else [Instr("PRECALL", n, positions=pos)]
    return ops + [Instr("CALL", n, positions=pos)]


def resume_code(code, target_offset: int, layout: str, local_names: tuple,
                cell_names: tuple) -> types.CodeType:
    """`code` entered at `target_offset` with its stack (`layout`: 'n' a
    NULL, 'i' an argument) and the named locals and cells as arguments."""
    key = ("resume", code, target_offset, layout, local_names, cell_names)
    if key in _cache:
        return _cache[key]
    bc = B.disassemble(code)
    target = bc.instrs[_find(bc, target_offset)]
    body = bc.instrs
    first = next(k for k, i in enumerate(body) if i.opname == "RESUME")
    body = body[first + 1:]
    stack_args = [f"{_PREFIX}s{k}" for k, c in enumerate(layout) if c == "i"]
    cell_args = [f"{_PREFIX}cell_{c}" for c in cell_names]
    args = stack_args + list(local_names) + cell_args
    varnames = args + [v for v in code.co_varnames if v not in args]
    pro = []
    if code.co_freevars:
        pro.append(Instr("COPY_FREE_VARS", len(code.co_freevars)))
    pro += [Instr("MAKE_CELL", name=c) for c in code.co_cellvars]
    pro.append(Instr("RESUME", 0))
    for c, a in zip(cell_names, cell_args):
        pro += [Instr("LOAD_FAST", name=a), Instr("STORE_DEREF", name=c)]
    it = iter(stack_args)
    for c in layout:
        pro.append(Instr("PUSH_NULL") if c == "n" else Instr("LOAD_FAST", name=next(it)))
    pro.append(Instr("JUMP_FORWARD", target=target))
    line = (target.positions or (None,))[0]
    flags = code.co_flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
    new = B.assemble(B.Bytecode(pro + body, bc.exc), code, co_varnames=tuple(varnames),
                     co_argcount=len(args), co_posonlyargcount=0, co_kwonlyargcount=0,
                     co_nlocals=len(varnames), co_flags=flags,
                     co_qualname=f"{code.co_qualname}.resume_at_{line}")
    _cache[key] = new
    return new


def stub_code(code, start_offset: int, fail_offset: int, layout: str, local_names: tuple,
              cell_names: tuple):
    """(stub code, resume codes) for the break at `fail_offset`; the stub
    takes (resume0, resume1, stack items..., locals..., cells...)."""
    bc = B.disassemble(code)
    s, k = _find(bc, start_offset), _find(bc, fail_offset)
    exits = _exits(bc, k, layout)
    stack_args = [f"{_PREFIX}s{j}" for j, c in enumerate(layout) if c == "i"]
    cell_args = [f"{_PREFIX}cell_{c}" for c in cell_names]
    args = [f"{_PREFIX}resume0", f"{_PREFIX}resume1"] + stack_args + list(local_names) + cell_args
    pos = bc.instrs[k].positions
    body = [Instr("RESUME", 0, positions=pos)]
    it = iter(stack_args)
    for c in layout:
        body.append(Instr("PUSH_NULL", positions=pos) if c == "n"
                    else Instr("LOAD_FAST", name=next(it), positions=pos))
    group = [Instr(i.opname, i.arg, positions=i.positions) for i in bc.instrs[s:k + 1]]
    body += group
    temps = set()
    resumes = []
    exit_blocks = []
    for n, (target, after) in enumerate(exits):
        block = []
        # A result discarded at once (a statement call like `print(...)`) is
        # popped here: passing it on would specialize the resume function on it.
        t = bc.instrs.index(target)
        if target.opname == "POP_TOP" and after.endswith("i") and t + 1 < len(bc.instrs):
            block.append(Instr("POP_TOP", positions=pos))
            after, target = after[:-1], bc.instrs[t + 1]
        resumes.append(resume_code(code, target.offset, after, local_names, cell_names))
        for j in range(len(after) - 1, -1, -1):
            temps.add(f"{_PREFIX}t{j}")
            block.append(Instr("STORE_FAST", name=f"{_PREFIX}t{j}", positions=pos))
        block += [Instr("PUSH_NULL", positions=pos),
                  Instr("LOAD_FAST", name=f"{_PREFIX}resume{n}", positions=pos)]
        loads = [f"{_PREFIX}t{j}" for j, c in enumerate(after) if c == "i"]
        loads += list(local_names) + cell_args
        block += [Instr("LOAD_FAST", name=a, positions=pos) for a in loads]
        block += _call(len(loads), pos) + [Instr("RETURN_VALUE", positions=pos)]
        exit_blocks.append(block)
    jump = group[-1]
    if jump.is_jump():  # its exit is the last block, after it
        jump.opname = jump.opname.replace("BACKWARD", "FORWARD")
        jump.target = exit_blocks[-1][0]
    for block in exit_blocks:
        body += block
    varnames = tuple(args) + tuple(sorted(temps))
    new = B.assemble(B.Bytecode(body, []), code, co_varnames=varnames, co_argcount=len(args),
                     co_posonlyargcount=0, co_kwonlyargcount=0, co_nlocals=len(varnames),
                     co_cellvars=(), co_freevars=(),
                     co_flags=inspect.CO_OPTIMIZED | inspect.CO_NEWLOCALS,
                     co_qualname=f"{code.co_qualname}.graph_break")
    return new, tuple(resumes)


def prefix_code(code, start_offset: int, layout: str, local_names: tuple, cell_names: tuple,
                needed: tuple) -> types.CodeType:
    """`code` returning, at `start_offset`, the tuple (stack items, locals,
    cells) of the break; items not in `needed` are None."""
    bc = B.disassemble(code)
    s = _find(bc, start_offset)
    start = bc.instrs[s]
    consts = code.co_consts if None in code.co_consts else code.co_consts + (None,)
    none = consts.index(None)
    epi = [Instr("STORE_FAST", name=f"{_PREFIX}p{j}") for j in range(len(layout) - 1, -1, -1)]
    loads = [("LOAD_FAST", f"{_PREFIX}p{j}") for j, c in enumerate(layout) if c == "i"]
    loads += [("LOAD_FAST", n) for n in local_names] + [("LOAD_DEREF", c) for c in cell_names]
    for n, (op, name) in enumerate(loads):
        epi.append(Instr(op, name=name) if n in needed else Instr("LOAD_CONST", none))
    epi += [Instr("BUILD_TUPLE", len(loads)), Instr("RETURN_VALUE")]
    for e in epi:
        e.positions = start.positions
    for ins in bc.instrs:
        if ins.target is start:
            ins.target = epi[0]
    bc.instrs[s:s] = epi
    temps = tuple(f"{_PREFIX}p{j}" for j in range(len(layout)))
    varnames = code.co_varnames + temps
    return B.assemble(bc, code, co_varnames=varnames, co_nlocals=len(varnames), co_consts=consts)


def build(code, start_offset: int, fail_offset: int, layout: str, local_names: tuple,
          cell_names: tuple, needed: tuple):
    """(stub code, resume codes, prefix code) of one break (cached)."""
    key = ("break", code, start_offset, fail_offset, layout, local_names, cell_names, needed)
    if key not in _cache:
        stub, resumes = stub_code(code, start_offset, fail_offset, layout, local_names,
                                  cell_names)
        prefix = prefix_code(code, start_offset, layout, local_names, cell_names, needed)
        _cache[key] = (stub, resumes, prefix)
    return _cache[key]
