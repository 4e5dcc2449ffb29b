// ptgo._fast's random functions (ptgo_random.cpp): torch's CPU random stream drawn by ptgo.
#ifndef PTGO_RANDOM_H
#define PTGO_RANDOM_H

#include <Python.h>

// Adds bernoulli_mask to the module; 0 ok, -1 error.
int ptgo_random_add(PyObject* module);

#endif
