//===- ArtifactTest.cpp - a C++ program running an exported model --------------===//
// SPDX-License-Identifier: Apache-2.0
//
//   kiln-artifact-test <dir>    (dir: mlp.kiln, x.npy, y.npy from export_mlp.py)
//
// Through libkiln_runtime only: loads the MLP, checks its result against
// the JIT path's (y.npy), runs it from 4 threads at once (every result
// identical to the single-threaded one), checks spec violations name the
// input and dim, then loads 600 corrupted copies (truncations, bit flips in
// the header, the section table and every section, wrong versions, random
// byte overwrites): each must fail with an error or, when the damage lies in
// bytes nothing reads (padding between sections), still give the exact
// result; then, when the fixture has a CUDA artifact (mlp_cuda.kiln), 300
// damaged copies of it loaded on "cuda" without a driver (validation must
// reject them before the driver is needed). Exits nonzero on failures.
//===----------------------------------------------------------------------===//
#include "runtime/artifact/Npy.h"
#include "runtime/artifact/kiln_runtime.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <thread>

namespace {

using kiln::rt::artifact::NpyArray;

int failures = 0;

void expect(bool ok, const std::string &what) {
  if (!ok) {
    std::fprintf(stderr, "FAIL: %s\n", what.c_str());
    ++failures;
  }
}

std::vector<float> runOnce(const kiln::Model &model, NpyArray &x) {
  std::vector<kiln::TensorView> in{kiln::TensorView(x.data.data(), x.dtype, x.shape)};
  std::vector<int64_t> shape = model.outputShape(in, 0);
  std::vector<float> y(shape[0] * shape[1]);
  model.run(in, {kiln::TensorView(y.data(), shape)});
  return y;
}

void checkAgainstJit(const kiln::Model &model, NpyArray &x, NpyArray &jit) {
  std::vector<float> y = runOnce(model, x);
  const auto *ref = reinterpret_cast<const float *>(jit.data.data());
  double worst = 0;
  for (size_t i = 0; i < y.size(); ++i)
    worst = std::max(worst, (double)std::fabs(y[i] - ref[i]));
  expect(y.size() * 4 == jit.data.size() && worst <= 1e-5,
         "artifact result differs from the JIT path by " + std::to_string(worst));
}

void checkThreads(const kiln::Model &model, NpyArray &x) {
  std::vector<float> base = runOnce(model, x);
  std::vector<int> bad(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      NpyArray mine = x; // each thread its own input buffer
      for (int i = 0; i < 50; ++i)
        bad[t] += runOnce(model, mine) != base;
    });
  for (std::thread &t : threads)
    t.join();
  for (int t = 0; t < 4; ++t)
    expect(bad[t] == 0, "thread " + std::to_string(t) + " got a different result");
}

void checkSpecErrors(const kiln::Model &model, NpyArray &x) {
  std::vector<int64_t> wrong = {8, 783};
  std::vector<float> y(80);
  try {
    model.run({kiln::TensorView(x.data.data(), x.dtype, wrong)},
              {kiln::TensorView(y.data(), {8, 10})});
    expect(false, "a wrong input shape was accepted");
  } catch (const kiln::Error &e) {
    expect(e.status() == KILN_ERROR_SHAPE && std::strstr(e.what(), "input 0") &&
               std::strstr(e.what(), "dim 1"),
           std::string("shape error message: ") + e.what());
  }
  try {
    model.run({}, {kiln::TensorView(y.data(), {8, 10})});
    expect(false, "a missing input was accepted");
  } catch (const kiln::Error &e) {
    expect(e.status() == KILN_ERROR_INVALID_ARGUMENT, e.what());
  }
}

struct Section {
  uint64_t offset, size;
};

std::vector<Section> sectionsOf(const std::string &bytes) {
  uint32_t count;
  std::memcpy(&count, bytes.data() + 12, 4);
  std::vector<Section> out;
  for (uint32_t i = 0; i < count; ++i) {
    Section s;
    std::memcpy(&s.offset, bytes.data() + 64 + 32 * i + 8, 8);
    std::memcpy(&s.size, bytes.data() + 64 + 32 * i + 16, 8);
    out.push_back(s);
  }
  return out;
}

/// Loads `bytes` as a file: an error (true), or a model whose result must be
/// `base` exactly (false).
bool loadFails(const std::string &bytes, const std::string &path, NpyArray &x,
               const std::vector<float> &base, kiln_status &status) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), bytes.size());
  kiln_model *m = nullptr;
  status = kiln_model_load(path.c_str(), "cpu", &m);
  if (status != KILN_OK) {
    expect(m == nullptr && std::strlen(kiln_last_error()) > 0, "an error without a message");
    return true;
  }
  kiln_tensor in = x.tensor();
  int64_t shape[2] = {8, 10};
  std::vector<float> y(80);
  kiln_tensor out{y.data(), {1, 0}, 2, {2, 32, 1}, shape, nullptr, 0};
  expect(kiln_model_run(m, &in, 1, &out, 1) == KILN_OK && y == base,
         "a damaged artifact that loaded gave another result");
  kiln_model_free(m);
  return false;
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

/// Damaged copy i of `good` (kind i % 6): a truncation, a bit flip in the
/// header, the section table or a section (each in turn), a wrong version,
/// a random byte anywhere.
std::string mutate(const std::string &good, const std::vector<Section> &sections, int i,
                   std::mt19937_64 &rng) {
  std::string bad = good;
  int kind = i % 6;
  auto flip = [&](uint64_t begin, uint64_t size) {
    uint64_t at = begin + rng() % std::max<uint64_t>(size, 1);
    bad[at] = (char)(bad[at] ^ (1 << (rng() % 8)));
  };
  if (kind == 0)
    bad.resize(rng() % good.size());
  else if (kind == 1)
    flip(0, 64);
  else if (kind == 2)
    flip(64, 32 * sections.size());
  else if (kind == 3)
    flip(sections[(i / 6) % sections.size()].offset, sections[(i / 6) % sections.size()].size);
  else if (kind == 4)
    bad[8] = (char)(2 + rng() % 200);
  else
    bad[rng() % bad.size()] = (char)rng();
  return bad;
}

void fuzz(const std::string &path, NpyArray &x, const std::vector<float> &base,
          const std::string &tmp) {
  const std::string good = readFile(path);
  std::vector<Section> sections = sectionsOf(good);
  std::mt19937_64 rng(20);
  int loaded = 0;
  for (int i = 0; i < 600; ++i) {
    int kind = i % 6;
    std::string bad = mutate(good, sections, i, rng);
    kiln_status status;
    bool failed = loadFails(bad, tmp, x, base, status);
    loaded += !failed;
    if (kind != 5)
      expect(failed, "mutation " + std::to_string(i) + " (kind " + std::to_string(kind) +
                         ") was not detected");
    if (kind == 3)
      expect(status == KILN_ERROR_CHECKSUM, "a flipped section byte is not a checksum error");
    if (kind == 4)
      expect(status == KILN_ERROR_VERSION, "a wrong version is not a version error");
  }
  std::printf("fuzz: 600 damaged artifacts, %d still loaded (damage in unread padding) and "
              "gave the exact result\n",
              loaded);
}

/// The CUDA artifact (CPU + CUDA builds, mlp_cuda.kiln) loaded on "cuda"
/// with no driver: the intact file validates and stops at
/// KILN_ERROR_DRIVER; 300 damaged copies must fail validation first.
void fuzzCuda(const std::string &path, const std::string &tmp) {
  kiln_set_cuda_libraries("/nonexistent/libcuda.so.1", "");
  const std::string good = readFile(path);
  std::vector<Section> sections = sectionsOf(good);
  kiln_model *m = nullptr;
  kiln_status status = kiln_model_load(path.c_str(), "cuda", &m);
  expect(status == KILN_ERROR_DRIVER && std::strstr(kiln_last_error(), "CUDA driver not found"),
         std::string("the CUDA artifact without a driver: ") + kiln_last_error());
  std::mt19937_64 rng(21);
  int unread = 0;
  for (int i = 0; i < 300; ++i) {
    int kind = i % 6;
    std::string bad = mutate(good, sections, i, rng);
    std::ofstream(tmp, std::ios::binary | std::ios::trunc).write(bad.data(), bad.size());
    status = kiln_model_load(tmp.c_str(), "cuda", &m);
    expect(status != KILN_OK && !m, "a damaged CUDA artifact loaded without a driver");
    unread += status == KILN_ERROR_DRIVER;
    if (kind != 5)
      expect(status != KILN_ERROR_DRIVER, "CUDA mutation " + std::to_string(i) + " (kind " +
                                              std::to_string(kind) + ") was not detected");
    if (kind == 3)
      expect(status == KILN_ERROR_CHECKSUM, "a flipped CUDA artifact byte is not a checksum error");
  }
  std::printf("fuzz: 300 damaged CUDA artifacts, %d validated (damage in unread padding)\n",
              unread);
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: kiln-artifact-test <dir with mlp.kiln x.npy y.npy>\n");
    return 2;
  }
  std::string dir = argv[1];
  NpyArray x, jit;
  std::string error;
  if (!kiln::rt::artifact::readNpy(dir + "/x.npy", x, error) ||
      !kiln::rt::artifact::readNpy(dir + "/y.npy", jit, error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 2;
  }
  try {
    kiln::Model model(dir + "/mlp.kiln");
    checkAgainstJit(model, x, jit);
    checkThreads(model, x);
    checkSpecErrors(model, x);
    fuzz(dir + "/mlp.kiln", x, runOnce(model, x), dir + "/damaged.kiln");
    if (std::ifstream(dir + "/mlp_cuda.kiln").good()) // exported where NVRTC is built
      fuzzCuda(dir + "/mlp_cuda.kiln", dir + "/damaged_cuda.kiln");
  } catch (const kiln::Error &e) {
    std::fprintf(stderr, "FAIL: %s\n", e.what());
    return 1;
  }
  std::printf("%s\n", failures ? "FAILED" : "all artifact checks passed");
  return failures ? 1 : 0;
}
