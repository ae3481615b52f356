// pyspmv/_ext/glue_cuda.h: what the files of the _cuda module share — the device Matrix and Plan
// objects and the functions and types the module's method table and init name
// SPDX-License-Identifier: BSD-3-Clause
//
// Private to _cuda (_cuda.c and the glue_cuda_*.c beside it); _glue.h is what _core and _cuda share.
// The module's files share one NumPy C-API table (PY_ARRAY_UNIQUE_SYMBOL), which _cuda.c's
// cuda_exec fills: every other file defines NO_IMPORT_ARRAY, then includes this header first.
#ifndef PYSPMV_GLUE_CUDA_H
#define PYSPMV_GLUE_CUDA_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define PY_ARRAY_UNIQUE_SYMBOL pyspmv_cuda_ARRAY_API
#include <numpy/arrayobject.h>

#include "spmv.h"
#include "spmv_cuda.h"

#include "_glue.h"

typedef struct {
    PyObject_HEAD spmv_cuda_matrix *M;
    PyObject *state;  /* the State it was uploaded from (plans' setup reads its host arrays), or
                         NULL for a matrix that lives on the device only */
    PyObject *keep;   /* what owns the device arrays M reads in place (wrap_csr), or NULL */
    PyObject *module; /* for the exception classes */
    int typenum;
} MatrixObject;

typedef struct {
    PyObject_HEAD spmv_cuda_plan *plan;
    PyObject *module; /* for the exception classes */
    PyObject *matrix; /* the MatrixObject it runs on, or NULL when it owns its matrix */
    int32_t nrows, ncols;
    int typenum;
} PlanObject;

static inline int no_keywords(PyObject *kwds, const char *what) {
    if (kwds != NULL && PyDict_Size(kwds) > 0) {
        PyErr_Format(PyExc_TypeError, "%s() takes positional arguments only", what);
        return 0;
    }
    return 1;
}

/* ---- glue_cuda_device.c ---- */
PyObject *device_count(PyObject *m, PyObject *noargs);
PyObject *info(PyObject *m, PyObject *noargs);
PyObject *copy_bandwidth(PyObject *m, PyObject *args);
PyObject *pin(PyObject *m, PyObject *args);
PyObject *unpin(PyObject *m, PyObject *args);

/* ---- glue_cuda_matrix.c ---- */
extern PyType_Spec matrix_spec;
int matrix_live(MatrixObject *self);
PyObject *wrap_csr(PyObject *module, PyObject *args);
PyObject *upload_csr(PyObject *module, PyObject *args);

/* ---- glue_cuda_plan.c ---- */
extern PyType_Spec plan_spec;
int plan_live(PlanObject *self);

/* ---- glue_cuda_krylov.c ---- */
int krylov_add(PyObject *m);

#endif /* PYSPMV_GLUE_CUDA_H */
