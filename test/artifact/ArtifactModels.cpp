//===- ArtifactModels.cpp - exported models run from C++ ----------------------===//
// SPDX-License-Identifier: Apache-2.0
//
//   kiln-artifact-models <dir>    (dir: manifest.txt and files from export_zoo.py)
//
// Through libkiln_runtime only: for each `artifact input output` line of the
// manifest (MLP, CNN, BERT and GPT-2 blocks; static and dynamic batch /
// sequence, inputs at several sizes), loads the artifact once, asks the
// output's shape for the input, runs it and compares with the JIT path's
// output (max difference <= 1e-5 + 1e-5 * |expected|). Exits nonzero on a
// failure.
//===----------------------------------------------------------------------===//
#include "runtime/artifact/Npy.h"
#include "runtime/artifact/kiln_runtime.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

namespace {

using kiln::rt::artifact::NpyArray;

/// Runs `model` on x and compares with `jit`; an empty string when equal.
std::string check(const kiln::Model &model, NpyArray &x, NpyArray &jit) {
  std::vector<kiln::TensorView> in{kiln::TensorView(x.data.data(), x.dtype, x.shape)};
  std::vector<int64_t> shape = model.outputShape(in, 0);
  if (shape != jit.shape)
    return "output shape differs from the JIT path's";
  size_t n = 1;
  for (int64_t s : shape)
    n *= s;
  std::vector<float> y(n);
  model.run(in, {kiln::TensorView(y.data(), shape)});
  const auto *ref = reinterpret_cast<const float *>(jit.data.data());
  for (size_t i = 0; i < n; ++i)
    if (!(std::fabs(y[i] - ref[i]) <= 1e-5 + 1e-5 * std::fabs(ref[i])))
      return "element " + std::to_string(i) + " is " + std::to_string(y[i]) + ", the JIT path's " +
             std::to_string(ref[i]);
  return "";
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: kiln-artifact-models <dir with manifest.txt>\n");
    return 2;
  }
  std::string dir = argv[1];
  std::ifstream manifest(dir + "/manifest.txt");
  std::map<std::string, std::unique_ptr<kiln::Model>> models;
  int failures = 0, runs = 0;
  std::string line;
  while (std::getline(manifest, line)) {
    std::istringstream fields(line);
    std::string artifact, xPath, yPath, error;
    if (!(fields >> artifact >> xPath >> yPath))
      continue;
    NpyArray x, jit;
    std::string what = artifact + " on " + xPath;
    try {
      if (!kiln::rt::artifact::readNpy(dir + "/" + xPath, x, error) ||
          !kiln::rt::artifact::readNpy(dir + "/" + yPath, jit, error)) {
        error = "fixture: " + error;
      } else {
        auto &model = models[artifact];
        if (!model)
          model = std::make_unique<kiln::Model>(dir + "/" + artifact);
        error = check(*model, x, jit);
      }
    } catch (const kiln::Error &e) {
      error = e.what();
    }
    ++runs;
    if (!error.empty()) {
      std::fprintf(stderr, "FAIL: %s: %s\n", what.c_str(), error.c_str());
      ++failures;
    }
  }
  if (runs == 0) {
    std::fprintf(stderr, "FAIL: no runs in %s/manifest.txt\n", dir.c_str());
    return 1;
  }
  std::printf("%d runs of %zu artifacts: %s\n", runs, models.size(),
              failures ? "FAILED" : "all equal the JIT path");
  return failures ? 1 : 0;
}
