//===- Opcodes.h - the symbolic interpreter's opcode table --------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// One table describes each CPython opcode the interpreter runs (rows in
// Opcodes.def): the handler that runs it (OpcodeHandlers.h) and which lazy
// values it reads (LazyValues.cpp). Interpreter::codeInfo decodes each
// instruction's name to an Opcode once per code object, so the instruction
// loop indexes the table and never compares names.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_CAPTURE_INTERP_OPCODES_H
#define KILN_FRONTEND_CAPTURE_INTERP_OPCODES_H

#include <cstdint>
#include <string>

namespace kiln {

class Interpreter;
struct Frame;
struct Instr;
struct StepControl;

/// A CPython opcode the interpreter runs (enumerators spelled as dis's
/// opnames), or Unknown.
enum class Opcode : uint16_t {
#define KILN_OPCODE(NAME, handler, lazyOperands, lazyReads) NAME,
#include "capture/interp/Opcodes.def"
  Unknown, ///< an opcode no row of Opcodes.def names: a graph break
};

/// Which lazy values (LazyValues.cpp) an instruction reads: those are
/// materialized (guarded) before it runs, the others stay lazy.
enum class LazyOperands : uint8_t {
  None,          ///< reads none: it moves values (loads, stores to locals,
                 ///< jumps) or decides itself (BINARY_OP)
  Stack,         ///< may read anything on the stack
  Receiver,      ///< LOAD_ATTR/LOAD_METHOD: the object, unless it is a lazy
                 ///< list and the attribute one of its mutation methods
  AttrTarget,    ///< STORE_ATTR: the object (the stored value stays lazy)
  ItemRead,      ///< BINARY_SUBSCR: the key and the container
  ItemStore,     ///< STORE_SUBSCR: the key and the container (and the value
                 ///< when the container is a tensor)
  CallArguments, ///< CALL: the callee and its arguments, unless the callee
                 ///< is a lazy list's own mutation method
};

/// Runs one instruction `in` of frame `f` (OpcodeHandlers.h).
using OpcodeHandler = void (*)(Interpreter &interp, Frame &f, const Instr &in, StepControl &c);

/// One row of the opcode table.
struct OpcodeInfo {
  const char *name;          ///< dis's opname ("LOAD_FAST")
  OpcodeHandler handler;     ///< null for Opcode::Unknown
  LazyOperands lazyOperands; ///< the lazy values it reads
  bool lazyReads;            ///< it only pushes what it reads: sources read
                             ///< while it runs may give lazy values
};

/// The table row of `op`.
const OpcodeInfo &opcodeInfo(Opcode op);

/// The Opcode whose dis name is `name`; Opcode::Unknown when no row has it.
Opcode opcodeNamed(const std::string &name);

} // namespace kiln

#endif // KILN_FRONTEND_CAPTURE_INTERP_OPCODES_H
