//===- InstructionLoop.cpp - the symbolic interpreter's bytecode loop ------===//
// SPDX-License-Identifier: Apache-2.0
//
// Runs a frame's decoded instructions one by one: stops the root frame at
// the graph break offset (BreakState.cpp), materializes the lazy values
// the instruction reads (LazyValues.cpp), and runs the instruction's
// handler from the opcode table (Opcodes.def, OpcodeHandlers.h). An opcode
// with no row is one structured graph break, raised here. A Python
// exception the capture raises (PyRaised) goes to the frame's exception
// table (Exceptions.cpp). Code objects are decoded once per capture
// (`codeInfo`, with `dis.get_instructions`).
//===----------------------------------------------------------------------===//
#include "capture/interp/OpcodeHandlers.h"
#include "GilOnce.h"

namespace kiln {

VarP popValue(Frame &f) {
  if (f.stack.empty())
    throw Unsupported("stack underflow (unexpected bytecode)");
  VarP v = f.stack.back();
  f.stack.pop_back();
  return v;
}

VarP nullVar() { return std::make_shared<Var>(); }

VarP methodFormNullVar() {
  VarP v = nullVar();
  v->name = "method form";
  return v;
}

bool isMethodFormNull(const VarP &v) {
  return v->kind == Var::Kind::Null && v->name == "method form";
}

const CodeInfo &Interpreter::codeInfo(PyObject *code) {
  auto it = codes_.find(code);
  if (it != codes_.end())
    return *it->second;
  static PyOnce getInstructionsOnce;
  PyObject *getInstructions = getInstructionsOnce.get([] {
    PyRef dis = PyRef::steal(PyImport_ImportModule("dis"));
    return dis ? PyObject_GetAttrString(dis.get(), "get_instructions") : nullptr;
  });
  auto info = std::make_unique<CodeInfo>();
  info->code = PyRef::borrow(code);
  info->filename = pyText(PyRef::steal(PyObject_GetAttrString(code, "co_filename")).get());
  info->name = pyText(PyRef::steal(PyObject_GetAttrString(code, "co_name")).get());
  PyRef decoded =
      PyRef::steal(getInstructions ? PyObject_CallOneArg(getInstructions, code) : nullptr);
  PyRef list = PyRef::steal(decoded ? PySequence_List(decoded.get()) : nullptr);
  if (!list)
    throw Unsupported("cannot decode bytecode of " + info->name);
  int line = 0;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list.get()); ++i) {
    PyObject *ins = PyList_GET_ITEM(list.get(), i);
    Instr in;
    in.opname = pyText(PyRef::steal(PyObject_GetAttrString(ins, "opname")).get());
    in.opcode = opcodeNamed(in.opname);
    PyRef arg = PyRef::steal(PyObject_GetAttrString(ins, "arg"));
    in.arg = arg.get() == Py_None ? 0 : PyLong_AsLong(arg.get());
    in.argval = PyRef::steal(PyObject_GetAttrString(ins, "argval"));
    in.argrepr = pyText(PyRef::steal(PyObject_GetAttrString(ins, "argrepr")).get());
    in.offset = PyLong_AsLong(PyRef::steal(PyObject_GetAttrString(ins, "offset")).get());
    PyRef pos = PyRef::steal(PyObject_GetAttrString(ins, "positions"));
    PyRef lineno = pos ? PyRef::steal(PyObject_GetAttrString(pos.get(), "lineno")) : PyRef();
    if (lineno && lineno.get() != Py_None)
      line = PyLong_AsLong(lineno.get());
    in.line = line;
    PyErr_Clear();
    info->indexOfOffset[in.offset] = info->instrs.size();
    info->instrs.push_back(std::move(in));
  }
  auto &ref = *info;
  codes_[code] = std::move(info);
  return ref;
}

void StepControl::jumpTo(PyObject *targetOffset) {
  next = code.indexOfOffset.at(PyLong_AsLong(targetOffset));
}

void StepControl::returnWith(VarP value) {
  returned = true;
  result = std::move(value);
}

VarP Interpreter::interpret(Frame &f) {
  size_t &pc = f.pc; // a generator's frame resumes where it stopped
  VarP result;
  while (pc < f.code->instrs.size()) {
    if (++steps_ > 200000)
      throw Unsupported("capture exceeded the instruction budget (very long loop?)");
    const Instr &in = f.code->instrs[pc];
    loc_ = mlir::FileLineColLoc::get(&ctx_, f.code->filename, in.line, 0);
    if (f.isRoot) {
      rootOffset_ = in.offset;
      if (in.offset == out_.stopOffset) {
        for (const VarP &v : f.stack) // the state passed on is read (LazyValues.cpp)
          materializeDeep(v);
        for (const VarP &v : f.locals)
          materializeDeep(v);
        for (const auto &[name, cell] : f.cells)
          materializeDeep(cell);
        return breakState(f);
      }
    }
    materializeOperands(f, in); // LazyValues.cpp
    struct LazyScope {          // reads are lazy only while a pushing-only instruction runs
      bool &flag, saved;
      ~LazyScope() { flag = saved; }
    } scope{lazyReads_, lazyReads_};
    lazyReads_ = opcodeInfo(in.opcode).lazyReads;
    bool returned;
    try {
      returned = step(f, pc, result);
    } catch (const PyRaised &e) {
      // A Python exception eager raises here: a handler of this frame
      // covering the instruction catches it (Exceptions.cpp); else it goes
      // on to the caller's frame. Left uncaught by the root frame after a
      // `raise`, the frame runs eagerly (the stub would re-raise the
      // capture's exception object on every call).
      if (catchRaised(f, pc, e))
        continue;
      if (f.isRoot && (in.opcode == Opcode::RAISE_VARARGS || in.opcode == Opcode::RERAISE)) {
        Unsupported plain(e.category, e.what(), e.hint);
        plain.resumable = false;
        throw plain;
      }
      throw;
    }
    if (returned) {
      if (f.isRoot)
        rootOffset_ = -1;
      return result;
    }
    if (f.stepping && !f.yields.empty())
      return nullptr; // a generator suspended at a yield (Iterators.cpp)
  }
  throw Unsupported("fell off the end of the bytecode");
}

bool Interpreter::step(Frame &f, size_t &pc, VarP &result) {
  const Instr &in = f.code->instrs[pc];
  const OpcodeInfo &info = opcodeInfo(in.opcode);
  if (!info.handler)
    throw Unsupported(BreakCategory::UnsupportedOpcode, "opcode " + in.opname + " is not supported",
                      "kiln does not capture this Python construct yet: it runs eagerly between "
                      "two graphs; moving it out of the compiled function keeps one graph");
  StepControl control(*f.code, pc + 1);
  info.handler(*this, f, in, control);
  pc = control.next;
  if (!control.returned)
    return false;
  result = std::move(control.result);
  return true;
}

} // namespace kiln
