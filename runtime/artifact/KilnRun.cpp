//===- KilnRun.cpp - kiln-run: run a .kiln artifact from the shell -------------===//
// SPDX-License-Identifier: Apache-2.0
//
//   kiln-run model.kiln --inputs a.npy b.npy [--bench N] [--threads N] [--blas MKL]
//            [--device cpu|cpu-baseline|cuda:N]   (CUDA: host inputs copied in and out)
//            [--cuda-driver PATH] [--cublaslt PATH] (other libraries than libcuda.so.1, ...)
//
// Loads the artifact (printing the load time), runs it on the .npy inputs
// and prints each output's name, shape, dtype and checksum (the sum of its
// elements as double, and a CRC-32 of its bytes); with --bench N, runs N
// more times and prints latency percentiles. Uses only the C++ wrapper of
// libkiln_runtime (kiln_runtime.hpp), like any deployment would.
//===----------------------------------------------------------------------===//
#include "runtime/artifact/Npy.h"
#include "runtime/artifact/kiln_runtime.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <zlib.h>

namespace {

using Clock = std::chrono::steady_clock;
using kiln::rt::artifact::NpyArray;

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

struct Args {
  std::string model;
  std::vector<std::string> inputs;
  int bench = 0;
  int threads = 0;
  std::string blas;
  std::string device = "cpu";
  std::string cudaDriver, cublasLt; ///< "" : libcuda.so.1, libcublasLt.so.N
};

bool parseArgs(int argc, char **argv, Args &a) {
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (s == "--inputs") {
      while (i + 1 < argc && std::strncmp(argv[i + 1], "--", 2) != 0)
        a.inputs.push_back(argv[++i]);
    } else if (s == "--blas" && i + 1 < argc) {
      a.blas = argv[++i];
    } else if (s == "--device" && i + 1 < argc) {
      a.device = argv[++i];
    } else if (s == "--cuda-driver" && i + 1 < argc) {
      a.cudaDriver = argv[++i];
    } else if (s == "--cublaslt" && i + 1 < argc) {
      a.cublasLt = argv[++i];
    } else if ((s == "--bench" || s == "--threads") && i + 1 < argc) {
      (s == "--bench" ? a.bench : a.threads) = std::atoi(argv[++i]);
    } else if (a.model.empty() && s.rfind("--", 0) != 0) {
      a.model = s;
    } else {
      return false;
    }
  }
  return !a.model.empty();
}

double elementSum(const NpyArray &a) {
  double sum = 0;
  size_t n = a.data.size() / (a.dtype.bits / 8);
  for (size_t i = 0; i < n; ++i) {
    const char *p = a.data.data() + i * (a.dtype.bits / 8);
    if (a.dtype.code == 2 && a.dtype.bits == 32)
      sum += *reinterpret_cast<const float *>(p);
    else if (a.dtype.code == 2 && a.dtype.bits == 64)
      sum += *reinterpret_cast<const double *>(p);
    else if (a.dtype.code == 0 && a.dtype.bits == 64)
      sum += (double)*reinterpret_cast<const int64_t *>(p);
    else if (a.dtype.code == 0 && a.dtype.bits == 32)
      sum += *reinterpret_cast<const int32_t *>(p);
    else if (a.dtype.code == 6)
      sum += *p != 0;
  }
  return sum;
}

void printOutputs(const kiln::Model &model, std::vector<NpyArray> &outs) {
  for (size_t k = 0; k < outs.size(); ++k) {
    const char *name;
    kiln::check(kiln_model_output_info(model.get(), k, &name, nullptr, nullptr, nullptr));
    std::string shape;
    for (int64_t s : outs[k].shape)
      shape += (shape.empty() ? "" : ", ") + std::to_string(s);
    unsigned crc =
        crc32(0, reinterpret_cast<const Bytef *>(outs[k].data.data()), (uInt)outs[k].data.size());
    std::printf("output %zu '%s': shape [%s] dtype code %d bits %d sum %.6g crc32 %08x\n", k, name,
                shape.c_str(), outs[k].dtype.code, outs[k].dtype.bits, elementSum(outs[k]), crc);
  }
}

} // namespace

int main(int argc, char **argv) {
  Args args;
  if (!parseArgs(argc, argv, args)) {
    std::fprintf(stderr, "usage: kiln-run model.kiln --inputs a.npy ... [--bench N] "
                         "[--threads N] [--blas path/to/libmkl_rt.so.2] [--device cpu|cuda:N] "
                         "[--cuda-driver libcuda.so.1] [--cublaslt PATH]\n");
    return 2;
  }
  if (args.threads > 0)
    kiln_set_num_threads(args.threads);
  kiln_set_cuda_libraries(args.cudaDriver.c_str(), args.cublasLt.c_str());
  if (!args.blas.empty() && !kiln_set_blas_library(args.blas.c_str()))
    std::fprintf(stderr, "kiln-run: cannot use BLAS %s; using OpenBLAS\n", args.blas.c_str());
  try {
    auto t0 = Clock::now();
    kiln::Model model(args.model, args.device);
    std::printf("loaded %s in %.2f ms\n", args.model.c_str(), ms(Clock::now() - t0));
    std::vector<NpyArray> ins(args.inputs.size());
    std::vector<kiln::TensorView> views;
    for (size_t i = 0; i < ins.size(); ++i) {
      std::string error;
      if (!kiln::rt::artifact::readNpy(args.inputs[i], ins[i], error)) {
        std::fprintf(stderr, "kiln-run: %s\n", error.c_str());
        return 1;
      }
      views.emplace_back(ins[i].data.data(), ins[i].dtype, ins[i].shape);
    }
    std::vector<NpyArray> outs(model.numOutputs());
    std::vector<kiln::TensorView> outViews;
    for (size_t k = 0; k < outs.size(); ++k) {
      outs[k].shape = model.outputShape(views, k);
      int32_t ndim;
      kiln::check(kiln_model_output_info(model.get(), k, nullptr, &outs[k].dtype, &ndim, nullptr));
      int64_t n = outs[k].dtype.bits / 8;
      for (int64_t s : outs[k].shape)
        n *= s;
      outs[k].data.assign((size_t)n, 0);
      outViews.emplace_back(outs[k].data.data(), outs[k].dtype, outs[k].shape);
    }
    auto t1 = Clock::now();
    model.run(views, outViews);
    std::printf("first run %.3f ms\n", ms(Clock::now() - t1));
    printOutputs(model, outs);
    std::vector<double> times;
    for (int i = 0; i < args.bench; ++i) {
      auto t = Clock::now();
      model.run(views, outViews);
      times.push_back(ms(Clock::now() - t));
    }
    if (!times.empty()) {
      std::sort(times.begin(), times.end());
      auto pct = [&](double p) {
        return times[std::min(times.size() - 1, (size_t)(p * times.size()))];
      };
      std::printf("latency over %zu runs: p50 %.3f ms  p90 %.3f ms  p99 %.3f ms  min %.3f ms\n",
                  times.size(), pct(0.5), pct(0.9), pct(0.99), times.front());
    }
  } catch (const kiln::Error &e) {
    std::fprintf(stderr, "kiln-run: %s\n", e.what());
    return 1;
  }
  return 0;
}
