// pyspmv/_ext/glue_fmtstate.c: _core's State type (glue_fmtstate, _glue.h) — sealed arrays, the
// check, the constructor, read-only attributes, pickling
// SPDX-License-Identifier: BSD-3-Clause
#define NO_IMPORT_ARRAY
#include "glue_core.h"

/* A zeroed, read-only 1-D array of n entries over a new bytes object (its base): C fills it through
 * data before Python sees it, and nothing can make it writeable afterwards (see _glue.h). */
PyObject *sealed_array(npy_intp n, int typenum, void **data) {
    PyArray_Descr *d = PyArray_DescrFromType(typenum);
    if (d == NULL) return NULL;
    PyObject *b = PyBytes_FromStringAndSize(NULL, n * PyDataType_ELSIZE(d));
    if (b == NULL) {
        Py_DECREF(d);
        return NULL;
    }
    memset(PyBytes_AS_STRING(b), 0, (size_t)PyBytes_GET_SIZE(b));
    PyObject *a =
        PyArray_NewFromDescr(&PyArray_Type, d, 1, &n, NULL, PyBytes_AS_STRING(b), 0, NULL);
    if (a == NULL ||
        PyArray_SetBaseObject((PyArrayObject *)a, b) < 0) { /* steals b, even failing */
        if (a == NULL) Py_DECREF(b);
        Py_XDECREF(a);
        return NULL;
    }
    *data = PyArray_DATA((PyArrayObject *)a);
    return a;
}

PyObject *new_arrays(int n, const int64_t *len, int typenum, void **data) {
    PyObject *t = PyTuple_New(n);
    for (int k = 0; t != NULL && k < n; k++) {
        PyObject *a = sealed_array((npy_intp)len[k], typenum, &data[k]);
        if (a == NULL) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, k, a);
    }
    return t;
}

/* The bytes object a's memory lies in, through views, or NULL: a can be a State's array as it is
 * when it is read-only and its memory lies inside a bytes object (see _glue.h). */
static PyObject *sealed_owner(PyArrayObject *a) {
    PyObject *base = PyArray_BASE(a);
    while (base != NULL && PyArray_Check(base)) base = PyArray_BASE((PyArrayObject *)base);
    if (PyArray_ISWRITEABLE(a) || base == NULL || !PyBytes_CheckExact(base)) return NULL;
    uintptr_t lo = (uintptr_t)PyBytes_AS_STRING(base), p = (uintptr_t)PyArray_BYTES(a);
    uintptr_t hi = lo + (uintptr_t)PyBytes_GET_SIZE(base);
    if (p < lo || p > hi || (uintptr_t)PyArray_NBYTES(a) > hi - p) return NULL;
    return base;
}

/* The State's array k (index arrays first, then value arrays). */
static PyObject *state_array(const glue_fmtstate *S, int k) {
    return k < SPMV_MAXIDX ? PyTuple_GET_ITEM(S->idx, k)
                           : PyTuple_GET_ITEM(S->val, k - SPMV_MAXIDX);
}

/* A new State of F over the arrays of the tuples idx and val, which must be read-only over bytes
 * objects and the very memory F points to; the State holds those bytes objects.  Unchecked: F must
 * come from spmv_fmt_fill_* or a State, or be checked next (state_new).  New reference. */
PyObject *state_wrap(PyObject *module, const spmv_fmt *F, int typenum, PyObject *idx,
                     PyObject *val) {
    PyTypeObject *type = get_state(module)->StateType;
    glue_fmtstate *S = (glue_fmtstate *)type->tp_alloc(type, 0);
    if (S == NULL) return NULL;
    S->F = *F;
    S->typenum = typenum;
    S->idx = Py_NewRef(idx);
    S->val = Py_NewRef(val);
    for (int k = 0; k < STATE_NARRAYS; k++) {
        PyArrayObject *a = (PyArrayObject *)state_array(S, k);
        PyObject *owner = sealed_owner(a);
        const void *data = k < SPMV_MAXIDX ? (const void *)F->idx[k] : F->val[k - SPMV_MAXIDX];
        int64_t n = k < SPMV_MAXIDX ? F->nidx[k] : F->nval[k - SPMV_MAXIDX];
        if (owner == NULL || PyArray_DATA(a) != data || PyArray_SIZE(a) != n) {
            PyErr_SetString(PyExc_SystemError, "a State's arrays must be its own, sealed");
            Py_DECREF(S);
            return NULL;
        }
        S->owner[k] = Py_NewRef(owner);
    }
    return (PyObject *)S;
}

/* The state's structure, then its values (padding slots holding zero). */
static int state_check(const spmv_fmt *F, int typenum) {
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

/* A format code, or its name as csrc/formats.def spells it. */
static int format_arg(PyObject *o, void *out) {
    int *code = out;
    if (PyUnicode_Check(o)) {
        for (int f = 0; f < SPMV_NFORMATS; f++)
            if (PyUnicode_CompareWithASCIIString(o, spmv_format_name(f)) == 0) {
                *code = f;
                return 1;
            }
        PyErr_Format(PyExc_ValueError, "unknown format %R", o);
        return 0;
    }
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred()) return 0;
    if (v < 0 || v >= SPMV_NFORMATS) {
        PyErr_Format(PyExc_ValueError, "format code %ld is not in [0, %d)", v, SPMV_NFORMATS);
        return 0;
    }
    *code = (int)v;
    return 1;
}

/* n integers of the sequence seq into out (int32 when out32, else int64). */
static int int_items(PyObject *seq, Py_ssize_t n, int32_t *out32, int64_t *out64,
                     const char *what) {
    PyObject *t = PySequence_Tuple(seq);
    if (t == NULL) return 0;
    int ok = PyTuple_GET_SIZE(t) == n;
    if (!ok)
        PyErr_Format(PyExc_ValueError, "a format state's %s must hold %zd integers, not %zd", what,
                     n, PyTuple_GET_SIZE(t));
    for (Py_ssize_t k = 0; ok && k < n; k++) {
        long long v = PyLong_AsLongLong(PyTuple_GET_ITEM(t, k));
        if (v == -1 && PyErr_Occurred())
            ok = 0;
        else if (out32 != NULL && (v < INT32_MIN || v > INT32_MAX)) {
            PyErr_Format(PyExc_ValueError, "a format state's %s must be int32; got %lld", what, v);
            ok = 0;
        } else if (out32 != NULL)
            out32[k] = (int32_t)v;
        else
            out64[k] = v;
    }
    Py_DECREF(t);
    return ok;
}

/* n arrays of the sequence seq as a tuple of sealed arrays (those sealed already as they are, the
 * others copied into new ones), their data and sizes into data[] and len[].  typenum: NPY_INT32,
 * or -1 for value arrays of one real dtype (set on return). */
static PyObject *sealed_arrays(PyObject *seq, Py_ssize_t n, int *typenum, void **data, int64_t *len,
                               const char *what) {
    PyObject *given = PySequence_Tuple(seq), *res = NULL;
    if (given == NULL) return NULL;
    if (PyTuple_GET_SIZE(given) != n) {
        PyErr_Format(PyExc_ValueError, "a format state's %s must be %zd arrays, not %zd", what, n,
                     PyTuple_GET_SIZE(given));
        goto exit;
    }
    if ((res = PyTuple_New(n)) == NULL) goto exit;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *o = PyTuple_GET_ITEM(given, k);
        if (!check_array(o, *typenum == NPY_INT32 ? NPY_INT32 : -1, 0,
                         *typenum == NPY_INT32 ? "an index array" : "a value array"))
            goto fail;
        PyArrayObject *a = (PyArrayObject *)o;
        if (*typenum >= 0 && PyArray_TYPE(a) != *typenum) {
            PyErr_SetString(PyExc_TypeError, "value arrays of one matrix must share a dtype");
            goto fail;
        }
        *typenum = PyArray_TYPE(a);
        PyObject *b = sealed_owner(a) ? Py_NewRef(o)
                                      : sealed_array(PyArray_SIZE(a), PyArray_TYPE(a), &data[k]);
        if (b == NULL) goto fail;
        PyTuple_SET_ITEM(res, k, b);
        if (b != o && PyArray_NBYTES(a) > 0)
            memcpy(data[k], PyArray_DATA(a), (size_t)PyArray_NBYTES(a));
        data[k] = PyArray_DATA((PyArrayObject *)b);
        len[k] = PyArray_SIZE((PyArrayObject *)b);
    }
exit:
    Py_DECREF(given);
    return res;
fail:
    Py_CLEAR(res);
    goto exit;
}

/* State(format, nrows, ncols, nnz, params, scalars, index_arrays, value_arrays): the arrays sealed
 * (copied where they could change), then the whole checked: ValueError naming what breaks. */
static PyObject *state_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"format",  "nrows",        "ncols",        "nnz", "params",
                             "scalars", "index_arrays", "value_arrays", NULL};
    spmv_fmt F = {0};
    long long nnz;
    int idx_type = NPY_INT32, typenum = -1;
    PyObject *params, *scalars, *idx_in, *val_in, *idx = NULL, *val = NULL, *res = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&iiLOOOO:State", kwlist, format_arg, &F.format,
                                     &F.nrows, &F.ncols, &nnz, &params, &scalars, &idx_in, &val_in))
        return NULL;
    F.nnz = nnz;
    if (!int_items(params, 2, F.param, NULL, "params") ||
        !int_items(scalars, 4, NULL, F.scalar, "scalars"))
        return NULL;
    idx = sealed_arrays(idx_in, SPMV_MAXIDX, &idx_type, (void **)F.idx, F.nidx, "index_arrays");
    val = idx ? sealed_arrays(val_in, SPMV_MAXVAL, &typenum, F.val, F.nval, "value_arrays") : NULL;
    /* The sealed arrays are checked, not the given ones: those could change after the check. */
    if (val != NULL) res = state_wrap(PyType_GetModule(type), &F, typenum, idx, val);
    if (res != NULL && !state_check(&((glue_fmtstate *)res)->F, typenum)) Py_CLEAR(res);
    Py_XDECREF(idx);
    Py_XDECREF(val);
    return res;
}

static void state_dealloc(glue_fmtstate *S) {
    PyTypeObject *tp = Py_TYPE(S);
    Py_CLEAR(S->idx);
    Py_CLEAR(S->val);
    for (int k = 0; k < STATE_NARRAYS; k++) Py_CLEAR(S->owner[k]);
    tp->tp_free((PyObject *)S);
    Py_DECREF(tp);
}

static PyObject *state_format(glue_fmtstate *S, void *closure) {
    return PyLong_FromLong(S->F.format);
}
static PyObject *state_format_name(glue_fmtstate *S, void *closure) {
    return PyUnicode_FromString(spmv_format_name(S->F.format));
}
static PyObject *state_nrows(glue_fmtstate *S, void *closure) {
    return PyLong_FromLong(S->F.nrows);
}
static PyObject *state_ncols(glue_fmtstate *S, void *closure) {
    return PyLong_FromLong(S->F.ncols);
}
static PyObject *state_nnz(glue_fmtstate *S, void *closure) {
    return PyLong_FromLongLong(S->F.nnz);
}
static PyObject *state_params(glue_fmtstate *S, void *closure) {
    return Py_BuildValue("(ii)", S->F.param[0], S->F.param[1]);
}
static PyObject *state_scalars(glue_fmtstate *S, void *closure) {
    const int64_t *s = S->F.scalar;
    return Py_BuildValue("(LLLL)", (long long)s[0], (long long)s[1], (long long)s[2],
                         (long long)s[3]);
}
static PyObject *state_index_arrays(glue_fmtstate *S, void *closure) { return Py_NewRef(S->idx); }
static PyObject *state_value_arrays(glue_fmtstate *S, void *closure) { return Py_NewRef(S->val); }
static PyObject *state_dtype(glue_fmtstate *S, void *closure) {
    return (PyObject *)PyArray_DescrFromType(S->typenum);
}
static PyObject *state_nbytes(glue_fmtstate *S, void *closure) {
    return PyLong_FromLongLong(spmv_fmt_bytes(&S->F, S->typenum == NPY_FLOAT32 ? 4 : 8));
}

/* Pickled as its constructor's arguments: unpickling checks it again. */
static PyObject *state_reduce(glue_fmtstate *S, PyObject *noargs) {
    const spmv_fmt *F = &S->F;
    return Py_BuildValue("O(iiiL(ii)(LLLL)OO)", (PyObject *)Py_TYPE(S), F->format, F->nrows,
                         F->ncols, (long long)F->nnz, F->param[0], F->param[1],
                         (long long)F->scalar[0], (long long)F->scalar[1], (long long)F->scalar[2],
                         (long long)F->scalar[3], S->idx, S->val);
}

static PyObject *state_repr(glue_fmtstate *S) {
    return PyUnicode_FromFormat(
        "<pyspmv._core.State %s %dx%d, %lld stored, %s>", spmv_format_name(S->F.format), S->F.nrows,
        S->F.ncols, (long long)S->F.nnz, S->typenum == NPY_FLOAT32 ? "float32" : "float64");
}

static PyGetSetDef state_getset[] = {
    {"format", (getter)state_format, NULL, "format code (csrc/formats.def's order)", NULL},
    {"format_name", (getter)state_format_name, NULL, "format name ('csr', 'ell', ...)", NULL},
    {"nrows", (getter)state_nrows, NULL, "rows", NULL},
    {"ncols", (getter)state_ncols, NULL, "columns", NULL},
    {"nnz", (getter)state_nnz, NULL, "stored entries of the CSR matrix it came from", NULL},
    {"params", (getter)state_params, NULL, "the format's two parameters (p0, p1)", NULL},
    {"scalars", (getter)state_scalars, NULL, "the four derived sizes (s0, s1, s2, s3)", NULL},
    {"index_arrays", (getter)state_index_arrays, NULL,
     "the int32 index arrays, read-only (layouts: csrc/<format>.c)", NULL},
    {"value_arrays", (getter)state_value_arrays, NULL, "the value arrays, read-only", NULL},
    {"dtype", (getter)state_dtype, NULL, "value dtype: float32 or float64", NULL},
    {"nbytes", (getter)state_nbytes, NULL, "bytes the format stores (spmv_fmt_bytes)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef state_methods[] = {
    {"__reduce__", (PyCFunction)state_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot state_slots[] = {
    {Py_tp_new, state_new},
    {Py_tp_dealloc, state_dealloc},
    {Py_tp_repr, state_repr},
    {Py_tp_getset, state_getset},
    {Py_tp_methods, state_methods},
    {Py_tp_doc,
     "State(format, nrows, ncols, nnz, params, scalars, index_arrays, value_arrays): a matrix in "
     "one of the core's formats, checked once and immutable (convert() and recast() make them; "
     "this constructor copies arrays that could change, then runs the full check)"},
    {0, NULL},
};

PyType_Spec state_spec = {
    "pyspmv._core.State", sizeof(glue_fmtstate), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    state_slots,
};
