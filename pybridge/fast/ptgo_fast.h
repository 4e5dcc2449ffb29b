/* The table ptgo._fast (C++) gives the shim through the capsule ptgo._fast.api. */
#ifndef PTGO_FAST_H
#define PTGO_FAST_H

#include <Python.h>
#include <stdint.h>

#include "ptgo_abi.h"

#define PTGO_FAST_VERSION 3

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int32_t version;
    /* 1 when the tensor matches a PTGO_G_TENSOR guard (packed and vec as in ptgo_guard). */
    int (*tensor_match)(PyObject *t, int64_t packed, const int64_t *vec, int32_t nvec);
    /* Fills m except is_parameter and is_plain (Python-level facts); 0 ok, -1 error. */
    int (*tensor_meta)(PyObject *t, ptgo_tensor_meta *m);
    int (*grad_enabled)(void);
    /* The tensor's version counter (tensor._version). */
    int64_t (*tensor_version)(PyObject *t);
    /* tensor.data_ptr() where it has one; 0 with *ok 0 where tensor.data_ptr() would raise. */
    int64_t (*tensor_data_ptr)(PyObject *t, int *ok);
} ptgo_fast_api;

#ifdef __cplusplus
}
#endif

#endif
