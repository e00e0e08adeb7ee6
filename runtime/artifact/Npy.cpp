//===- Npy.cpp - reading NumPy .npy files for kiln-run ------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements Npy.h: the magic, version, header length, then the header's
// Python dict literal ('descr', 'fortran_order', 'shape'), read by finding
// its keys.
//===----------------------------------------------------------------------===//
#include "runtime/artifact/Npy.h"

#include <cstring>
#include <fstream>
#include <iterator>

namespace kiln::rt::artifact {
namespace {

/// The text after `key` in the header up to the next `stop`, or "".
std::string field(const std::string &header, const std::string &key, char stop) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos)
    return "";
  at = header.find(':', at);
  if (at == std::string::npos)
    return "";
  size_t end = header.find(stop, at + 1);
  return end == std::string::npos ? "" : header.substr(at + 1, end - at - 1);
}

bool dtypeOf(const std::string &descr, kiln_dtype &d) {
  struct Known {
    const char *descr;
    kiln_dtype dtype;
  };
  const Known known[] = {{"<f4", {2, 32, 1}}, {"<f8", {2, 64, 1}}, {"<f2", {2, 16, 1}},
                         {"<i8", {0, 64, 1}}, {"<i4", {0, 32, 1}}, {"|b1", {6, 8, 1}}};
  for (const Known &k : known)
    if (descr.find(std::string("'") + k.descr + "'") != std::string::npos) {
      d = k.dtype;
      return true;
    }
  return false;
}

} // namespace

bool readNpy(const std::string &path, NpyArray &out, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) {
    error = path + ": cannot read";
    return false;
  }
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) {
    error = path + ": not a .npy file";
    return false;
  }
  int major = (unsigned char)bytes[6];
  size_t lenBytes = major == 1 ? 2 : 4, len = 0;
  for (size_t i = 0; i < lenBytes; ++i)
    len |= (size_t)(unsigned char)bytes[8 + i] << (8 * i);
  size_t start = 8 + lenBytes + len;
  if (start > bytes.size()) {
    error = path + ": truncated header";
    return false;
  }
  std::string header = bytes.substr(8 + lenBytes, len);
  if (!dtypeOf(field(header, "descr", ','), out.dtype) ||
      field(header, "fortran_order", ',').find("False") == std::string::npos) {
    error = path + ": unsupported dtype or Fortran order (header " + header + ")";
    return false;
  }
  std::string shape = field(header, "shape", ')');
  size_t lp = shape.find('(');
  int64_t numel = 1;
  for (const char *p = shape.c_str() + (lp == std::string::npos ? 0 : lp + 1); *p;) {
    char *end;
    long long v = std::strtoll(p, &end, 10);
    if (end == p) {
      ++p;
      continue;
    }
    // A negative size or a product past the file's size is a bad header
    // (checked before multiplying on: no overflow).
    if (v < 0 || (v > 0 && numel > (int64_t)(bytes.size() - start) / v)) {
      error = path + ": bad shape in header " + header;
      return false;
    }
    out.shape.push_back(v);
    numel *= v;
    p = end;
  }
  size_t need = (size_t)numel * (out.dtype.bits / 8);
  if (bytes.size() - start < need) {
    error = path + ": truncated data";
    return false;
  }
  out.data.assign(bytes.begin() + start, bytes.begin() + start + need);
  return true;
}

} // namespace kiln::rt::artifact
