//===- OpcodeHandlers.h - one function per opcode ------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Private to capture/interp: the handlers the opcode table (Opcodes.def)
// points at, one per opcode or per family of opcodes sharing one body, and
// what a handler tells the instruction loop (StepControl). A handler pops
// its operands from the frame's stack, pushes its result, and may jump or
// return through StepControl; it throws Unsupported for what it cannot run.
// Handlers are the Interpreter's instruction semantics, so OpcodeHandlers is
// its friend; they live in files by role, named at each group below.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_CAPTURE_INTERP_OPCODEHANDLERS_H
#define KILN_FRONTEND_CAPTURE_INTERP_OPCODEHANDLERS_H

#include "capture/interp/Interp.h"

namespace kiln {

/// What one instruction's handler tells the loop (Interpreter::step).
struct StepControl {
  /// Continues at `next` of `code` unless the handler says otherwise.
  StepControl(const CodeInfo &code, size_t next) : code(code), next(next) {}

  /// The code being run (jump targets are looked up in it).
  const CodeInfo &code;
  /// Index into `code.instrs` of the instruction that runs next: the
  /// following one unless the handler jumps.
  size_t next;
  /// The frame returned (`result` is its value).
  bool returned = false;
  VarP result;

  /// Continues at the instruction at bytecode offset `targetOffset` (a
  /// Python int, an instruction's argval; borrowed).
  void jumpTo(PyObject *targetOffset);
  /// Ends the frame with `value`.
  void returnWith(VarP value);
};

/// Pops the top of `f`'s stack (Unsupported when it is empty).
VarP popValue(Frame &f);

/// The NULL CPython pushes before some calls.
VarP nullVar();

/// The NULL of the method-call form LOAD_METHOD (3.12: LOAD_ATTR with the
/// method bit) pushes before a callable: kiln pushes [NULL, bound method]
/// where CPython pushes [function, self], so a break may turn the pair back
/// into CPython's form; a NULL from PUSH_NULL/LOAD_GLOBAL must stay.
VarP methodFormNullVar();
bool isMethodFormNull(const VarP &v);

/// The instruction handlers (OpcodeHandler, Opcodes.h). Each runs `in` in
/// frame `f` of `interp`; `c` says where the loop goes next.
struct OpcodeHandlers {
  // --- stack, locals, globals, constants, attributes, cells, imports
  // (LoadStore.cpp) ---
  /// RESUME, NOP, PRECALL, CACHE, EXTENDED_ARG, COPY_FREE_VARS: nothing.
  static void nop(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// POP_TOP.
  static void popTop(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// COPY: pushes the `arg`-th item from the top.
  static void copy(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// SWAP: swaps the top with the `arg`-th item from the top.
  static void swap(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// PUSH_NULL.
  static void pushNull(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// LOAD_CONST.
  static void loadConst(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// LOAD_FAST, LOAD_FAST_CHECK (a root frame's local is read, and
  /// guarded, on its first load).
  static void loadFast(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// STORE_FAST.
  static void storeFast(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// DELETE_FAST.
  static void deleteFast(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// LOAD_GLOBAL (the low bit of `arg` pushes a NULL first).
  static void loadGlobal(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// STORE_GLOBAL: a side effect (SideEffects.cpp).
  static void storeGlobal(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// LOAD_ATTR, LOAD_METHOD (3.12: LOAD_ATTR with the low bit set is the
  /// method form, pushing [method, self] or [NULL, attribute]).
  static void loadAttr(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// STORE_ATTR: a side effect (SideEffects.cpp).
  static void storeAttr(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// DELETE_ATTR, DELETE_SUBSCR: a graph break (mutation kiln cannot replay).
  static void deleteMutation(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// MAKE_CELL (an argument that is also a cell starts with its value).
  static void makeCell(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// LOAD_DEREF: the content of a cell or free variable.
  static void loadDeref(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// LOAD_CLOSURE: the cell itself (for MAKE_FUNCTION's closure tuple).
  static void loadClosure(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// STORE_DEREF into a cell made in the capture.
  static void storeDeref(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// DELETE_DEREF: a graph break.
  static void deleteDeref(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// IMPORT_NAME of a module already imported (a constant).
  static void importName(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// IMPORT_FROM: an attribute of the module on the stack.
  static void importFrom(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);

  // --- tuples, lists, dicts, slices, strings (Containers.cpp) ---
  /// BUILD_TUPLE.
  static void buildTuple(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// BUILD_LIST.
  static void buildList(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// LIST_APPEND (comprehensions).
  static void listAppend(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// LIST_EXTEND (`[*a, *b]`).
  static void listExtend(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// LIST_TO_TUPLE.
  static void listToTuple(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// UNPACK_SEQUENCE.
  static void unpackSequence(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// UNPACK_EX: `a, *rest, b = seq` (the starred part a new list).
  static void unpackEx(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// BUILD_SET: a set of constants, made at capture (fresh: mutated on the object).
  static void buildSet(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// SET_ADD / SET_UPDATE into the set `arg` deep (a set comprehension, `{*a}`).
  static void setAdd(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// BUILD_MAP: `arg` key/value pairs.
  static void buildMap(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// BUILD_CONST_KEY_MAP: `arg` values and a tuple of keys.
  static void buildConstKeyMap(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// MAP_ADD (dict comprehensions).
  static void mapAdd(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// DICT_MERGE (`f(**a)`: a repeated key is an error), DICT_UPDATE
  /// (`{**a, **b}`).
  static void dictMerge(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// BINARY_SUBSCR: `c[i]`.
  static void binarySubscr(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// STORE_SUBSCR into a dict, list or constant container (SideEffects.cpp);
  /// a graph break for other containers.
  static void storeSubscr(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// BUILD_SLICE.
  static void buildSlice(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// BINARY_SLICE (3.12): `c[start:stop]`.
  static void binarySlice(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// FORMAT_VALUE: an f-string piece of a constant.
  static void formatValue(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// BUILD_STRING: joins `arg` constant strings.
  static void buildString(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);

  // --- operators (Operators.cpp) ---
  /// BINARY_OP (`argrepr` is the operator: `+`, `+=` ...).
  static void binaryOp(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// COMPARE_OP (`argval` is the operator: `<` ...).
  static void compareOp(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// UNARY_NEGATIVE: `-x` (Tensor.neg for tensors).
  static void unaryNegative(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// UNARY_INVERT: `~x` (Tensor.bitwise_not for tensors).
  static void unaryInvert(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// UNARY_NOT.
  static void unaryNot(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// IS_OP (`arg` 1: `is not`).
  static void isOp(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// CONTAINS_OP (`arg` 1: `not in`).
  static void containsOp(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);

  // --- jumps, loops, returns, generators, with (ControlFlow.cpp) ---
  /// JUMP_FORWARD, JUMP_BACKWARD(_NO_INTERRUPT), 3.12's JUMP(_NO_INTERRUPT).
  static void jump(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// POP_JUMP_{FORWARD,BACKWARD}_IF_FALSE, 3.12's POP_JUMP_IF_FALSE.
  static void popJumpIfFalse(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// POP_JUMP_{FORWARD,BACKWARD}_IF_TRUE, 3.12's POP_JUMP_IF_TRUE.
  static void popJumpIfTrue(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// POP_JUMP_{FORWARD,BACKWARD}_IF_NONE, 3.12's POP_JUMP_IF_NONE.
  static void popJumpIfNone(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// POP_JUMP_{FORWARD,BACKWARD}_IF_NOT_NONE, 3.12's POP_JUMP_IF_NOT_NONE.
  static void popJumpIfNotNone(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// JUMP_IF_FALSE_OR_POP (`a and b`).
  static void jumpIfFalseOrPop(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// JUMP_IF_TRUE_OR_POP (`a or b`).
  static void jumpIfTrueOrPop(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// GET_ITER: an iterator over the remaining items.
  static void getIter(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// FOR_ITER: the next item, or the jump past the loop (3.12: past
  /// END_FOR).
  static void forIter(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// END_FOR (3.12): pops the iterator and the last item.
  static void endFor(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// RETURN_VALUE.
  static void returnValue(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// RETURN_CONST (3.12).
  static void returnConst(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// RETURN_GENERATOR at the start of a generator frame run to completion
  /// (Inlining.cpp).
  static void returnGenerator(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// YIELD_VALUE: records the value; None is sent back in.
  static void yieldValue(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// GET_YIELD_FROM_ITER.
  static void getYieldFromIter(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// SEND (`yield from it` with None sent each time).
  static void send(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// END_SEND (3.12).
  static void endSend(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// BEFORE_WITH (ContextManagers.cpp).
  static void beforeWith(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  // --- exceptions (Exceptions.cpp) ---
  /// RAISE_VARARGS: `raise E(...)` of an exception built at capture (with
  /// `from`), or a bare `raise` of the one being handled: PyRaised; other
  /// raises are user-error breaks.
  static void raise(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// PUSH_EXC_INFO / POP_EXCEPT: the exception being handled is saved on
  /// the stack and set / restored from it.
  static void pushExcInfo(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  static void popExcept(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// CHECK_EXC_MATCH: `except T:` against a constant class (or tuple).
  static void checkExcMatch(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// RERAISE: raises the exception on the stack again.
  static void reraise(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// WITH_EXCEPT_START: a with-block's __exit__ called with the exception.
  static void withExceptStart(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// LOAD_ASSERTION_ERROR: pushes AssertionError.
  static void loadAssertionError(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);

  // --- calls and functions (Calls.cpp) ---
  /// KW_NAMES: the keyword names of the next CALL.
  static void kwNames(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// CALL: [NULL, callee] or [callee, self] and `arg` arguments.
  static void call(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// CALL_FUNCTION_EX: `f(*args)` / `f(*args, **kwargs)`.
  static void callFunctionEx(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);
  /// MAKE_FUNCTION: a function made during capture (a Function Var).
  static void makeFunction(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);

  /// `lhs sym rhs` for BINARY_OP (once not lazy) and COMPARE_OP
  /// (Operators.cpp); also itertools.count/accumulate (Iterators.cpp).
  static VarP applyOperator(Interpreter &interp, const std::string &sym, const VarP &lhs,
                            const VarP &rhs);

private:
  // --- bodies shared by a family of handlers ---
  /// `-x` (`negative`) or `~x` of the popped top for UNARY_NEGATIVE and
  /// UNARY_INVERT (Operators.cpp).
  static VarP applyUnary(Interpreter &interp, Frame &f, bool negative);
};

} // namespace kiln

#endif // KILN_FRONTEND_CAPTURE_INTERP_OPCODEHANDLERS_H
