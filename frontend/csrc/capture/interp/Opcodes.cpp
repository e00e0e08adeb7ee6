//===- Opcodes.cpp - the symbolic interpreter's opcode table ---------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Builds the opcode table of Opcodes.h from the rows of Opcodes.def (an
// array indexed by Opcode) and the name -> Opcode map used when a code
// object is decoded; both are built once per process.
//===----------------------------------------------------------------------===//
#include "capture/interp/OpcodeHandlers.h"

#include <unordered_map>

namespace kiln {
namespace {

constexpr size_t kNumOpcodes = static_cast<size_t>(Opcode::Unknown) + 1;

/// The table, in Opcode order; the last row is Opcode::Unknown.
const OpcodeInfo kOpcodeTable[kNumOpcodes] = {
#define KILN_OPCODE(NAME, handler, lazyOperands, lazyReads)                                        \
  {#NAME, &OpcodeHandlers::handler, LazyOperands::lazyOperands, lazyReads},
#include "capture/interp/Opcodes.def"
    {"<unknown>", nullptr, LazyOperands::Stack, false},
};

} // namespace

const OpcodeInfo &opcodeInfo(Opcode op) { return kOpcodeTable[static_cast<size_t>(op)]; }

Opcode opcodeNamed(const std::string &name) {
  static const std::unordered_map<std::string, Opcode> byName = [] { // no Python
    std::unordered_map<std::string, Opcode> m;
    for (size_t i = 0; i + 1 < kNumOpcodes; ++i)
      m.emplace(kOpcodeTable[i].name, static_cast<Opcode>(i));
    return m;
  }();
  auto it = byName.find(name);
  return it == byName.end() ? Opcode::Unknown : it->second;
}

} // namespace kiln
