// torch.Tensor's C layout (torch/csrc/autograd/python_variable.h's THPVariable), by torch
// version: setup.py's TORCH_CXX table defines PTGO_THPVARIABLE_MAYBE_OWNED for the torches whose
// THPVariable holds a c10::MaybeOwned<at::Tensor> (1.13) rather than an at::Tensor (2.14).
// Declared here instead of including torch's pybind11-heavy header.
#ifndef PTGO_VARIABLE_H
#define PTGO_VARIABLE_H

#include <Python.h>

#include <ATen/core/Tensor.h>
#include <c10/util/MaybeOwned.h>

namespace ptgo {

struct Variable {
  PyObject_HEAD
#if defined(PTGO_THPVARIABLE_MAYBE_OWNED)
  c10::MaybeOwned<at::Tensor> cdata;
#else
  at::Tensor cdata;
#endif
};

// The at::Tensor of a torch.Tensor (the caller checked the Python type).
inline at::Tensor& unpack(PyObject* obj) {
#if defined(PTGO_THPVARIABLE_MAYBE_OWNED)
  return const_cast<at::Tensor&>(*reinterpret_cast<Variable*>(obj)->cdata);
#else
  return reinterpret_cast<Variable*>(obj)->cdata;
#endif
}

}  // namespace ptgo

#endif
