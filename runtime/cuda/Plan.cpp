//===- Plan.cpp - a function's whole launch plan in one call --------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements Plan.h: the spec parser, the run loop (buffer addresses once
// per run, then kernels through cuLaunchKernel and GEMMs through
// cuBLASLt on one stream) and CUDA graph capture/replay with the driver's
// stream capture.
//===----------------------------------------------------------------------===//
#include "runtime/cuda/Plan.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

namespace kiln::rt::cuda {
namespace {

bool driverCheck(const DriverApi &api, CUresult r, const char *what, std::string &error) {
  if (r == 0)
    return true;
  error = std::string(what) + " failed: " + errorText(api, r);
  return false;
}

bool validBuffer(int b, size_t n) { return b >= 0 && (size_t)b < n; }

/// The whitespace-separated fields of one spec line, read like an
/// istream (`in >> word >> n`, false once a read failed). Not iostreams:
/// this library runs inside other processes (Python, torch), and when the
/// process's libstdc++ is older than the compiler that built it, stream
/// extraction finds no locale facets (seen on the first GPU machine: a
/// crash in Release, every number rejected in Debug).
class Fields {
public:
  explicit Fields(const std::string &s) : s_(s) {}
  Fields &operator>>(std::string &w) {
    while (pos_ < s_.size() && std::isspace((unsigned char)s_[pos_]))
      ++pos_;
    size_t begin = pos_;
    while (pos_ < s_.size() && !std::isspace((unsigned char)s_[pos_]))
      ++pos_;
    w = s_.substr(begin, pos_ - begin);
    ok_ = ok_ && !w.empty();
    return *this;
  }
  template <typename T> Fields &operator>>(T &v) {
    std::string w;
    if (!(*this >> w))
      return *this;
    errno = 0;
    char *end = nullptr;
    long long x = std::strtoll(w.c_str(), &end, 10);
    if (*end || errno)
      ok_ = false;
    else
      v = static_cast<T>(x);
    return *this;
  }
  explicit operator bool() const { return ok_; }

private:
  const std::string &s_;
  size_t pos_ = 0;
  bool ok_ = true;
};

} // namespace

std::unique_ptr<Plan> Plan::create(Module &module, const std::string &spec, std::string &error) {
  std::unique_ptr<Plan> p(new Plan());
  int lineNo = 0;
  for (size_t at = 0; at < spec.size();) {
    size_t end = spec.find('\n', at);
    if (end == std::string::npos)
      end = spec.size();
    std::string line = spec.substr(at, end - at);
    at = end + 1;
    ++lineNo;
    if (line.empty())
      continue;
    if (!p->parseLine(module, line, error)) {
      error = "kiln plan line " + std::to_string(lineNo) + " (" + line + "): " + error;
      return nullptr;
    }
  }
  if (p->buffers_.empty() && p->steps_.empty() && lineNo == 0) {
    error = "kiln plan: empty spec";
    return nullptr;
  }
  p->ptrs_.resize(p->buffers_.size());
  return p;
}

bool Plan::parseLine(Module &module, const std::string &line, std::string &error) {
  Fields in(line);
  std::string word;
  in >> word;
  if (word == "kiln-plan") {
    int version = 0, n = 0;
    in >> version >> n >> numInputs_ >> numOutputs_;
    if (!in || version != 1) {
      error = "expected `kiln-plan 1 <buffers> <inputs> <outputs>`";
      return false;
    }
    buffers_.resize(n);
    return true;
  }
  if (word == "buf") {
    int i = -1;
    std::string kind;
    size_t where = 0;
    in >> i >> kind >> where;
    if (!in || !validBuffer(i, buffers_.size()) ||
        (kind != "in" && kind != "out" && kind != "tmp" && kind != "val")) {
      error = "bad buffer line";
      return false;
    }
    Buffer &b = buffers_[i];
    b.kind = kind == "in"    ? Buffer::In
             : kind == "out" ? Buffer::Out
             : kind == "val" ? Buffer::Val
                             : Buffer::Tmp;
    b.index = where;
    if ((b.kind == Buffer::In && where >= (size_t)numInputs_) ||
        (b.kind == Buffer::Out && where >= (size_t)numOutputs_)) {
      error = "buffer position out of range";
      return false;
    }
    return true;
  }
  if (word == "ws") {
    in >> wsOffset_ >> wsBytes_;
    if (!in)
      error = "bad workspace line";
    return (bool)in;
  }
  Step s;
  if (word == "kernel") {
    std::string name;
    int n = 0;
    in >> name >> s.dims.grid[0] >> s.dims.grid[1] >> s.dims.grid[2] >> s.dims.block[0] >>
        s.dims.block[1] >> s.dims.block[2] >> s.dims.sharedBytes >> n;
    s.args.resize(n > 0 ? n : 0);
    for (int &a : s.args)
      in >> a;
    if (!in) {
      error = "bad kernel line";
      return false;
    }
    s.kernel = module.kernel(name, error);
    if (!s.kernel)
      return false;
  } else if (word == "gemm") {
    GemmDesc g;
    int inType = 0, outType = 0, transB = 0, tf32 = 0, epi = 0;
    in >> inType >> outType >> g.batch >> g.m >> g.n >> g.k >> transB >> tf32 >> epi;
    s.args.resize(4);
    for (int &a : s.args)
      in >> a;
    if (!in || epi < 0 || epi > 5 || g.batch < 1) {
      error = "bad gemm line";
      return false;
    }
    g.inType = (DataType)inType;
    g.outType = (DataType)outType;
    g.transB = transB != 0;
    g.tf32 = tf32 != 0;
    g.epilogue = (Epilogue)epi;
    LtCall call;
    if (!lowerGemm(g, call, error))
      return false;
    bool needsBias = g.epilogue == Epilogue::Bias || g.epilogue == Epilogue::BiasRelu ||
                     g.epilogue == Epilogue::BiasGeluTanh;
    if (needsBias != (s.args[3] >= 0)) {
      error = "gemm bias buffer does not match its epilogue";
      return false;
    }
    s.gemm = (int)gemms_.size();
    gemms_.push_back(std::make_unique<LtGemm>(g));
  } else {
    error = "unknown step `" + word + "`";
    return false;
  }
  for (int a : s.args)
    if (a != -1 && !validBuffer(a, buffers_.size())) {
      error = "buffer index out of range";
      return false;
    }
  steps_.push_back(std::move(s));
  return true;
}

int Plan::numKernels() const {
  int n = 0;
  for (const Step &s : steps_)
    n += s.kernel != nullptr;
  return n;
}

bool Plan::run(void *const *inputs, void *const *outputs, void *arena, CUstream stream,
               std::string &error) {
  char *base = static_cast<char *>(arena);
  for (size_t i = 0; i < buffers_.size(); ++i) {
    const Buffer &b = buffers_[i];
    // A `val` slot holds its value in the pointer's 8 bytes: cuLaunchKernel
    // reads a `long long` parameter from there.
    ptrs_[i] = b.kind == Buffer::In    ? inputs[b.index]
               : b.kind == Buffer::Out ? outputs[b.index]
               : b.kind == Buffer::Val ? reinterpret_cast<void *>(b.index)
                                       : base + b.index;
  }
  void *ws = wsBytes_ ? base + wsOffset_ : nullptr;
  for (const Step &s : steps_) {
    if (s.kernel) {
      argPtrs_.resize(s.args.size());
      for (size_t i = 0; i < s.args.size(); ++i)
        argPtrs_[i] = ptrs_[s.args[i]];
      if (!launch(*s.kernel, s.dims, stream, argPtrs_.data(), (int)argPtrs_.size(), error))
        return false;
      continue;
    }
    const void *bias = s.args[3] >= 0 ? ptrs_[s.args[3]] : nullptr;
    if (!gemms_[s.gemm]->run(ptrs_[s.args[0]], ptrs_[s.args[1]], ptrs_[s.args[2]], bias, ws,
                             wsBytes_, stream, error))
      return false;
  }
  return true;
}

std::unique_ptr<CapturedPlan> CapturedPlan::capture(Plan &plan, void *const *inputs,
                                                    void *const *outputs, void *arena,
                                                    std::string &error) {
  const DriverApi *api = driver(error);
  if (!api)
    return nullptr;
  std::unique_ptr<CapturedPlan> g(new CapturedPlan());
  g->api_ = api;
  // torch's current stream may be the legacy default stream, which cannot
  // be captured: capture on a private stream (capturing runs nothing, so it
  // needs no ordering with the caller's stream); replays go on the caller's.
  CUstream side = nullptr;
  if (!driverCheck(*api, api->cuStreamCreate(&side, 1 /*CU_STREAM_NON_BLOCKING*/), "cuStreamCreate",
                   error))
    return nullptr;
  bool ok = driverCheck(*api, api->cuStreamBeginCapture(side, kCaptureThreadLocal),
                        "cuStreamBeginCapture", error);
  if (ok) {
    std::string runError;
    bool ran = plan.run(inputs, outputs, arena, side, runError);
    // End the capture in every case (a failed step invalidates it).
    CUresult r = api->cuStreamEndCapture(side, &g->graph_);
    if (!ran) {
      error = "capturing the plan: " + runError;
      ok = false;
    } else {
      ok = driverCheck(*api, r, "cuStreamEndCapture", error) &&
           driverCheck(*api, api->cuGraphInstantiateWithFlags(&g->exec_, g->graph_, 0),
                       "cuGraphInstantiateWithFlags", error);
    }
  }
  api->cuStreamDestroy(side);
  return ok ? std::move(g) : nullptr;
}

CapturedPlan::~CapturedPlan() {
  if (exec_)
    api_->cuGraphExecDestroy(exec_);
  if (graph_)
    api_->cuGraphDestroy(graph_);
}

bool CapturedPlan::replay(int n, void *const *dst, void *const *src, const size_t *bytes,
                          CUstream stream, std::string &error) {
  for (int i = 0; i < n; ++i)
    if (!driverCheck(
            *api_,
            api_->cuMemcpyDtoDAsync((CUdeviceptr)dst[i], (CUdeviceptr)src[i], bytes[i], stream),
            "cuMemcpyDtoDAsync (static input)", error))
      return false;
  return driverCheck(*api_, api_->cuGraphLaunch(exec_, stream), "cuGraphLaunch", error);
}

} // namespace kiln::rt::cuda
