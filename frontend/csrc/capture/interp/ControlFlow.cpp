//===- ControlFlow.cpp - handlers of jumps, loops, returns and generators ---===//
// SPDX-License-Identifier: Apache-2.0
//
// Opcode handlers (OpcodeHandlers.h) that decide where the frame goes:
// jumps (a branch on a value that depends on tensor data is a graph break,
// Interpreter::truthy), loops over iterators of known items (unrolled),
// returns, generators (resumed step by step, Iterators.cpp), with-blocks
// (ContextManagers.cpp); raise and try/except are Exceptions.cpp.
//===----------------------------------------------------------------------===//
#include "capture/interp/OpcodeHandlers.h"

namespace kiln {
namespace {

bool isNone(const VarP &v) { return v->isConst() && v->obj.get() == Py_None; }

} // namespace

void OpcodeHandlers::jump(Interpreter &, Frame &, const Instr &in, StepControl &c) {
  c.jumpTo(in.argval.get());
}

void OpcodeHandlers::popJumpIfFalse(Interpreter &interp, Frame &f, const Instr &in,
                                    StepControl &c) {
  if (!interp.truthy(popValue(f)))
    c.jumpTo(in.argval.get());
}

void OpcodeHandlers::popJumpIfTrue(Interpreter &interp, Frame &f, const Instr &in, StepControl &c) {
  if (interp.truthy(popValue(f)))
    c.jumpTo(in.argval.get());
}

void OpcodeHandlers::popJumpIfNone(Interpreter &, Frame &f, const Instr &in, StepControl &c) {
  if (isNone(popValue(f)))
    c.jumpTo(in.argval.get());
}

void OpcodeHandlers::popJumpIfNotNone(Interpreter &, Frame &f, const Instr &in, StepControl &c) {
  if (!isNone(popValue(f)))
    c.jumpTo(in.argval.get());
}

void OpcodeHandlers::jumpIfFalseOrPop(Interpreter &interp, Frame &f, const Instr &in,
                                      StepControl &c) {
  if (!interp.truthy(f.stack.back()))
    c.jumpTo(in.argval.get());
  else
    popValue(f);
}

void OpcodeHandlers::jumpIfTrueOrPop(Interpreter &interp, Frame &f, const Instr &in,
                                     StepControl &c) {
  if (interp.truthy(f.stack.back()))
    c.jumpTo(in.argval.get());
  else
    popValue(f);
}

void OpcodeHandlers::getIter(Interpreter &interp, Frame &f, const Instr &, StepControl &) {
  f.stack.push_back(interp.getIter(popValue(f)));
}

void OpcodeHandlers::forIter(Interpreter &interp, Frame &f, const Instr &in, StepControl &c) {
  VarP it = f.stack.back();
  if (it->kind != Var::Kind::Iter)
    throw Unsupported("FOR_ITER over a non-iterator");
  if (VarP item = interp.iterNext(it)) {
    f.stack.push_back(item);
    return;
  }
  popValue(f);
  c.jumpTo(in.argval.get());
  if (c.code.instrs[c.next].opcode == Opcode::END_FOR)
    ++c.next; // 3.12: exhaustion skips END_FOR
}

void OpcodeHandlers::endFor(Interpreter &, Frame &f, const Instr &, StepControl &) {
  popValue(f);
  popValue(f);
}

void OpcodeHandlers::returnValue(Interpreter &, Frame &f, const Instr &, StepControl &c) {
  c.returnWith(popValue(f));
}

void OpcodeHandlers::returnConst(Interpreter &, Frame &, const Instr &in, StepControl &c) {
  c.returnWith(makeConst(in.argval));
}

void OpcodeHandlers::returnGenerator(Interpreter &, Frame &f, const Instr &, StepControl &) {
  // A generator frame (driven step by step, Iterators.cpp): the value
  // RETURN_GENERATOR leaves is popped by the POP_TOP after it.
  if (!f.generator)
    throw Unsupported(BreakCategory::UnsupportedOpcode, "RETURN_GENERATOR outside a generator");
  f.stack.push_back(makeConst(PyRef::borrow(Py_None)));
}

void OpcodeHandlers::yieldValue(Interpreter &, Frame &f, const Instr &, StepControl &) {
  if (!f.generator)
    throw Unsupported(BreakCategory::UnsupportedOpcode, "yield outside a generator");
  f.yields.push_back(popValue(f));
  f.stack.push_back(makeConst(PyRef::borrow(Py_None))); // the value sent in
}

void OpcodeHandlers::getYieldFromIter(Interpreter &interp, Frame &f, const Instr &, StepControl &) {
  f.stack.push_back(interp.getIter(popValue(f)));
}

void OpcodeHandlers::send(Interpreter &interp, Frame &f, const Instr &in, StepControl &c) {
  // `yield from it` (None sent each time): the next item is yielded, the
  // end jumps past the loop with None (the sub-generator's return value).
  popValue(f);
  VarP it = f.stack.back();
  if (it->kind != Var::Kind::Iter)
    throw Unsupported(BreakCategory::UnsupportedOpcode,
                      "yield from a value that is not an iterator");
  if (VarP item = interp.iterNext(it)) {
    f.stack.push_back(item);
    return;
  }
  if (PY_MINOR_VERSION < 12)
    popValue(f); // 3.12 leaves the iterator for END_SEND
  f.stack.push_back(makeConst(PyRef::borrow(Py_None)));
  c.jumpTo(in.argval.get());
}

void OpcodeHandlers::endSend(Interpreter &, Frame &f, const Instr &, StepControl &) {
  VarP v = popValue(f);
  popValue(f);
  f.stack.push_back(v);
}

void OpcodeHandlers::beforeWith(Interpreter &interp, Frame &f, const Instr &, StepControl &) {
  VarP ctx = popValue(f);
  interp.enterWith(f, ctx); // ContextManagers.cpp
}

} // namespace kiln
