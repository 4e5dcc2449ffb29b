// The compiled-graph runtime of ptgo._fast (ptgo_runtime.cpp).
#ifndef PTGO_RUNTIME_H
#define PTGO_RUNTIME_H

#include <Python.h>

// torch.Tensor, set by ptgo_runtime_add.
extern PyObject* ptgo_tensor_type;

// Adds the Graph type to the ptgo._fast module; 0 on success.
int ptgo_runtime_add(PyObject* module);

#endif
