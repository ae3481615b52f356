// pyspmv/_glue.h: what the two extension modules (_core, _cuda) share — statuses to exceptions, and
// converters that check NumPy arrays and format state tuples without casting
// SPDX-License-Identifier: BSD-3-Clause
//
// Static functions on purpose: each module compiles its own copy, and neither exports a C API.
// Include after Python.h and numpy/arrayobject.h.
#ifndef PYSPMV_GLUE_H
#define PYSPMV_GLUE_H

#include <string.h>

#include "spmv.h"

typedef struct {
    PyObject *DeviceUnavailableError;
    PyObject *NotApplicableError;
} glue_state;

static inline glue_state *get_state(PyObject *module) { return (glue_state *)PyModule_GetState(module); }

/* Work below this many stored entries keeps the GIL: releasing it costs more (sparsetools' idea). */
#define NOGIL_MIN_WORK 50000
#define CALL_C(big, stmt)                                                                         \
    do {                                                                                          \
        if (big) {                                                                                \
            Py_BEGIN_ALLOW_THREADS stmt;                                                          \
            Py_END_ALLOW_THREADS                                                                  \
        } else {                                                                                  \
            stmt;                                                                                 \
        }                                                                                         \
    } while (0)

/* The one place a status becomes an exception.  argname prefixes the message. */
static inline PyObject *raise_spmv_error(PyObject *module, int code, const spmv_err *err,
                                  const char *argname) {
    glue_state *st = get_state(module);
    const char *msg = err->msg[0] ? err->msg : spmv_strerror(code);
    const char *sep = argname[0] ? ": " : "";
    switch (code) {
    case SPMV_ENOMEM:
        PyErr_Format(PyExc_MemoryError, "%s%s%s", argname, sep, msg);
        break;
    case SPMV_ENODEVICE:
        PyErr_Format(st->DeviceUnavailableError, "%s%s%s", argname, sep, msg);
        break;
    case SPMV_ENOTAPPLICABLE:
        PyErr_Format(st->NotApplicableError, "%s%s%s", argname, sep, msg);
        break;
    case SPMV_ECUDA:
    case SPMV_ECUSPARSE:
        PyErr_Format(PyExc_RuntimeError, "%s%s%s", argname, sep, msg);
        break;
    default:
        PyErr_Format(PyExc_ValueError, "%s%s%s", argname, sep, msg);
    }
    return NULL;
}

/* ---- converters: check, never cast ---- */

static inline int check_array(PyObject *o, int typenum, int writeable, const char *what) {
    if (!PyArray_Check(o)) {
        PyErr_Format(PyExc_TypeError, "expected a NumPy array for %s, got %.80s", what,
                     Py_TYPE(o)->tp_name);
        return 0;
    }
    PyArrayObject *a = (PyArrayObject *)o;
    if (PyArray_NDIM(a) != 1 || !PyArray_IS_C_CONTIGUOUS(a)) {
        PyErr_Format(PyExc_ValueError, "%s must be a 1-D C-contiguous array", what);
        return 0;
    }
    if (typenum >= 0 && PyArray_TYPE(a) != typenum) {
        PyErr_Format(PyExc_TypeError, "%s must have dtype %s", what,
                     typenum == NPY_INT32 ? "int32" : typenum == NPY_FLOAT32 ? "float32" : "float64");
        return 0;
    }
    if (typenum < 0 && PyArray_TYPE(a) != NPY_FLOAT32 && PyArray_TYPE(a) != NPY_FLOAT64) {
        PyErr_Format(PyExc_TypeError, "%s must have dtype float32 or float64", what);
        return 0;
    }
    if (writeable && !PyArray_ISWRITEABLE(a)) {
        PyErr_Format(PyExc_ValueError, "%s must be writeable", what);
        return 0;
    }
    return 1;
}

static inline int int32_array(PyObject *o, void *out) {
    if (!check_array(o, NPY_INT32, 0, "an index array")) return 0;
    *(PyArrayObject **)out = (PyArrayObject *)o;
    return 1;
}

static inline int real_array(PyObject *o, void *out) {
    if (!check_array(o, -1, 0, "a value array")) return 0;
    *(PyArrayObject **)out = (PyArrayObject *)o;
    return 1;
}

static inline int real_out_array(PyObject *o, void *out) {
    if (!check_array(o, -1, 1, "the output array")) return 0;
    *(PyArrayObject **)out = (PyArrayObject *)o;
    return 1;
}

/* A state tuple to a spmv_fmt whose arrays are borrowed from the tuple, checked by spmv_fmt_check
 * before any C reads them: a state is whatever Python hands over (FormatMatrix is public, and its
 * read-only arrays can be made writeable again), so every entry that takes one checks it again. */
static inline int state_converter(PyObject *o, void *out) {
    spmv_fmt *F = out;
    PyObject *params, *scalars, *idx, *val;
    long long nnz;
    memset(F, 0, sizeof *F);
    if (!PyArg_ParseTuple(o, "iiiLO!O!O!O!;state tuple", &F->format, &F->nrows, &F->ncols, &nnz,
                          &PyTuple_Type, &params, &PyTuple_Type, &scalars, &PyTuple_Type, &idx,
                          &PyTuple_Type, &val))
        return 0;
    F->nnz = nnz;
    if (F->format < 0 || F->format >= SPMV_NFORMATS || PyTuple_GET_SIZE(params) != 2 ||
        PyTuple_GET_SIZE(scalars) != 4 || PyTuple_GET_SIZE(idx) != SPMV_MAXIDX ||
        PyTuple_GET_SIZE(val) != SPMV_MAXVAL) {
        PyErr_SetString(PyExc_ValueError, "malformed format state tuple");
        return 0;
    }
    for (int k = 0; k < 2; k++) F->param[k] = (int32_t)PyLong_AsLong(PyTuple_GET_ITEM(params, k));
    for (int k = 0; k < 4; k++) F->scalar[k] = PyLong_AsLongLong(PyTuple_GET_ITEM(scalars, k));
    if (PyErr_Occurred()) return 0;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(idx); k++) {
        PyArrayObject *a;
        if (!int32_array(PyTuple_GET_ITEM(idx, k), &a)) return 0;
        F->idx[k] = PyArray_DATA(a);
        F->nidx[k] = PyArray_SIZE(a);
    }
    int typenum = -1;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(val); k++) {
        PyArrayObject *a;
        if (!real_array(PyTuple_GET_ITEM(val, k), &a)) return 0;
        if (typenum >= 0 && PyArray_TYPE(a) != typenum) {
            PyErr_SetString(PyExc_TypeError, "value arrays of one matrix must share a dtype");
            return 0;
        }
        typenum = PyArray_TYPE(a);
        F->val[k] = PyArray_DATA(a);
        F->nval[k] = PyArray_SIZE(a);
    }
    spmv_err err = {0};
    int rc = spmv_fmt_check(F, &err);
    if (rc) {
        PyErr_Format(rc == SPMV_ENOMEM ? PyExc_MemoryError : PyExc_ValueError, "state of a %s matrix: %s",
                     spmv_format_name(F->format), err.msg[0] ? err.msg : spmv_strerror(rc));
        return 0;
    }
    return 1;
}

static inline int state_typenum(PyObject *state) {
    PyObject *val = PyTuple_GET_ITEM(state, 7);
    return PyArray_TYPE((PyArrayObject *)PyTuple_GET_ITEM(val, 0));
}

static inline int check_xy(const spmv_fmt *F, int typenum, PyArrayObject *x, PyArrayObject *y) {
    if (PyArray_TYPE(x) != typenum || PyArray_TYPE(y) != typenum) {
        PyErr_SetString(PyExc_TypeError, "x and y must have the matrix's value dtype");
        return 0;
    }
    if (PyArray_SIZE(x) != F->ncols || PyArray_SIZE(y) != F->nrows) {
        PyErr_Format(PyExc_ValueError, "x has %zd entries and y %zd; they must be ncols = %d and "
                     "nrows = %d", (Py_ssize_t)PyArray_SIZE(x), (Py_ssize_t)PyArray_SIZE(y),
                     F->ncols, F->nrows);
        return 0;
    }
    return 1;
}


#endif /* PYSPMV_GLUE_H */
