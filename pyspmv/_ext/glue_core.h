// pyspmv/_ext/glue_core.h: what the files of the _core module share — the functions its method
// table names, the State's makers, the model capsule, and the lengths of CSR arguments
// SPDX-License-Identifier: BSD-3-Clause
//
// Private to _core (_core.c and the glue_*.c beside it); _glue.h is what _core and _cuda share.
// The module's files share one NumPy C-API table (PY_ARRAY_UNIQUE_SYMBOL), which _core.c's
// core_exec fills: every other file defines NO_IMPORT_ARRAY, then includes this header first.
#ifndef PYSPMV_GLUE_CORE_H
#define PYSPMV_GLUE_CORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define PY_ARRAY_UNIQUE_SYMBOL pyspmv_core_ARRAY_API
#include <numpy/arrayobject.h>

#include "spmv.h"

#include "_glue.h"

static inline spmv_csr csr_of(int nrows, int ncols, PyArrayObject *indptr, PyArrayObject *indices) {
    spmv_csr A = {nrows, ncols, PyArray_DATA(indptr), PyArray_DATA(indices)};
    return A;
}

/* The lengths the core cannot see through a spmv_csr: indptr[nrows+1] and indices holding at least
 * indptr[nrows] entries.  The core checks everything else as it reads. */
static inline int csr_lengths(int nrows, PyArrayObject *indptr, PyArrayObject *indices,
                              const char *fn) {
    if (nrows < 1 || PyArray_SIZE(indptr) != (npy_intp)nrows + 1) {
        PyErr_Format(PyExc_ValueError,
                     "%s: indptr has %zd entries; it must have nrows+1 = %lld (nrows >= 1)", fn,
                     (Py_ssize_t)PyArray_SIZE(indptr), (long long)nrows + 1);
        return 0;
    }
    int32_t nnz = ((const int32_t *)PyArray_DATA(indptr))[nrows];
    if (nnz < 0 || (npy_intp)nnz > PyArray_SIZE(indices)) {
        PyErr_Format(PyExc_ValueError, "%s: indptr[nrows] = %d but indices has %zd entries", fn,
                     (int)nnz, (Py_ssize_t)PyArray_SIZE(indices));
        return 0;
    }
    return 1;
}

/* ---- glue_inputs.c ---- */
PyObject *csr_check(PyObject *m, PyObject *args);
PyObject *csr_copy(PyObject *m, PyObject *args);
PyObject *mm_read(PyObject *m, PyObject *args);
PyObject *finite_check(PyObject *m, PyObject *args);
PyObject *dlpack_info(PyObject *m, PyObject *args);

/* ---- glue_registry.c ---- */
PyObject *features(PyObject *m, PyObject *args);
PyObject *feature_names(PyObject *m, PyObject *noargs);
PyObject *gpu_props_h100(PyObject *m, PyObject *noargs);
PyObject *format_names(PyObject *m, PyObject *noargs);
PyObject *omp_threads(PyObject *m, PyObject *noargs);
PyObject *design_columns(PyObject *m, PyObject *noargs);
PyObject *format_facts(PyObject *m, PyObject *noargs);
PyObject *kernels(PyObject *m, PyObject *noargs);
PyObject *config_parse(PyObject *m, PyObject *id);
PyObject *config_expand(PyObject *m, PyObject *args);
const char **utf8_ids(PyObject *seq, const char *what);

/* ---- glue_fmtstate.c ---- */
extern PyType_Spec state_spec;
PyObject *sealed_array(npy_intp n, int typenum, void **data);
PyObject *new_arrays(int n, const int64_t *len, int typenum, void **data);
PyObject *state_wrap(PyObject *module, const spmv_fmt *F, int typenum, PyObject *idx,
                     PyObject *val);

/* ---- glue_formats.c ---- */
PyObject *convert(PyObject *m, PyObject *args);
PyObject *fmt_size(PyObject *m, PyObject *args);
PyObject *config_sizes(PyObject *m, PyObject *args);
PyObject *to_csr(PyObject *m, PyObject *arg);
PyObject *mv(PyObject *m, PyObject *args);
PyObject *mv_scaled(PyObject *m, PyObject *args);
PyObject *bench(PyObject *m, PyObject *args);
PyObject *recast(PyObject *m, PyObject *args);

/* ---- glue_models.c: a spec dict of arrays -> spmv_model + spmv_configs, held by a capsule ---- */

/* The capsule's payload.  The arrays stay referenced in refs for the capsule's life. */
typedef struct {
    spmv_model model;
    spmv_configs configs;
    spmv_gpu_props dev;
    PyObject *refs;    /* list of the arrays (and sub-model blocks) the structs point into */
    int32_t nfeatures; /* 0: design rows; > 0: the rows start with a caller's feature vector */
    int64_t steps;     /* spmv_model_cost: most steps one row takes */
    int32_t ranked;    /* configurations with a group (what one ranking evaluates) */
} glue_model;

/* A long model call: the spmv_interrupt it passes the core, and the thread state saved while it
 * runs without the GIL (NULL: it holds the GIL). */
typedef struct {
    spmv_interrupt intr;
    PyThreadState *saved;
} glue_call;

void call_begin(glue_call *c, int64_t steps);
void call_end(glue_call *c);
int model_converter(PyObject *o, void *out);
PyObject *model_fields(PyObject *m, PyObject *args);
PyObject *model_new(PyObject *m, PyObject *args);
PyObject *model_cost(PyObject *m, PyObject *args);
PyObject *model_predict(PyObject *m, PyObject *args);

/* ---- glue_rank.c ---- */
PyObject *core_rows(PyObject *m, PyObject *args);
PyObject *rank(PyObject *m, PyObject *args);
PyObject *sample_plan(PyObject *m, PyObject *args);

#endif /* PYSPMV_GLUE_CORE_H */
