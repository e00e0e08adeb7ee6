//===- Plan.cpp - parsing an artifact's call plan -----------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements Plan.h. The plan is untrusted input: every count is bounded,
// every number parsed strictly (std::from_chars, whole token) and every
// cross reference checked before the loader uses it.
//===----------------------------------------------------------------------===//
#include "runtime/artifact/Plan.h"

#include "runtime/artifact/Format.h"

#include <charconv>
#include <limits>

namespace kiln::rt::artifact {
namespace {

struct DTypeInfo {
  const char *name;
  DType dtype;
  int bytes;
  uint8_t code, bits;
};
constexpr DTypeInfo kDTypes[] = {{"f32", DType::F32, 4, 2, 32}, {"f64", DType::F64, 8, 2, 64},
                                 {"f16", DType::F16, 2, 2, 16}, {"bf16", DType::BF16, 2, 4, 16},
                                 {"i64", DType::I64, 8, 0, 64}, {"i32", DType::I32, 4, 0, 32},
                                 {"bool", DType::Bool, 1, 6, 8}};

const DTypeInfo &info(DType d) { return kDTypes[static_cast<int>(d)]; }

constexpr size_t kMaxCount = 1 << 20; // records of one kind
constexpr size_t kMaxRank = 16;

/// Reads the plan line by line, splitting each into space-separated tokens.
class Reader {
public:
  explicit Reader(std::string_view text) : text_(text) {}
  /// The next line's tokens; false at the end.
  bool next() {
    if (pos_ >= text_.size())
      return false;
    size_t end = text_.find('\n', pos_);
    std::string_view line = text_.substr(pos_, end == std::string_view::npos ? end : end - pos_);
    pos_ = end == std::string_view::npos ? text_.size() : end + 1;
    ++lineNo_;
    tokens_.clear();
    size_t at = 0;
    while (at <= line.size()) {
      size_t sp = line.find(' ', at);
      tokens_.push_back(line.substr(at, sp == std::string_view::npos ? sp : sp - at));
      if (sp == std::string_view::npos)
        break;
      at = sp + 1;
    }
    return true;
  }
  const std::vector<std::string_view> &tokens() const { return tokens_; }
  int line() const { return lineNo_; }

private:
  std::string_view text_;
  size_t pos_ = 0;
  int lineNo_ = 0;
  std::vector<std::string_view> tokens_;
};

bool parseInt(std::string_view t, int64_t &out) {
  if (t.empty())
    return false;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
  return ec == std::errc() && end == t.data() + t.size();
}

/// The parser's state: the reader plus the error it reports.
struct Parser {
  Reader in;
  std::string &error;
  bool fail(const std::string &why) {
    error = "plan line " + std::to_string(in.line()) + ": " + why;
    return false;
  }
  /// Reads "<keyword> <n>" with n <= kMaxCount.
  bool count(const char *keyword, size_t &n) {
    int64_t v;
    if (!in.next() || in.tokens().size() != 2 || in.tokens()[0] != keyword ||
        !parseInt(in.tokens()[1], v) || v < 0 || (uint64_t)v > kMaxCount)
      return fail(std::string("expected '") + keyword + " <count>'");
    n = (size_t)v;
    return true;
  }
  /// Reads "<dtype> <rank> <dims...>" at tokens[at...]; advances `at`.
  bool tensor(size_t &at, size_t numSymbols, TensorSpec &t) {
    const auto &tok = in.tokens();
    int64_t rank;
    if (at + 2 > tok.size() || !parseDType(tok[at], t.dtype) || !parseInt(tok[at + 1], rank) ||
        rank < 0 || (size_t)rank > kMaxRank || at + 2 + rank > tok.size())
      return fail("bad dtype, rank or dims");
    at += 2;
    for (int64_t d = 0; d < rank; ++d, ++at) {
      Dim dim;
      std::string_view s = tok[at];
      int64_t v;
      bool sym = !s.empty() && s[0] == '$';
      if (!parseInt(sym ? s.substr(1) : s, v) || v < 0 || (sym && (uint64_t)v >= numSymbols))
        return fail("bad dim '" + std::string(s) + "'");
      dim.symbol = sym ? (int)v : -1;
      dim.size = sym ? 0 : v;
      t.dims.push_back(dim);
    }
    return true;
  }
};

/// The byte size of a static tensor, or false on overflow or a symbolic dim.
bool staticBytes(const TensorSpec &t, uint64_t &bytes) {
  unsigned __int128 n = dtypeBytes(t.dtype);
  for (const Dim &d : t.dims) {
    if (d.symbol >= 0)
      return false;
    n *= (uint64_t)d.size;
    if (n > std::numeric_limits<uint64_t>::max() / 2)
      return false;
  }
  bytes = (uint64_t)n;
  return true;
}

bool parseInput(Parser &p, const Plan &plan, uint64_t weightsSize, InputSpec &in) {
  const auto &tok = p.in.tokens();
  if (tok.size() < 3 || tok[0] != "input" || (tok[1] != "user" && tok[1] != "weight"))
    return p.fail("expected 'input user|weight ...'");
  in.weight = tok[1] == "weight";
  size_t at = 2;
  int64_t k = -1;
  if (!in.weight && (!parseInt(tok[at++], k) || k < 0 || (size_t)k > kMaxCount))
    return p.fail("bad caller input number");
  in.user = (int)k;
  if (at >= tok.size() || tok[at].empty())
    return p.fail("missing input name");
  in.name = std::string(tok[at++]);
  if (!p.tensor(at, plan.symbols.size(), in))
    return false;
  if (!in.weight)
    return at == tok.size() || p.fail("trailing fields");
  int64_t off, n;
  uint64_t expect;
  if (at + 2 != tok.size() || !parseInt(tok[at], off) || !parseInt(tok[at + 1], n) || off < 0 ||
      n < 0)
    return p.fail("bad weight offset or size");
  if (!staticBytes(in, expect) || expect != (uint64_t)n)
    return p.fail("weight " + in.name + ": byte size does not match its shape");
  if ((uint64_t)off > weightsSize || (uint64_t)n > weightsSize - (uint64_t)off ||
      off % kWeightAlign)
    return p.fail("weight " + in.name + " lies outside the weights section or is misaligned");
  in.offset = (uint64_t)off;
  in.nbytes = (uint64_t)n;
  return true;
}

} // namespace

bool parseDType(std::string_view text, DType &out) {
  for (const DTypeInfo &d : kDTypes)
    if (text == d.name) {
      out = d.dtype;
      return true;
    }
  return false;
}
const char *dtypeName(DType d) { return info(d).name; }
int dtypeBytes(DType d) { return info(d).bytes; }
void dtypeToDLPack(DType d, uint8_t &code, uint8_t &bits) {
  code = info(d).code;
  bits = info(d).bits;
}

namespace {

bool parseHead(Parser &p, Plan &plan) {
  const auto &tok = p.in.tokens();
  if (!p.in.next() || tok.size() != 2 || tok[0] != "kiln-plan")
    return p.fail("not a kiln plan");
  if (tok[1] != std::to_string(kVersion))
    return p.fail("plan version " + std::string(tok[1]) + ", this runtime reads " +
                  std::to_string(kVersion));
  if (!p.in.next() || tok.size() != 2 || tok[0] != "entry" || tok[1].empty())
    return p.fail("expected 'entry <symbol>'");
  plan.entry = std::string(tok[1]);
  size_t n;
  if (!p.count("imports", n))
    return false;
  for (size_t i = 0; i < n; ++i) {
    if (!p.in.next() || tok.size() != 2 || tok[0] != "import" || tok[1].empty())
      return p.fail("expected 'import <name>'");
    plan.imports.emplace_back(tok[1]);
  }
  if (!p.count("symbols", n))
    return false;
  for (size_t i = 0; i < n; ++i) {
    SymbolSpec s;
    if (!p.in.next() || tok.size() != 4 || tok[0] != "symbol" || tok[1].empty() ||
        !parseInt(tok[2], s.min) || !parseInt(tok[3], s.max) || s.min < 0 || s.max < s.min)
      return p.fail("expected 'symbol <name> <min> <max>' with 0 <= min <= max");
    s.name = std::string(tok[1]);
    plan.symbols.push_back(std::move(s));
  }
  return true;
}

/// Checks that caller inputs are numbered 0..m-1 once each and that every
/// symbol is read from some caller input dim (its value comes from there).
bool linkInputs(Parser &p, Plan &plan) {
  size_t users = 0;
  for (const InputSpec &in : plan.inputs)
    users += !in.weight;
  plan.userInputs.assign(users, -1);
  std::vector<char> bound(plan.symbols.size(), 0);
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    const InputSpec &in = plan.inputs[i];
    if (in.weight)
      continue;
    if ((size_t)in.user >= users || plan.userInputs[in.user] >= 0)
      return p.fail("caller input numbers are not 0.." + std::to_string(users - 1));
    plan.userInputs[in.user] = (int)i;
    for (const Dim &d : in.dims)
      if (d.symbol >= 0)
        bound[d.symbol] = 1;
  }
  for (size_t s = 0; s < bound.size(); ++s)
    if (!bound[s])
      return p.fail("symbol " + plan.symbols[s].name + " is no caller input's dim");
  return true;
}

} // namespace

bool parsePlan(std::string_view text, uint64_t weightsSize, Plan &plan, std::string &error) {
  Parser p{Reader(text), error};
  if (!parseHead(p, plan))
    return false;
  size_t n;
  if (!p.count("inputs", n))
    return false;
  for (size_t i = 0; i < n; ++i) {
    InputSpec in;
    if (!p.in.next() || !parseInput(p, plan, weightsSize, in))
      return error.empty() ? p.fail("missing input") : false;
    plan.inputs.push_back(std::move(in));
  }
  if (!linkInputs(p, plan) || !p.count("results", n))
    return false;
  for (size_t i = 0; i < n; ++i) {
    TensorSpec t;
    size_t at = 1;
    if (!p.in.next() || p.in.tokens()[0] != "result")
      return p.fail("expected 'result <dtype> <rank> <dims...>'");
    if (!p.tensor(at, plan.symbols.size(), t))
      return false;
    if (at != p.in.tokens().size())
      return p.fail("trailing fields");
    t.name = "result " + std::to_string(i);
    plan.results.push_back(std::move(t));
  }
  if (!p.count("outputs", n))
    return false;
  for (size_t i = 0; i < n; ++i) {
    const auto &tok = p.in.tokens();
    int64_t r;
    if (!p.in.next() || tok.size() != 3 || tok[0] != "output" || !parseInt(tok[1], r) || r < 0 ||
        (size_t)r >= plan.results.size() || tok[2].empty())
      return p.fail("expected 'output <result> <name>'");
    plan.outputs.push_back((int)r);
    plan.outputNames.emplace_back(tok[2]);
  }
  bool more = p.in.next() && !(p.in.tokens().size() == 1 && p.in.tokens()[0].empty());
  if (more && p.in.tokens()[0] == "index_check") {
    const auto &tok = p.in.tokens();
    int64_t r;
    if (tok.size() != 2 || !parseInt(tok[1], r) || r < 0 || (size_t)r >= plan.results.size() ||
        plan.results[r].dtype != DType::I64 || !plan.results[r].dims.empty())
      return p.fail("expected 'index_check <result>' naming a 0-d i64 result");
    plan.indexCheck = (int)r;
    more = p.in.next() && !(p.in.tokens().size() == 1 && p.in.tokens()[0].empty());
  }
  if (more)
    return p.fail("unexpected text after the outputs");
  return true;
}

} // namespace kiln::rt::artifact
