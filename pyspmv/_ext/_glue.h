// pyspmv/_ext/_glue.h: what the two extension modules (_core, _cuda) share — statuses to
// exceptions, converters that check NumPy arrays without casting, and the layout of a format state
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
    PyObject *MatrixType;    /* _cuda's device Matrix type (NULL in _core) */
    PyTypeObject *StateType; /* _core's State (glue_fmtstate), made by _core, found by _cuda */
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
    /* The core reads values as the machine stores them: a byte-swapped array ('>f8' here) would be
     * read as other numbers, silently. Refused, never swapped: these arrays are used in place. */
    if (!PyArray_ISNOTSWAPPED(a)) {
        PyErr_Format(PyExc_TypeError,
                     "%s has non-native byte order (dtype %c%c%d); pass "
                     "a.astype(a.dtype.newbyteorder('='))",
                     what, PyArray_DESCR(a)->byteorder, PyArray_DESCR(a)->kind,
                     (int)PyArray_ITEMSIZE(a));
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

/* ---- format states ----
 *
 * A converted matrix crosses as a pyspmv._core.State, which is its own seal.  Checking a state costs
 * a pass over every stored slot, more than some products, so a State is checked once, when it is
 * made, and never again: _core makes one only from spmv_fmt_fill_* (convert), from a checked State
 * (recast), or from arrays that its constructor copies where they could change and then checks
 * (spmv_fmt_check, spmv_fmt_check_values_*).  Its arrays are read-only over bytes objects: bytes
 * objects are immutable and numpy refuses to make an array over one writeable.  F's pointers lie in
 * those bytes objects, which the State holds itself (owner[]), so even an array given a new buffer
 * by ndarray.__setstate__ leaves F reading exactly what was checked.  Its attributes are read-only
 * and the type takes no subclasses, so nothing else can pass for one; only a raw pointer turned into
 * a writeable array (ctypes, __array_interface__) can still write there, as it can anywhere.
 * _cuda finds the type through the capsule STATE_CAPSULE (a pointer to it), so it trusts the
 * States _core makes and nothing that merely looks like one. */
#define STATE_CAPSULE "pyspmv._core._State_type"
#define STATE_NARRAYS (SPMV_MAXIDX + SPMV_MAXVAL)

typedef struct {
    PyObject_HEAD spmv_fmt F; /* as checked; its arrays lie in owner[] */
    int typenum;              /* of the value arrays: NPY_FLOAT32 or NPY_FLOAT64 */
    PyObject *idx, *val;      /* tuples of the read-only arrays, SPMV_MAXIDX and SPMV_MAXVAL */
    PyObject *owner[STATE_NARRAYS]; /* the bytes object each array's memory lies in */
} glue_fmtstate;

/* o as a State (borrowed), or NULL with TypeError. */
static inline glue_fmtstate *state_get(PyObject *module, PyObject *o) {
    PyTypeObject *type = get_state(module)->StateType;
    if (type == NULL || !Py_IS_TYPE(o, type)) {
        PyErr_Format(PyExc_TypeError,
                     "expected a format state (pyspmv._core.State: convert()'s, or State(...) of "
                     "arrays, checked), got %.80s",
                     Py_TYPE(o)->tp_name);
        return NULL;
    }
    return (glue_fmtstate *)o;
}

/* x (unless NULL: made on the device, a GPU timing's) and y (unless NULL: no result wanted) of F's
 * value type and shape */
static inline int check_xy(const spmv_fmt *F, int typenum, PyArrayObject *x, PyArrayObject *y) {
    if ((x != NULL && PyArray_TYPE(x) != typenum) || (y != NULL && PyArray_TYPE(y) != typenum)) {
        PyErr_SetString(PyExc_TypeError, "x and y must have the matrix's value dtype");
        return 0;
    }
    npy_intp nx = x != NULL ? PyArray_SIZE(x) : F->ncols,
             ny = y != NULL ? PyArray_SIZE(y) : F->nrows;
    if (nx != F->ncols || ny != F->nrows) {
        PyErr_Format(PyExc_ValueError,
                     "x has %zd entries and y %zd; they must be ncols = %d and "
                     "nrows = %d",
                     (Py_ssize_t)nx, (Py_ssize_t)ny, F->ncols, F->nrows);
        return 0;
    }
    return 1;
}

#endif /* PYSPMV_GLUE_H */
