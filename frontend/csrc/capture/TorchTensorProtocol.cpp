//===- TorchTensorProtocol.cpp - Tensor attributes and operators → kiln -===//
// SPDX-License-Identifier: Apache-2.0
//
// What a captured tensor answers as a Python object: its attributes
// (`x.shape`, `x.dtype`, `x.device`, `x.T`, layout flags, bound methods)
// and the Python operators on it (`x + y`, `x @ w`, `x += 1`), which go
// through the same op table as the torch functions (TorchOps.cpp).
//===----------------------------------------------------------------------===//
#include "TorchOpsImpl.h"

#include "ir/KilnOps.h"

namespace kiln {

using mlir::RankedTensorType;
using mlir::Type;
using mlir::Value;

VarP Interpreter::tensorAttribute(const VarP &self, const std::string &name) {
  auto type = ttype(self->value);
  if (name == "shape") {
    static PyObject *sizeType = PyObject_GetAttrString(torchModule(), "Size"); // leaked
    PyRef tuple = PyRef::steal(PyTuple_New(type.getRank()));
    for (int64_t i = 0; i < type.getRank(); ++i)
      PyTuple_SET_ITEM(tuple.get(), i, PyLong_FromLongLong(type.getDimSize(i)));
    PyRef args = PyRef::steal(PyTuple_Pack(1, tuple.get()));
    return makeConst(PyRef::steal(PyObject_Call(sizeType, args.get(), nullptr)));
  }
  if (name == "__len__") {
    if (type.getRank() == 0) throw Unsupported("len() of a 0-d tensor");
    return makeConst(PyRef::steal(PyLong_FromLongLong(type.getDimSize(0))));
  }
  if (name == "ndim") return makeConst(PyRef::steal(PyLong_FromLong(type.getRank())));
  if (name == "dtype") return makeConst(PyRef::borrow(dtypeObject(dtypeOf(type.getElementType()))));
  if (name == "is_cuda") return makeConst(PyRef::borrow(graphDevice_ >= 0 ? Py_True : Py_False));
  if (name == "is_meta")
    return makeConst(PyRef::borrow(graphDevice_ == TensorMeta::kMetaDevice ? Py_True : Py_False));
  // Graph tensors are dense strided tensors: nested, sparse, quantized and
  // MKL-DNN tensors are never graph inputs (their frames run eagerly).
  if (name == "is_nested" || name == "is_sparse" || name == "is_quantized" || name == "is_mkldnn")
    return makeConst(PyRef::borrow(Py_False));
  if (name == "device") // all graph tensors are on the inputs' device (guarded)
    return makeConst(PyRef::steal(
        PyObject_CallMethod(torchModule(), "device", "s", deviceName(graphDevice_).c_str())));
  if (name == "T" || name == "mT") {
    std::vector<VarP> none;
    std::map<std::string, VarP> nokw;
    if (name == "T") {
      std::vector<VarP> perm;
      for (int64_t i = type.getRank() - 1; i >= 0; --i)
        perm.push_back(makeConst(PyRef::steal(PyLong_FromLongLong(i))));
      std::vector<VarP> args = {makeSeq(Var::Kind::Tuple, perm)};
      return callTensorMethod(self, "permute", args, nokw);
    }
    std::vector<VarP> dims = {makeConst(PyRef::steal(PyLong_FromLong(-2))),
                              makeConst(PyRef::steal(PyLong_FromLong(-1)))};
    return callTensorMethod(self, "transpose", dims, nokw);
  }
  auto &methods = opTable().methods;
  if (methods.count(name) ||
      (name.size() > 1 && name.back() == '_' && methods.count(name.substr(0, name.size() - 1)))) {
    auto m = std::make_shared<Var>();
    m->kind = Var::Kind::TensorMethod;
    m->self = self;
    m->name = name;
    return m;
  }
  throw Unsupported("Tensor." + name + " is not supported yet");
}

VarP Interpreter::tensorBinary(const std::string &sym, const VarP &a, const VarP &b) {
  if (!a->isTensor() && !b->isTensor()) return nullptr;
  std::string op = sym;
  bool inplace = op.size() >= 2 && op.back() == '=' && op != "==" && op != "!=" &&
                 op != "<=" && op != ">=";
  if (inplace) {
    op.pop_back();
    // x += y mutates x's storage in eager: only allowed on a tensor the graph
    // computed and that nothing else views; the Var is updated in place so
    // every Python reference to it sees the new value.
    if (a->isTensor() && (!a->fresh || a->viewed))
      throw Unsupported("in-place " + sym + " on a graph input or a view is not supported yet");
  }
  static const std::map<std::string, std::string> names = {
      {"+", "add"}, {"-", "sub"}, {"*", "mul"}, {"/", "div"}, {"**", "pow"}, {"@", "matmul"},
      {"==", "eq"}, {"!=", "ne"}, {"<", "lt"}, {"<=", "le"}, {">", "gt"}, {">=", "ge"}};
  auto it = names.find(op);
  if (it == names.end()) throw Unsupported("operator " + sym + " on tensors is not supported yet");
  Args args;
  args.named["input"] = a;
  args.named[it->second == "pow" ? "exponent" : "other"] = b;
  VarP r = applyTracked(*this, it->second, args);
  if (inplace && a->isTensor()) {
    if (r->value.getType() != a->value.getType())
      throw Unsupported("in-place " + sym + " would change the tensor's shape or dtype");
    a->value = r->value;
    return a;
  }
  return r;
}

} // namespace kiln
