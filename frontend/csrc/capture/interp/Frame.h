//===- Frame.h - decoded bytecode and interpreter frames ---------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Private to frontend/csrc/capture: one decoded instruction, the decoded
// bytecode of a code object (with its exception table, Exceptions.cpp) and
// one frame being interpreted. The interpreter is Interp.h.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_CAPTURE_INTERP_FRAME_H
#define KILN_FRONTEND_CAPTURE_INTERP_FRAME_H

#include "capture/breaks/GraphBreak.h"
#include "capture/interp/Opcodes.h"
#include "capture/values/Value.h"

#include <map>
#include <string>
#include <vector>

namespace kiln {

/// One decoded instruction (from dis.get_instructions).
struct Instr {
  Opcode opcode = Opcode::Unknown; ///< decoded from `opname` once (Opcodes.h)
  std::string opname;              ///< dis's name, for messages
  int arg = 0;
  PyRef argval;
  std::string argrepr;
  int offset = 0;
  int line = 0;
};

/// One entry of a code object's exception table (3.11+): an exception
/// raised by an instruction at a byte offset in [start, end) unwinds the
/// value stack to `depth`, pushes that instruction's offset when `lasti`,
/// then the exception, and continues at `target` (Exceptions.cpp).
struct ExceptionHandler {
  int start = 0, end = 0, target = 0, depth = 0;
  bool lasti = false;
};

/// Decoded bytecode of one code object.
struct CodeInfo {
  PyRef code;
  /// The exception table, read on the first exception raised in the code
  /// (Interpreter::handlerFor).
  mutable std::vector<ExceptionHandler> handlers;
  mutable bool handlersRead = false;
  std::vector<Instr> instrs;
  std::map<int, size_t> indexOfOffset;
  std::string filename;
  std::string name;
};

/// One (possibly inlined) Python frame being interpreted.
struct Frame {
  const CodeInfo *code = nullptr;
  std::vector<VarP> locals;
  std::vector<bool> loaded; ///< root frame: local already materialized
  std::vector<VarP> stack;
  PyRef globals; ///< the function's globals dict
  int globalsSource = -1;
  PyRef kwNames;                     ///< pending KW_NAMES tuple
  std::map<std::string, VarP> cells; ///< cell and free variables by name
  bool isRoot = false;
  /// A generator's frame, run to completion when called: the values it
  /// yields, in order (the call returns an iterator over them).
  bool generator = false;
  std::vector<VarP> yields;
  /// The next instruction (a generator's frame is resumed from it).
  size_t pc = 0;
  /// A generator driven step by step: interpret() returns nullptr at each
  /// yield (the value in `yields`), the frame resumed by the next request.
  bool stepping = false;
  bool finished = false;
  /// A generator's exception being handled while it is suspended (its
  /// own sys.exc_info(), Interpreter::handledExc_; null: none known).
  PyRef handledExc;
};

} // namespace kiln

#endif // KILN_FRONTEND_CAPTURE_INTERP_FRAME_H
