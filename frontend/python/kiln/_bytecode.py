# SPDX-License-Identifier: Apache-2.0
"""Symbolic CPython bytecode: disassemble a code object into editable
instructions and assemble them back into a new code object.

Instructions refer to their jump targets and exception handlers as other
`Instr` objects (never offsets), and to fast locals / cells by name, so a
caller may insert, remove or retarget instructions and rename locals freely;
`assemble` recomputes offsets, EXTENDED_ARG prefixes, inline cache entries,
the location table, the exception table and the stack size.

Written for CPython 3.11 (tested there); the few 3.12 differences (jump
encoding relative to the end of the inline caches, no PRECALL) sit behind
`PY312` checks. Used by kiln._resume to build graph-break resume functions.
"""
from __future__ import annotations

import dis
import sys
import types
from dataclasses import dataclass, field
from typing import Optional

PY312 = sys.version_info >= (3, 12)
if sys.version_info < (3, 11) or sys.version_info >= (3, 13):
    raise ImportError("kiln._bytecode supports CPython 3.11 and 3.12")

_CACHES = dis._inline_cache_entries
_JREL = set(dis.hasjrel)
_JABS = set(dis.hasjabs)
#: Opcodes whose argument is a fast-local / cell slot (kept by name).
_LOCAL_OPS = {dis.opmap[n] for n in (
    "LOAD_FAST", "STORE_FAST", "DELETE_FAST", "LOAD_CLOSURE", "LOAD_DEREF",
    "STORE_DEREF", "DELETE_DEREF", "MAKE_CELL", "LOAD_CLASSDEREF",
    "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR") if n in dis.opmap}
#: Instructions after which control never falls through.
NO_FALLTHROUGH = {"RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE",
                  "JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP"}


@dataclass(eq=False)
class Instr:
    """One instruction. `arg` is the numeric argument except for local ops
    (`name` holds the variable) and jumps (`target` holds the Instr)."""
    opname: str
    arg: int = 0
    name: Optional[str] = None
    target: Optional["Instr"] = None
    positions: Optional[tuple] = None  # (lineno, end_lineno, col, end_col)
    offset: int = -1  # in the code it was read from (-1: new)

    @property
    def opcode(self) -> int:
        return dis.opmap[self.opname]

    def is_jump(self) -> bool:
        return self.opcode in _JREL or self.opcode in _JABS

    def __repr__(self):
        a = self.name if self.name is not None else (
            f"->{self.target.offset}" if self.target is not None else self.arg)
        return f"Instr({self.opname} {a} @{self.offset})"


@dataclass(eq=False)
class ExcEntry:
    """An exception-table entry: instructions [start, end] (inclusive) are
    protected by `handler`, entered with `depth` stack items (+lasti)."""
    start: Instr
    end: Instr
    handler: Instr
    depth: int
    lasti: bool


@dataclass
class Bytecode:
    instrs: list = field(default_factory=list)
    exc: list = field(default_factory=list)


def local_names(code: types.CodeType) -> list:
    """The fast-locals layout (co_localsplusnames) of `code`."""
    names = list(code.co_varnames)
    names += [c for c in code.co_cellvars if c not in names]
    return names + list(code.co_freevars)


def disassemble(code: types.CodeType) -> Bytecode:
    """Symbolic instructions of `code` (no CACHE / EXTENDED_ARG entries)."""
    raw = list(dis.get_instructions(code))
    by_offset = {}
    out = []
    pending = []  # EXTENDED_ARG offsets that belong to the next instruction
    for ins in raw:
        if ins.opname == "EXTENDED_ARG":
            pending.append(ins.offset)
            continue
        i = Instr(ins.opname, ins.arg or 0, offset=ins.offset,
                  positions=tuple(ins.positions) if ins.positions else None)
        if ins.opcode in _LOCAL_OPS:
            i.name = ins.argval
        for off in pending + [ins.offset]:
            by_offset[off] = i
        pending = []
        out.append(i)
    for ins, i in zip([r for r in raw if r.opname != "EXTENDED_ARG"], out):
        if i.is_jump():
            i.target = by_offset[ins.argval]
    exc = []
    ends = sorted(by_offset)
    for e in dis._parse_exception_table(code):
        last = max(o for o in ends if o < e.end)
        exc.append(ExcEntry(by_offset[e.start], by_offset[last], by_offset[e.target],
                            e.depth, e.lasti))
    return Bytecode(out, exc)


def _ext_count(arg: int) -> int:
    return 0 if arg <= 0xFF else 1 if arg <= 0xFFFF else 2 if arg <= 0xFFFFFF else 3


def _varint_le(value: int) -> bytes:
    out = bytearray()
    while value >= 64:
        out.append(64 | (value & 63))
        value >>= 6
    out.append(value)
    return bytes(out)


def _svarint_le(value: int) -> bytes:
    return _varint_le((-value << 1) | 1 if value < 0 else value << 1)


def _exc_item(value: int, first: bool) -> bytes:
    chunks = []
    while True:
        chunks.append(value & 63)
        value >>= 6
        if not value:
            break
    chunks.reverse()
    out = bytearray(c | (64 if k < len(chunks) - 1 else 0) for k, c in enumerate(chunks))
    if first:
        out[0] |= 128
    return bytes(out)


def _linetable(instrs, sizes, firstlineno: int) -> bytes:
    out = bytearray()
    line = firstlineno
    for ins, size in zip(instrs, sizes):
        units = size // 2
        pos = ins.positions
        while units:
            n = min(units, 8)
            units -= n
            if pos is None or pos[0] is None:
                out.append(0x80 | (15 << 3) | (n - 1))
            elif pos[2] is None or pos[3] is None or pos[1] is None:
                out.append(0x80 | (13 << 3) | (n - 1))
                out += _svarint_le(pos[0] - line)
                line = pos[0]
            else:
                out.append(0x80 | (14 << 3) | (n - 1))
                out += _svarint_le(pos[0] - line)
                out += _varint_le(pos[1] - pos[0])
                out += _varint_le(pos[2] + 1)
                out += _varint_le(pos[3] + 1)
                line = pos[0]
    return bytes(out)


def stack_size(instrs, exc) -> int:
    """Maximal stack depth over every path (exception handlers included)."""
    index = {id(i): k for k, i in enumerate(instrs)}
    handlers = []
    for e in exc:
        handlers.append((index[id(e.start)], index[id(e.end)], index[id(e.handler)],
                         e.depth + int(e.lasti) + 1))
    depth = {0: 0}
    work = [0]
    best = 0

    def push(k, d):
        if k < len(instrs) and depth.get(k, -1) < d:
            depth[k] = d
            work.append(k)

    while work:
        k = work.pop()
        d = depth[k]
        ins = instrs[k]
        op = ins.opcode
        arg = ins.arg if op >= dis.HAVE_ARGUMENT else None
        if ins.opname == "RETURN_GENERATOR":  # resumed with the sent value
            push(k + 1, d + 1)
        elif ins.opname not in NO_FALLTHROUGH:
            after = d + dis.stack_effect(op, arg, jump=False) if ins.is_jump() else \
                d + dis.stack_effect(op, arg)
            best = max(best, after)
            push(k + 1, after)
        if ins.is_jump():
            after = d + dis.stack_effect(op, arg, jump=True)
            best = max(best, after)
            push(index[id(ins.target)], after)
        best = max(best, d)
        for s, e, h, hd in handlers:
            if s <= k <= e:
                best = max(best, hd)
                push(h, hd)
    return best


def assemble(bc: Bytecode, base: types.CodeType, **replace) -> types.CodeType:
    """A new code object running `bc`, with the other fields of `base`
    (overridable through `replace`, e.g. co_varnames, co_consts)."""
    instrs = bc.instrs
    probe = base.replace(**{k: v for k, v in replace.items()
                            if k in ("co_varnames", "co_cellvars", "co_freevars", "co_nlocals",
                                     "co_argcount", "co_flags", "co_kwonlyargcount",
                                     "co_posonlyargcount")})
    slots = {n: k for k, n in enumerate(local_names(probe))}
    args = [0] * len(instrs)
    for k, ins in enumerate(instrs):
        if ins.name is not None:
            if ins.name not in slots:
                raise ValueError(f"{ins.opname}: unknown local {ins.name!r}")
            args[k] = slots[ins.name]
        elif not ins.is_jump():
            args[k] = ins.arg if ins.opcode >= dis.HAVE_ARGUMENT else 0
    ext = [0] * len(instrs)
    while True:  # jump arguments depend on sizes, which depend on arguments
        sizes = [2 * (1 + ext[k] + _CACHES[i.opcode]) for k, i in enumerate(instrs)]
        starts, pos = [], 0
        for s in sizes:
            starts.append(pos)
            pos += s
        index = {id(i): k for k, i in enumerate(instrs)}
        changed = False
        for k, ins in enumerate(instrs):
            if ins.is_jump():
                t = starts[index[id(ins.target)]]
                end = starts[k] + sizes[k]
                if "BACKWARD" in ins.opname:
                    delta = end - t
                else:
                    delta = t - end
                if delta < 0:
                    raise ValueError(f"{ins.opname} cannot jump to offset {t} from {starts[k]}")
                args[k] = delta // 2
            n = _ext_count(args[k])
            if n > ext[k]:
                ext[k] = n
                changed = True
        if not changed:
            break
    code = bytearray()
    ext_op = dis.opmap["EXTENDED_ARG"]
    for k, ins in enumerate(instrs):
        a = args[k]
        for j in range(ext[k], 0, -1):
            code += bytes([ext_op, (a >> (8 * j)) & 0xFF])
        code += bytes([ins.opcode, a & 0xFF])
        code += bytes(2 * _CACHES[ins.opcode])
    table = bytearray()
    for e in bc.exc:
        s = starts[index[id(e.start)]] // 2
        end = (starts[index[id(e.end)]] + sizes[index[id(e.end)]]) // 2
        h = starts[index[id(e.handler)]] // 2
        table += _exc_item(s, True) + _exc_item(end - s, False) + _exc_item(h, False)
        table += _exc_item((e.depth << 1) | int(e.lasti), False)
    # Locations: each instruction's entry also covers its EXTENDED_ARGs.
    firstlineno = replace.get("co_firstlineno", base.co_firstlineno)
    fields = dict(co_code=bytes(code), co_linetable=_linetable(instrs, sizes, firstlineno),
                  co_exceptiontable=bytes(table), co_stacksize=stack_size(instrs, bc.exc))
    fields.update(replace)
    return base.replace(**fields)
