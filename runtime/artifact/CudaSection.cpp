//===- CudaSection.cpp - an artifact's CUDA plan and images ---------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements CudaSection.h: a strict line parser (every number whole and
// in range, every count bounded) for untrusted input.
//===----------------------------------------------------------------------===//
#include "runtime/artifact/CudaSection.h"

#include <algorithm>
#include <charconv>

namespace kiln::rt::artifact {
namespace {

constexpr int64_t kMaxImages = 64;
constexpr int64_t kMaxArena = int64_t(1) << 40;

/// The text's lines, one at a time, split at single spaces.
struct Lines {
  std::string_view text;
  size_t pos = 0;
  int number = 0;
  std::vector<std::string_view> tokens;

  bool next() {
    tokens.clear();
    if (pos >= text.size())
      return false;
    size_t end = text.find('\n', pos);
    std::string_view line = text.substr(pos, end == std::string_view::npos ? end : end - pos);
    pos = end == std::string_view::npos ? text.size() : end + 1;
    ++number;
    for (size_t at = 0; at <= line.size();) {
      size_t sp = line.find(' ', at);
      tokens.push_back(line.substr(at, sp == std::string_view::npos ? sp : sp - at));
      if (sp == std::string_view::npos)
        break;
      at = sp + 1;
    }
    return true;
  }
};

bool number(std::string_view t, int64_t lo, int64_t hi, int64_t &out) {
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
  return !t.empty() && ec == std::errc() && end == t.data() + t.size() && out >= lo && out <= hi;
}

/// Reads "<word> <n>" with n in [lo, hi].
bool counted(Lines &in, std::string_view word, int64_t lo, int64_t hi, int64_t &n) {
  return in.next() && in.tokens.size() == 2 && in.tokens[0] == word &&
         number(in.tokens[1], lo, hi, n);
}

bool parseImages(Lines &in, std::string_view images, CudaSection &out) {
  int64_t n = 0;
  if (!counted(in, "images", 1, kMaxImages, n))
    return false;
  for (int64_t i = 0; i < n; ++i) {
    int64_t offset = 0, size = 0;
    if (!in.next() || in.tokens.size() != 4 || in.tokens[0] != "image" ||
        !number(in.tokens[2], 0, (int64_t)images.size(), offset) ||
        !number(in.tokens[3], 0, (int64_t)images.size() - offset, size))
      return false;
    std::string name(in.tokens[1]);
    int64_t arch = 0;
    if (name != "ptx" && name != "cuda" && !number(name, 10, 1000, arch))
      return false;
    for (const CudaImage &other : out.images)
      if (other.name == name)
        return false;
    out.images.push_back({name, images.substr(offset, size)});
  }
  for (const CudaImage &im : out.images)
    if (im.name != "cuda")
      return true; // code to load, not only the source
  return false;
}

/// The spec's first line, "kiln-plan 1 <buffers> <inputs> <outputs>",
/// against the Plan section and the results' outputs.
bool checkSpecHeader(std::string_view spec, const Plan &plan, int outputs) {
  Lines in{spec};
  int64_t version = 0, buffers = 0, inputs = 0, outs = 0;
  return in.next() && in.tokens.size() == 5 && in.tokens[0] == "kiln-plan" &&
         number(in.tokens[1], 1, 1, version) && number(in.tokens[2], 0, 1 << 24, buffers) &&
         number(in.tokens[3], 0, 1 << 24, inputs) && number(in.tokens[4], 0, 1 << 24, outs) &&
         inputs == (int64_t)plan.inputs.size() && outs == outputs;
}

} // namespace

const CudaImage *CudaSection::imageFor(int arch) const {
  const CudaImage *ptx = nullptr;
  for (const CudaImage &im : images) {
    if (im.name == std::to_string(arch))
      return &im;
    if (im.name == "ptx")
      ptx = &im;
  }
  return ptx;
}

std::string CudaSection::describeImages() const {
  std::string out;
  for (const CudaImage &im : images) {
    if (im.name == "cuda")
      continue;
    out += (out.empty() ? "" : ", ") + (im.name == "ptx" ? std::string("PTX") : "sm_" + im.name);
  }
  return out;
}

bool parseCudaSection(std::string_view text, std::string_view images, const Plan &plan,
                      CudaSection &out, std::string &error) {
  Lines in{text};
  auto fail = [&](const std::string &why) {
    error = "CUDA plan line " + std::to_string(in.number) + ": " + why;
    return false;
  };
  int64_t n = 0;
  if (!in.next() || in.tokens.size() != 2 || in.tokens[0] != "kiln-cuda" || in.tokens[1] != "1")
    return fail("expected `kiln-cuda 1`");
  if (!counted(in, "arena", 0, kMaxArena, n))
    return fail("expected `arena <bytes>`");
  out.arenaBytes = (uint64_t)n;
  if (!parseImages(in, images, out))
    return fail("bad image list (names unique: an sm arch, ptx or cuda; ranges inside the "
                "CUDA images section; at least one cubin or PTX)");
  if (!counted(in, "results", 0, 1 << 20, n) || n != (int64_t)plan.results.size())
    return fail("expected `results " + std::to_string(plan.results.size()) + "`");
  for (int64_t r = 0; r < n; ++r) {
    int64_t index = 0, j = 0;
    if (!in.next() || in.tokens.size() != 4 || in.tokens[0] != "result" ||
        !number(in.tokens[1], r, r, index) || in.tokens[2] != "out" ||
        !number(in.tokens[3], 0, 1 << 20, j))
      return fail("expected `result " + std::to_string(r) + " out <j>`");
    out.resultOutput.push_back((int)j);
    out.numPlanOutputs = std::max(out.numPlanOutputs, (int)j + 1);
  }
  if (!in.next() || in.tokens.size() != 1 || in.tokens[0] != "spec")
    return fail("expected `spec`");
  out.spec = std::string(text.substr(in.pos));
  if (!checkSpecHeader(out.spec, plan, out.numPlanOutputs))
    return fail("the launch plan's header does not match the artifact's inputs (" +
                std::to_string(plan.inputs.size()) + ") and outputs (" +
                std::to_string(out.numPlanOutputs) + ")");
  return true;
}

} // namespace kiln::rt::artifact
