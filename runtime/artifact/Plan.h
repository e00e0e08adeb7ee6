//===- Plan.h - an artifact's call plan and input/output spec -----*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The Plan section of a .kiln artifact: which symbol to call, the run-time
// functions its import table needs, the symbolic dims with their ranges,
// the graph's inputs in call order (the caller's tensors and the weights)
// and its results (those the model returns are its outputs). Text, one
// record per line, fields separated by one space:
//
//   kiln-plan 1
//   entry <symbol>
//   imports <n>             then n lines: import <name>
//   symbols <n>             then n lines: symbol <name> <min> <max>
//   inputs <n>              then n lines, in call order:
//     input user <k> <name> <dtype> <rank> <dims...>
//     input weight <name> <dtype> <rank> <dims...> <offset> <nbytes>
//   results <n>             then n lines: result <dtype> <rank> <dims...>
//   outputs <n>             then n lines: output <result> <name>
//
// A dim is a size (>= 0) or `$i`, symbol i. <k> numbers the caller's
// inputs 0..m-1; weights lie at <offset> in the weights section.
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_ARTIFACT_PLAN_H
#define KILN_RUNTIME_ARTIFACT_PLAN_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::rt::artifact {

/// Element types, with their DLPack (code, bits).
enum class DType : uint8_t { F32, F64, F16, BF16, I64, I32, Bool };

/// Parses "f32", "bf16", ...; false when unknown.
bool parseDType(std::string_view text, DType &out);
const char *dtypeName(DType d);
int dtypeBytes(DType d);
/// DLPack type code (kDLInt 0, kDLFloat 2, kDLBfloat 4, kDLBool 6) and bits.
void dtypeToDLPack(DType d, uint8_t &code, uint8_t &bits);

/// One dim: a fixed size, or symbol `symbol` (>= 0).
struct Dim {
  int64_t size = 0;
  int symbol = -1;
};

struct TensorSpec {
  std::string name;
  DType dtype = DType::F32;
  std::vector<Dim> dims;
};

struct InputSpec : TensorSpec {
  bool weight = false;
  int user = -1;       ///< the caller's input number (user inputs)
  uint64_t offset = 0; ///< weights: byte offset in the weights section
  uint64_t nbytes = 0; ///< weights: byte size
};

struct SymbolSpec {
  std::string name;
  int64_t min = 0, max = 0;
};

struct Plan {
  std::string entry;
  std::vector<std::string> imports;
  std::vector<SymbolSpec> symbols;
  std::vector<InputSpec> inputs; ///< call order
  std::vector<TensorSpec> results;
  std::vector<int> outputs; ///< result number of each output
  std::vector<std::string> outputNames;
  std::vector<int> userInputs; ///< graph input number of caller input k
  /// Result (a 0-d i64) non-zero when an index the inputs gave was out of
  /// range: the run fails with KILN_ERROR_INDEX; -1: none (optional
  /// "index_check <result>" line after the outputs).
  int indexCheck = -1;
};

/// Parses and checks `text` against `weightsSize` (every weight inside the
/// weights section, aligned, with the byte size of its shape and dtype;
/// every symbol used, in range; outputs naming results; caller inputs
/// numbered 0..m-1 once each). False with `error` saying which line and why.
bool parsePlan(std::string_view text, uint64_t weightsSize, Plan &plan, std::string &error);

} // namespace kiln::rt::artifact

#endif // KILN_RUNTIME_ARTIFACT_PLAN_H
