// pyspmv/_glue.h: what the two extension modules (_core, _cuda) share — statuses to exceptions, and
// converters that check NumPy arrays and format state tuples without casting
// SPDX-License-Identifier: BSD-3-Clause
//
// Static functions on purpose: each module compiles its own copy, and neither exports a C API.
// Include after Python.h and numpy/arrayobject.h.
#ifndef PYSPMV_GLUE_H
#define PYSPMV_GLUE_H

#include <stdint.h>
#include <string.h>

#include "spmv.h"

typedef struct {
    PyObject *DeviceUnavailableError;
    PyObject *NotApplicableError;
    PyObject *MatrixType; /* _cuda's device Matrix type (NULL in _core) */
} glue_state;

static inline glue_state *get_state(PyObject *module) {
    return (glue_state *)PyModule_GetState(module);
}

/* Work below this many stored entries keeps the GIL: releasing it costs more (sparsetools' idea). */
#define NOGIL_MIN_WORK 50000
#define CALL_C(big, stmt)                                                                          \
    do {                                                                                           \
        if (big) {                                                                                 \
            Py_BEGIN_ALLOW_THREADS stmt;                                                           \
            Py_END_ALLOW_THREADS                                                                   \
        } else {                                                                                   \
            stmt;                                                                                  \
        }                                                                                          \
    } while (0)

/* The one place a status becomes an exception.  argname prefixes the message. */
static inline PyObject *raise_spmv_error(PyObject *module, int code, const spmv_err *err,
                                         const char *argname) {
    glue_state *st = get_state(module);
    if (code == SPMV_EINTR && PyErr_Occurred()) return NULL; /* a signal handler's exception */
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
                     typenum == NPY_INT32     ? "int32"
                     : typenum == NPY_UINT8   ? "uint8"
                     : typenum == NPY_FLOAT32 ? "float32"
                                              : "float64");
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

/* The value dtype of a state that parsed. */
static inline int state_typenum(PyObject *state) {
    PyObject *val = PyTuple_GET_ITEM(state, 7);
    return PyArray_TYPE((PyArrayObject *)PyTuple_GET_ITEM(val, 0));
}

/* ---- sealed states ----
 *
 * Checking a state costs a pass over every stored slot, more than some products.  A seal records one
 * successful check: it holds strong references to the arrays it checked and to the bytes objects
 * their memory lies in, and a copy of the spmv_fmt it checked (sizes, scalars, parameters, data
 * pointers).  Bytes objects are immutable and numpy refuses to make an array over one writeable,
 * so while the seal lives that memory keeps the checked contents and no other buffer can take its
 * address.  A state whose arrays are those very objects, whose numbers and data pointers equal the
 * seal's and whose arrays are still read-only therefore reads exactly what was checked: the check
 * is skipped.  Anything else (no seal, another matrix's seal, a swapped array or scalar, an array
 * given a new buffer by __setstate__) gets the full check.  Only a raw pointer turned into a
 * writeable array (ctypes, __array_interface__) can still write there, as it can anywhere.
 * The seal is a capsule found by name, so _cuda trusts the seals _core makes. */
#define SEAL_CAPSULE "pyspmv._core.seal"
#define SEAL_NARRAYS (SPMV_MAXIDX + SPMV_MAXVAL)

typedef struct {
    spmv_fmt F;                    /* as checked */
    int typenum;                   /* of the value arrays */
    PyObject *array[SEAL_NARRAYS]; /* idx[0..MAXIDX), then val[0..MAXVAL) */
    PyObject *owner[SEAL_NARRAYS]; /* the bytes object each array's memory lies in */
} glue_seal;

/* The bytes object a's memory lies in, through views, or NULL: a is sealed when it is read-only
 * and its memory lies inside a bytes object. */
static inline PyObject *sealed_owner(PyArrayObject *a) {
    PyObject *base = PyArray_BASE(a);
    while (base != NULL && PyArray_Check(base)) base = PyArray_BASE((PyArrayObject *)base);
    if (PyArray_ISWRITEABLE(a) || base == NULL || !PyBytes_CheckExact(base)) return NULL;
    uintptr_t lo = (uintptr_t)PyBytes_AS_STRING(base), p = (uintptr_t)PyArray_BYTES(a);
    uintptr_t hi = lo + (uintptr_t)PyBytes_GET_SIZE(base);
    if (p < lo || p > hi || (uintptr_t)PyArray_NBYTES(a) > hi - p) return NULL;
    return base;
}

static inline int fmt_same(const spmv_fmt *a, const spmv_fmt *b) {
    int same = a->format == b->format && a->nrows == b->nrows && a->ncols == b->ncols &&
               a->nnz == b->nnz && a->param[0] == b->param[0] && a->param[1] == b->param[1];
    for (int k = 0; k < 4; k++) same = same && a->scalar[k] == b->scalar[k];
    for (int k = 0; k < SPMV_MAXIDX; k++)
        same = same && a->nidx[k] == b->nidx[k] && a->idx[k] == b->idx[k];
    for (int k = 0; k < SPMV_MAXVAL; k++)
        same = same && a->nval[k] == b->nval[k] && a->val[k] == b->val[k];
    return same;
}

/* The state's array k (idx arrays first, then value arrays). */
static inline PyObject *state_array(PyObject *state, int k) {
    PyObject *t = PyTuple_GET_ITEM(state, k < SPMV_MAXIDX ? 6 : 7);
    return PyTuple_GET_ITEM(t, k < SPMV_MAXIDX ? k : k - SPMV_MAXIDX);
}

/* Whether state (parsed into F, value dtype typenum) is exactly what its seal checked. */
static inline int seal_holds(PyObject *state, const spmv_fmt *F, int typenum) {
    if (PyTuple_GET_SIZE(state) < 9) return 0;
    PyObject *cap = PyTuple_GET_ITEM(state, 8);
    if (!PyCapsule_CheckExact(cap) || !PyCapsule_IsValid(cap, SEAL_CAPSULE)) return 0;
    const glue_seal *S = PyCapsule_GetPointer(cap, SEAL_CAPSULE);
    if (S->typenum != typenum || !fmt_same(F, &S->F)) return 0;
    for (int k = 0; k < SEAL_NARRAYS; k++) {
        PyObject *a = state_array(state, k);
        if (a != S->array[k] || PyArray_ISWRITEABLE((PyArrayObject *)a)) return 0;
    }
    return 1;
}

static inline void seal_release(glue_seal *S) {
    for (int k = 0; k < SEAL_NARRAYS; k++) {
        Py_XDECREF(S->array[k]);
        Py_XDECREF(S->owner[k]);
    }
    PyMem_Free(S);
}

static inline void seal_free(PyObject *cap) {
    glue_seal *S = PyCapsule_GetPointer(cap, SEAL_CAPSULE);
    if (S != NULL) seal_release(S);
}

/* A seal for state, parsed into F and already checked by spmv_fmt_check (or filled by
 * spmv_fmt_fill_*, whose output needs no check); every array must be sealed.  New reference. */
static inline PyObject *seal_new(PyObject *state, const spmv_fmt *F, int typenum) {
    glue_seal *S = PyMem_Calloc(1, sizeof *S);
    if (S == NULL) return PyErr_NoMemory();
    S->F = *F;
    S->typenum = typenum;
    for (int k = 0; k < SEAL_NARRAYS; k++) {
        PyObject *a = state_array(state, k), *owner = sealed_owner((PyArrayObject *)a);
        if (owner == NULL) {
            PyErr_SetString(PyExc_ValueError,
                            "a sealed state needs read-only arrays over bytes objects");
            seal_release(S);
            return NULL;
        }
        S->array[k] = Py_NewRef(a);
        S->owner[k] = Py_NewRef(owner);
    }
    PyObject *cap = PyCapsule_New(S, SEAL_CAPSULE, seal_free);
    if (cap == NULL) seal_release(S);
    return cap;
}

/* A state tuple to a spmv_fmt whose arrays are borrowed from the tuple, parsed but not checked. */
static inline int state_parse(PyObject *o, spmv_fmt *F) {
    PyObject *params, *scalars, *idx, *val, *seal = Py_None;
    long long nnz;
    memset(F, 0, sizeof *F);
    if (!PyTuple_Check(o)) {
        PyErr_Format(PyExc_TypeError, "a format state must be a tuple, got %.80s",
                     Py_TYPE(o)->tp_name);
        return 0;
    }
    if (!PyArg_ParseTuple(o, "iiiLO!O!O!O!|O;state tuple", &F->format, &F->nrows, &F->ncols, &nnz,
                          &PyTuple_Type, &params, &PyTuple_Type, &scalars, &PyTuple_Type, &idx,
                          &PyTuple_Type, &val, &seal))
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
    return 1;
}

/* The state's structure, then its values (padding slots holding zero). */
static inline int state_check(const spmv_fmt *F, int typenum) {
    spmv_err err = {0};
    int rc;
    CALL_C(F->nnz > NOGIL_MIN_WORK, rc = spmv_fmt_check(F, &err));
    if (rc == SPMV_OK && typenum == NPY_FLOAT32)
        CALL_C(F->nnz > NOGIL_MIN_WORK, rc = spmv_fmt_check_values_f32(F, &err));
    else if (rc == SPMV_OK)
        CALL_C(F->nnz > NOGIL_MIN_WORK, rc = spmv_fmt_check_values_f64(F, &err));
    if (rc) {
        PyErr_Format(rc == SPMV_ENOMEM ? PyExc_MemoryError : PyExc_ValueError,
                     "state of a %s matrix: %s", spmv_format_name(F->format),
                     err.msg[0] ? err.msg : spmv_strerror(rc));
        return 0;
    }
    return 1;
}

/* A state tuple (layout at the top of _core.c) to a spmv_fmt whose arrays are borrowed from the
 * tuple, checked by spmv_fmt_check before any C reads them unless the state's seal vouches for it
 * (see above): a state is whatever Python hands over, since FormatMatrix is public. */
static inline int state_converter(PyObject *o, void *out) {
    spmv_fmt *F = out;
    if (!state_parse(o, F)) return 0;
    return seal_holds(o, F, state_typenum(o)) || state_check(F, state_typenum(o));
}

static inline int check_xy(const spmv_fmt *F, int typenum, PyArrayObject *x, PyArrayObject *y) {
    if (PyArray_TYPE(x) != typenum || PyArray_TYPE(y) != typenum) {
        PyErr_SetString(PyExc_TypeError, "x and y must have the matrix's value dtype");
        return 0;
    }
    if (PyArray_SIZE(x) != F->ncols || PyArray_SIZE(y) != F->nrows) {
        PyErr_Format(PyExc_ValueError,
                     "x has %zd entries and y %zd; they must be ncols = %d and "
                     "nrows = %d",
                     (Py_ssize_t)PyArray_SIZE(x), (Py_ssize_t)PyArray_SIZE(y), F->ncols, F->nrows);
        return 0;
    }
    return 1;
}

#endif /* PYSPMV_GLUE_H */
