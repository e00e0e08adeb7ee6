//===- CompileCacheTest.cpp - the on-disk compile cache -----------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// runtime/CompileCache: entries round-trip; truncated, bit-flipped, foreign
// and wrong-key files are never returned; writes leave no temporary files.
// codegen: a second compileForCpu of the same module (fresh MLIRContext)
// loads the object from disk and computes the same result; a corrupt entry
// is reported, recompiled and replaced.
//===----------------------------------------------------------------------===//
#include "registration/Registration.h"
#include "codegen/cpu/JitCompiler.h"
#include "runtime/CompileCache.h"
#include "runtime/MemRefDescriptor.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

using kiln::rt::CacheLookup;
using kiln::rt::DiskCache;

/// A fresh temporary folder, removed (with its files) at the end.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/kiln-cache-test-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    for (const std::string &f : files())
      ::unlink((path + "/" + f).c_str());
    ::rmdir(path.c_str());
  }
  std::vector<std::string> files() const {
    std::vector<std::string> out;
    if (DIR *d = ::opendir(path.c_str())) {
      while (dirent *e = ::readdir(d))
        if (e->d_name[0] != '.')
          out.push_back(e->d_name);
      ::closedir(d);
    }
    return out;
  }
};

std::string readAll(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void writeAll(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

TEST(DiskCacheTest, StoreThenLoadRoundTrips) {
  TempDir dir;
  DiskCache cache(dir.path + "/nested/folder");
  std::string payload("\0\1binary\xff payload", 17), error;
  EXPECT_EQ(cache.load("key").status, CacheLookup::Status::Miss);
  ASSERT_TRUE(cache.store("key", payload, error)) << error;
  CacheLookup r = cache.load("key");
  ASSERT_EQ(r.status, CacheLookup::Status::Hit) << r.message;
  EXPECT_EQ(r.payload, payload);
  EXPECT_EQ(cache.load("other key").status, CacheLookup::Status::Miss);
  // Overwriting is atomic and leaves no temporary file behind.
  ASSERT_TRUE(cache.store("key", "second", error)) << error;
  EXPECT_EQ(cache.load("key").payload, "second");
  TempDir nested;
  DiskCache flat(nested.path);
  ASSERT_TRUE(flat.store("a", "1", error));
  ASSERT_TRUE(flat.store("b", "2", error));
  EXPECT_EQ(nested.files().size(), 2u);
  for (const std::string &f : nested.files())
    EXPECT_EQ(f.find(".tmp."), std::string::npos) << f;
  ::unlink(cache.entryPath("key").c_str());
  ::rmdir((dir.path + "/nested/folder").c_str());
  ::rmdir((dir.path + "/nested").c_str());
}

TEST(DiskCacheTest, EveryTruncationIsCorrupt) {
  std::string entry = DiskCache::encode("the key", "the payload bytes");
  ASSERT_EQ(DiskCache::decode(entry, "the key").status, CacheLookup::Status::Hit);
  for (size_t n = 0; n < entry.size(); ++n)
    EXPECT_EQ(DiskCache::decode(entry.substr(0, n), "the key").status, CacheLookup::Status::Corrupt)
        << "truncated to " << n << " bytes";
  EXPECT_EQ(DiskCache::decode(entry + "x", "the key").status, CacheLookup::Status::Corrupt);
}

TEST(DiskCacheTest, EveryFlippedByteIsCorruptOrMiss) {
  std::string entry = DiskCache::encode("the key", "the payload bytes");
  for (size_t i = 0; i < entry.size(); ++i) {
    std::string bad = entry;
    bad[i] ^= 0x20;
    CacheLookup r = DiskCache::decode(bad, "the key");
    EXPECT_NE(r.status, CacheLookup::Status::Hit) << "flipped byte " << i;
  }
  CacheLookup r = DiskCache::decode(std::string(100, 'x'), "k");
  EXPECT_EQ(r.status, CacheLookup::Status::Corrupt);
  EXPECT_EQ(r.message, "bad magic");
}

TEST(DiskCacheTest, EntryOfAnotherKeyIsAMiss) {
  TempDir dir;
  DiskCache cache(dir.path);
  // Simulates a digest collision: the file for "mine" holds "theirs".
  writeAll(cache.entryPath("mine"), DiskCache::encode("theirs", "payload"));
  EXPECT_EQ(cache.load("mine").status, CacheLookup::Status::Miss);
}

constexpr const char *kModule = R"mlir(
  func.func @forward(%x: tensor<16x32xf32>, %w: tensor<32x8xf32>) -> tensor<16x8xf32> {
    %m = kiln.matmul %x, %w : tensor<16x32xf32>, tensor<32x8xf32>
    %r = kiln.tanh %m : tensor<16x8xf32>
    return %r : tensor<16x8xf32>
  })mlir";

/// Compiles kModule in a fresh context with `cacheDir` and runs it on
/// fixed inputs; returns the 16x8 output.
std::vector<float> compileAndRun(const std::string &cacheDir, mlir::kiln::CpuCompileInfo &info) {
  mlir::MLIRContext ctx;
  mlir::DialectRegistry registry;
  mlir::kiln::registerAllDialects(registry);
  ctx.appendDialectRegistry(registry);
  auto module = mlir::parseSourceString<mlir::ModuleOp>(kModule, &ctx);
  mlir::kiln::CpuCompileOptions options;
  options.cacheDir = cacheDir;
  std::string error;
  kiln::rt::CompiledFunction fn =
      mlir::kiln::compileForCpu(*module, "forward", options, error, &info);
  EXPECT_TRUE(fn.entry) << error;
  if (!fn.entry)
    return {};
  std::vector<float> x(16 * 32), w(32 * 8), out(16 * 8);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = 0.01f * float(i % 97) - 0.3f;
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = 0.02f * float(i % 31) - 0.25f;
  int64_t xs[] = {16, 32}, xst[] = {32, 1}, ws[] = {32, 8}, wst[] = {8, 1}, os[] = {16, 8},
          ost[] = {8, 1};
  kiln::rt::MemRefDescriptor dx, dw, dout;
  dx.reset(x.data(), xs, xst, 2);
  dw.reset(w.data(), ws, wst, 2);
  dout.reset(out.data(), os, ost, 2);
  void *ptrs[] = {dx.data(), dw.data(), dout.data()};
  void *args[] = {&ptrs[0], &ptrs[1], &ptrs[2]};
  fn(args);
  return out;
}

TEST(DiskCacheTest, SecondCompileLoadsTheObject) {
  TempDir dir;
  mlir::kiln::CpuCompileInfo cold, warm, corrupt, off;
  std::vector<float> first = compileAndRun(dir.path, cold);
  EXPECT_FALSE(cold.diskHit);
  EXPECT_TRUE(cold.diskMiss);
  EXPECT_TRUE(cold.diskStored) << cold.cacheMessage;
  ASSERT_EQ(dir.files().size(), 1u);
  std::vector<float> second = compileAndRun(dir.path, warm);
  EXPECT_TRUE(warm.diskHit) << warm.cacheMessage;
  EXPECT_FALSE(warm.diskStored);
  EXPECT_EQ(first, second);
  // A bit flipped in the stored object: reported, recompiled, replaced.
  std::string path = dir.path + "/" + dir.files()[0];
  std::string bytes = readAll(path);
  bytes[bytes.size() / 2] ^= 1;
  writeAll(path, bytes);
  std::vector<float> third = compileAndRun(dir.path, corrupt);
  EXPECT_TRUE(corrupt.diskCorrupt);
  EXPECT_FALSE(corrupt.diskHit);
  EXPECT_NE(corrupt.cacheMessage.find("checksum mismatch"), std::string::npos)
      << corrupt.cacheMessage;
  EXPECT_TRUE(corrupt.diskStored);
  EXPECT_EQ(first, third);
  EXPECT_EQ(DiskCache::decode(readAll(path), "x").status, CacheLookup::Status::Miss);
  // No folder: the cache is off and nothing is counted.
  compileAndRun("", off);
  EXPECT_FALSE(off.diskHit || off.diskMiss || off.diskStored);
}

} // namespace
