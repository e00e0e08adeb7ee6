# SPDX-License-Identifier: Apache-2.0
"""kiln._bytecode and kiln._resume in isolation (no frame hook): symbolic
disassembly/assembly round-trips real code exactly, and a resume function
entered at any instruction of a function finishes it like the original."""
import dis
import importlib
import sys
import types

import pytest

from kiln import _bytecode as B
from kiln import _resume as R

pytestmark = pytest.mark.skipif(sys.version_info[:2] != (3, 11),
                                reason="bytecode details checked on CPython 3.11")

MODULES = ["json.decoder", "json.encoder", "textwrap", "argparse", "dataclasses", "inspect",
           "functools", "collections", "ast", "enum", "tokenize"]


def code_objects(code):
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from code_objects(c)


@pytest.mark.parametrize("modname", MODULES)
def test_round_trip_is_exact(modname):
    mod = importlib.import_module(modname)
    top = compile(mod.__loader__.get_source(modname), mod.__file__, "exec")
    n = 0
    for code in code_objects(top):
        new = B.assemble(B.disassemble(code), code)
        assert new.co_code == code.co_code, code.co_qualname
        assert new.co_exceptiontable == code.co_exceptiontable, code.co_qualname
        assert list(new.co_positions()) == list(code.co_positions()), code.co_qualname
        assert new.co_stacksize == code.co_stacksize, code.co_qualname
        n += 1
    assert n > 10


def test_round_tripped_functions_run():
    import textwrap
    text = "    a\n      b\n"
    for fn, args in [(textwrap.dedent, (text,)), (textwrap.indent, (text, "> ")),
                     (textwrap.fill, ("word " * 40, 30))]:
        clone = types.FunctionType(B.assemble(B.disassemble(fn.__code__), fn.__code__),
                                   fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
        assert clone(*args) == fn(*args)


def test_extended_args_and_long_jumps():
    body = "\n".join(f"    v{i} = x + {i}" for i in range(300))
    src = f"def f(x):\n    if x > 0:\n{body}\n        return v299\n    return -1\n"
    src = src.replace("\n    v", "\n        v")
    ns = {}
    exec(src, ns)
    f = ns["f"]
    bc = B.disassemble(f.__code__)
    # a new instruction at the start shifts every offset and jump
    bc.instrs.insert(1, B.Instr("NOP"))
    g = types.FunctionType(B.assemble(bc, f.__code__), ns)
    assert g(1) == f(1) == 300 and g(-1) == f(-1) == -1


def test_exception_table_survives_insertion():
    def f(x):
        try:
            return 10 // x
        except ZeroDivisionError:
            return -1
        finally:
            pass

    bc = B.disassemble(f.__code__)
    bc.instrs.insert(1, B.Instr("NOP"))
    g = types.FunctionType(B.assemble(bc, f.__code__), f.__globals__)
    assert g(2) == 5 and g(0) == -1


# --- resume at every offset -------------------------------------------------

# (items popped, layout pushed) of the opcodes used by the sample functions
_EFFECT = {"LOAD_FAST": (0, "i"), "LOAD_CONST": (0, "i"), "STORE_FAST": (1, ""),
           "BINARY_OP": (2, "i"), "COMPARE_OP": (2, "i"), "PUSH_NULL": (0, "n"),
           "PRECALL": (0, ""), "BINARY_SUBSCR": (2, "i"), "POP_TOP": (1, ""),
           "NOP": (0, ""), "UNARY_NEGATIVE": (1, "i"), "IS_OP": (2, "i")}


def _layouts(code):
    """Per offset: (stack layout, bound locals) on entry, for straight-line
    and branching code made of _EFFECT ops (None where unknown)."""
    bc = B.disassemble(code)
    index = {id(i): k for k, i in enumerate(bc.instrs)}
    start = next(k for k, i in enumerate(bc.instrs) if i.opname == "RESUME") + 1
    nargs = code.co_argcount
    seen = {start: ("", tuple(code.co_varnames[:nargs]))}
    work = [start]
    while work:
        k = work.pop()
        layout, bound = seen[k]
        ins = bc.instrs[k]
        op = ins.opname
        succ = []
        if op in _EFFECT:
            pops, push = _EFFECT[op]
            nb = bound + (ins.name,) if op == "STORE_FAST" and ins.name not in bound else bound
            succ.append((k + 1, layout[:len(layout) - pops] + push, nb))
        elif op == "LOAD_GLOBAL":
            succ.append((k + 1, layout + ("ni" if ins.arg & 1 else "i"), bound))
        elif op == "CALL":
            succ.append((k + 1, layout[:len(layout) - ins.arg - 2] + "i", bound))
        elif op == "BUILD_TUPLE":
            succ.append((k + 1, layout[:len(layout) - ins.arg] + "i", bound))
        elif op.startswith("POP_JUMP"):
            succ += [(k + 1, layout[:-1], bound), (index[id(ins.target)], layout[:-1], bound)]
        elif op in ("JUMP_FORWARD", "JUMP_BACKWARD"):
            succ.append((index[id(ins.target)], layout, bound))
        elif op == "RETURN_VALUE":
            pass
        else:
            raise AssertionError(f"sample uses {op}")
        for j, lay, b in succ:
            if j not in seen:
                seen[j] = (lay, b)
                work.append(j)
    return {bc.instrs[k].offset: v for k, v in seen.items()}


def _sample_a(x, y):
    z = x * 2 + y
    w = abs(z - 3)
    if w > 4:
        z = z - w
    else:
        z = -z
    return (z, w, max(x, y))


def _sample_b(a, b):
    t = (a, b, a + b)
    u = t[2] * len(t)
    if u is None:
        return 0
    return u - a


@pytest.mark.parametrize("fn,args", [(_sample_a, (5, 1)), (_sample_a, (1, 1)),
                                     (_sample_b, (3, 4))])
def test_resume_at_every_offset_matches(fn, args):
    code = fn.__code__
    expected = fn(*args)
    tried = 0
    for offset, (layout, bound) in sorted(_layouts(code).items()):
        locs = tuple(n for n in code.co_varnames if n in bound)
        needed = tuple(range(layout.count("i") + len(locs)))
        prefix = types.FunctionType(R.prefix_code(code, offset, layout, locs, (), needed),
                                    fn.__globals__)
        state = prefix(*args)
        if state == expected:  # the offset is on a path these args do not take
            continue
        assert isinstance(state, tuple) and len(state) == len(needed), (offset, state)
        resume = types.FunctionType(R.resume_code(code, offset, layout, locs, ()),
                                    fn.__globals__)
        assert resume(*state) == expected, (offset, layout, locs)
        tried += 1
    assert tried > 12


def test_stub_runs_the_break_and_resumes():
    def f(x):
        y = x * 2
        n = len([y, y])  # the "unsupported" call
        return y + n

    code = f.__code__
    call = next(i for i in dis.get_instructions(code) if i.opname == "CALL")
    start = R.plan(code, call.offset)
    assert start < call.offset  # the PRECALL comes with it
    layout, locs = "nii", ("x", "y")
    stub, resumes, prefix = R.build(code, start, call.offset, layout, locs, (), (0, 1, 2, 3))
    state = types.FunctionType(prefix, f.__globals__)(3)
    run = types.FunctionType(stub, f.__globals__)
    rs = [types.FunctionType(r, f.__globals__) for r in resumes]
    assert run(rs[0], None, *state) == f(3) == 8


def test_plan_refuses_try_blocks_and_generators():
    def f(x):
        try:
            return len(x)
        except TypeError:
            return 0

    call = next(i for i in dis.get_instructions(f.__code__) if i.opname == "CALL")
    with pytest.raises(NotImplementedError, match="try"):
        R.plan(f.__code__, call.offset)

    def g(x):
        yield len(x)

    call = next(i for i in dis.get_instructions(g.__code__) if i.opname == "CALL")
    with pytest.raises(NotImplementedError, match="generator"):
        R.plan(g.__code__, call.offset)
