// pyspmv/_core.c: thin CPython glue over csrc/ (NumPy arrays in and out, statuses to exceptions)
// SPDX-License-Identifier: BSD-3-Clause
//
// Private: the public, keyword-friendly API is Python (pyspmv/*.py), which casts visibly and names
// arguments.  Converters here check and never cast.  A converted matrix crosses as a State
// (pyspmv._core.State, _glue.h's glue_fmtstate): format code, nrows, ncols, nnz, params (p0, p1),
// scalars (s0 .. s3), index_arrays and value_arrays, all read-only.  convert() and recast() make
// States, and State(...) makes one of arrays, copied where they could change and checked; so a State
// is its own seal, and the products (to_csr, mv, bench, _cuda's plans) take it without a check.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <numpy/arrayobject.h>

#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#define HAVE_OPENMP 1
#else
#define HAVE_OPENMP 0
#endif

#include "spmv.h"
#include "spmv_config.h"

#include "_glue.h"

static spmv_csr csr_of(int nrows, int ncols, PyArrayObject *indptr, PyArrayObject *indices) {
    spmv_csr A = {nrows, ncols, PyArray_DATA(indptr), PyArray_DATA(indices)};
    return A;
}

/* The lengths the core cannot see through a spmv_csr: indptr[nrows+1] and indices holding at least
 * indptr[nrows] entries.  The core checks everything else as it reads. */
static int csr_lengths(int nrows, PyArrayObject *indptr, PyArrayObject *indices, const char *fn) {
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

/* ---- functions ---- */

static PyObject *csr_check(PyObject *m, PyObject *args) {
    int nrows, ncols;
    PyArrayObject *indptr, *indices;
    spmv_err err = {0};
    int rc;
    if (!PyArg_ParseTuple(args, "iiO&O&", &nrows, &ncols, int32_array, &indptr, int32_array,
                          &indices))
        return NULL;
    spmv_csr A = csr_of(nrows, ncols, indptr, indices);
    CALL_C(PyArray_SIZE(indices) > NOGIL_MIN_WORK,
           rc = spmv_csr_check(&A, PyArray_SIZE(indptr), PyArray_SIZE(indices), &err));
    if (rc) return raise_spmv_error(m, rc, &err, "");
    Py_RETURN_NONE;
}

/* mm_read(body, first_line, format, field, nrows, ncols, nentries) -> (row, col, val): a Matrix
 * Market body parsed by spmv_mm_read (row and col int32, 0-based, None for array; val float64,
 * None for pattern); ValueError naming the line otherwise. */
static PyObject *mm_read(PyObject *m, PyObject *args) {
    Py_buffer text;
    long long first_line, nentries;
    int format, field, nrows, ncols, rc;
    spmv_err err = {0};
    if (!PyArg_ParseTuple(args, "y*LiiiiL", &text, &first_line, &format, &field, &nrows, &ncols,
                          &nentries))
        return NULL;
    spmv_mm_body B = {format, field, nrows, ncols, nentries, first_line};
    npy_intp n = nentries >= 0 ? (npy_intp)nentries : 0;
    int coord = format == SPMV_MM_COORDINATE, values = field != SPMV_MM_PATTERN;
    PyObject *row = coord ? PyArray_SimpleNew(1, &n, NPY_INT32) : Py_NewRef(Py_None);
    PyObject *col = coord ? PyArray_SimpleNew(1, &n, NPY_INT32) : Py_NewRef(Py_None);
    PyObject *val = values ? PyArray_SimpleNew(1, &n, NPY_FLOAT64) : Py_NewRef(Py_None);
    PyObject *res = NULL;
    if (row == NULL || col == NULL || val == NULL) goto exit;
    int32_t *r = coord ? PyArray_DATA((PyArrayObject *)row) : NULL;
    int32_t *c = coord ? PyArray_DATA((PyArrayObject *)col) : NULL;
    double *v = values ? PyArray_DATA((PyArrayObject *)val) : NULL;
    CALL_C(text.len > NOGIL_MIN_WORK, rc = spmv_mm_read(&B, text.buf, text.len, r, c, v, &err));
    if (rc) {
        raise_spmv_error(m, rc, &err, "");
        goto exit;
    }
    res = PyTuple_Pack(3, row, col, val);
exit:
    PyBuffer_Release(&text);
    Py_XDECREF(row);
    Py_XDECREF(col);
    Py_XDECREF(val);
    return res;
}

static PyObject *finite_check(PyObject *m, PyObject *args) {
    PyArrayObject *v;
    spmv_err err = {0};
    int rc;
    if (!PyArg_ParseTuple(args, "O&", real_array, &v)) return NULL;
    if (PyArray_TYPE(v) == NPY_FLOAT32)
        rc = spmv_finite_check_f32(PyArray_DATA(v), PyArray_SIZE(v), &err);
    else
        rc = spmv_finite_check_f64(PyArray_DATA(v), PyArray_SIZE(v), &err);
    if (rc == 0) Py_RETURN_NONE;
    return PyLong_FromLongLong(err.where);
}

static PyObject *features(PyObject *m, PyObject *args) {
    int nrows, ncols;
    PyArrayObject *indptr, *indices;
    spmv_gpu_props dev;
    spmv_err err = {0};
    int rc;
    if (!PyArg_ParseTuple(args, "iiO&O&iii", &nrows, &ncols, int32_array, &indptr, int32_array,
                          &indices, &dev.sm_count, &dev.threads_per_sm, &dev.warp_size) ||
        !csr_lengths(nrows, indptr, indices, "features"))
        return NULL;
    npy_intp n = SPMV_NFEATURES;
    PyObject *out = PyArray_SimpleNew(1, &n, NPY_FLOAT64);
    if (out == NULL) return NULL;
    spmv_csr A = csr_of(nrows, ncols, indptr, indices);
    double *o = PyArray_DATA((PyArrayObject *)out);
    CALL_C(PyArray_SIZE(indices) > NOGIL_MIN_WORK, rc = spmv_features_compute(&A, &dev, o, &err));
    if (rc) {
        Py_DECREF(out);
        return raise_spmv_error(m, rc, &err, "features");
    }
    return out;
}

static PyObject *names_tuple(const char *(*name)(int), int n) {
    PyObject *t = PyTuple_New(n);
    for (int i = 0; t != NULL && i < n; i++) {
        PyObject *s = PyUnicode_FromString(name(i) ? name(i) : "");
        if (s == NULL) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, s);
    }
    return t;
}

static PyObject *feature_names(PyObject *m, PyObject *noargs) {
    return names_tuple(spmv_feature_name, SPMV_NFEATURES);
}

/* gpu_props_h100() -> {"sm_count", "threads_per_sm", "warp_size"}: spmv_gpu_props_h100, the one
 * statement of the device the default features assume. */
static PyObject *gpu_props_h100(PyObject *m, PyObject *noargs) {
    spmv_gpu_props p;
    spmv_gpu_props_h100(&p);
    return Py_BuildValue("{sisisi}", "sm_count", (int)p.sm_count, "threads_per_sm",
                         (int)p.threads_per_sm, "warp_size", (int)p.warp_size);
}

static PyObject *format_names(PyObject *m, PyObject *noargs) {
    return names_tuple(spmv_format_name, SPMV_NFORMATS);
}

/* omp_threads() -> the threads an OpenMP region of the CPU kernels would start now (1 without
 * OpenMP): OMP_NUM_THREADS, else the runtime's default. */
static PyObject *omp_threads(PyObject *m, PyObject *noargs) {
#ifdef _OPENMP
    return PyLong_FromLong(omp_get_max_threads());
#else
    return PyLong_FromLong(1);
#endif
}

static PyObject *design_columns(PyObject *m, PyObject *noargs) {
    return names_tuple(spmv_design_column_name, SPMV_NCOLS);
}

/* format_facts() -> per format code {"unread": bits, "finite_x": bool}: the facts csrc/<format>.c
 * keeps beside its operations (spmv_format_unread, spmv_format_finite_x). */
static PyObject *format_facts(PyObject *m, PyObject *noargs) {
    PyObject *t = PyTuple_New(SPMV_NFORMATS);
    for (int f = 0; t != NULL && f < SPMV_NFORMATS; f++) {
        PyObject *v = Py_BuildValue("{sisO}", "unread", (int)spmv_format_unread(f), "finite_x",
                                    spmv_format_finite_x(f) ? Py_True : Py_False);
        if (v == NULL) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, f, v);
    }
    return t;
}

static PyObject *grid_tuple(const spmv_kernel_desc *d, int k) {
    PyObject *t = PyTuple_New(d->ngrid[k]);
    for (int i = 0; t != NULL && i < d->ngrid[k]; i++)
        PyTuple_SET_ITEM(t, i, PyLong_FromLong(d->grid[k][i]));
    return t;
}

/* One registry entry as a dict; parameter slots as 4-tuples (names None where unused). */
static PyObject *kernel_dict(const spmv_kernel_desc *d) {
    PyObject *g[SPMV_NPARAM] = {NULL};
    PyObject *e = NULL;
    int ok = 1;
    for (int k = 0; k < SPMV_NPARAM; k++) ok = ok && (g[k] = grid_tuple(d, k)) != NULL;
    /* the id's fields: "library/format[/kernel]" (the first one names the id's library) */
    const char *f1 = strchr(d->id, '/'), *f2 = f1 != NULL ? strchr(f1 + 1, '/') : NULL;
    int prefix_len = f1 != NULL ? (int)(f1 - d->id) : (int)strlen(d->id);
    if (ok)
        e = Py_BuildValue(
            "{s:s,s:s#,s:z,s:i,s:s,s:i,s:i,s:(zzzz),s:(OOOO),s:(iiii),s:i,s:O}", "id", d->id,
            "prefix", d->id, (Py_ssize_t)prefix_len, "name", f2 != NULL ? f2 + 1 : NULL, "device",
            d->device, "library", d->library == SPMV_LIB_CUSPARSE ? "cusparse" : "pyspmv", "format",
            d->format, "kernel", d->kernel, "param_names", d->param_name[0], d->param_name[1],
            d->param_name[2], d->param_name[3], "grid", g[0], g[1], g[2], g[3], "param_default",
            d->param_default[0], d->param_default[1], d->param_default[2], d->param_default[3],
            "launches", d->launches, "deterministic", d->deterministic ? Py_True : Py_False);
    for (int k = 0; k < SPMV_NPARAM; k++) Py_XDECREF(g[k]);
    return e;
}

static PyObject *kernels(PyObject *m, PyObject *noargs) {
    PyObject *list = PyList_New(0);
    for (int i = 0; list != NULL && i < spmv_kernel_count(); i++) {
        PyObject *e = kernel_dict(spmv_kernel_get(i));
        if (e == NULL || PyList_Append(list, e) < 0) Py_CLEAR(list);
        Py_XDECREF(e);
    }
    return list;
}

/* A configuration as Python sees it: (kernel, params, given, id, p), the registry index, the four
 * slots (defaults filled), the bits of the slots the id names, the canonical id and the p_* design
 * columns (NaN where none): csrc/config.c's spmv_config, spmv_config_id, spmv_config_columns. */
static PyObject *config_tuple(const spmv_config *c) {
    char id[SPMV_CONFIG_ID_MAX];
    spmv_config_cols cols;
    spmv_err err = {0};
    int len = spmv_config_id(c, id, sizeof id);
    if (len < 0 || len >= (int)sizeof id || spmv_config_columns(c, &cols, &err))
        return PyErr_Format(PyExc_ValueError, "configuration of kernel %d: %s", (int)c->kernel,
                            err.msg[0] ? err.msg : "its id does not fit");
    PyObject *p = PyTuple_New(SPMV_NPCOLS);
    for (int k = 0; p != NULL && k < SPMV_NPCOLS; k++) {
        PyObject *v = PyFloat_FromDouble(cols.p[k]);
        if (v == NULL)
            Py_CLEAR(p);
        else
            PyTuple_SET_ITEM(p, k, v);
    }
    if (p == NULL) return NULL;
    return Py_BuildValue("(i(iiii)isN)", (int)c->kernel, (int)c->param[0], (int)c->param[1],
                         (int)c->param[2], (int)c->param[3], (int)c->given, id, p);
}

/* spmv_config_parse of a str into *c; a ValueError with the core's message otherwise (an unknown
 * kernel's message lists the registry's kernels). */
static int parse_id(PyObject *id, spmv_config *c) {
    Py_ssize_t len;
    spmv_err err = {0};
    if (!PyUnicode_Check(id)) {
        PyErr_Format(PyExc_TypeError,
                     "A configuration must be a Config or an id string. Got %s instead.",
                     Py_TYPE(id)->tp_name);
        return 0;
    }
    const char *s = PyUnicode_AsUTF8AndSize(id, &len);
    if (s == NULL) return 0;
    if ((Py_ssize_t)strlen(s) != len) {
        PyErr_Format(PyExc_ValueError, "Configuration %R: an id holds no NUL character.", id);
        return 0;
    }
    if (spmv_config_parse(s, c, &err) == SPMV_OK) return 1;
    if (err.where != 0) {
        PyErr_SetString(PyExc_ValueError, err.msg);
        return 0;
    }
    PyObject *known = PyList_New(0), *sep = NULL, *joined = NULL;
    for (int i = 0; known != NULL && i < spmv_kernel_count(); i++) {
        PyObject *k = PyUnicode_FromString(spmv_kernel_get(i)->id);
        if (k == NULL || PyList_Append(known, k) < 0) Py_CLEAR(known);
        Py_XDECREF(k);
    }
    if (known != NULL && PyList_Sort(known) == 0 && (sep = PyUnicode_FromString(", ")) != NULL)
        joined = PyUnicode_Join(sep, known);
    if (joined != NULL)
        PyErr_Format(PyExc_ValueError,
                     "%s Known kernels: %U; list every id with pyspmv.configs('cpu') or "
                     "pyspmv.configs('cuda').",
                     err.msg, joined);
    Py_XDECREF(known);
    Py_XDECREF(sep);
    Py_XDECREF(joined);
    return 0;
}

/* config_parse(id) -> config tuple (config_tuple) */
static PyObject *config_parse(PyObject *m, PyObject *id) {
    spmv_config c;
    (void)m;
    return parse_id(id, &c) ? config_tuple(&c) : NULL;
}

/* config_expand(device) -> list of config tuples: every configuration of device (0 cpu, 1 cuda) in
 * registry order (spmv_config_expand). */
static PyObject *config_expand(PyObject *m, PyObject *args) {
    int device;
    (void)m;
    if (!PyArg_ParseTuple(args, "i", &device)) return NULL;
    int32_t n = spmv_config_expand(device, NULL);
    spmv_config *c = PyMem_Calloc(n > 0 ? (size_t)n : 1, sizeof *c);
    if (c == NULL) return PyErr_NoMemory();
    spmv_config_expand(device, c);
    PyObject *list = PyList_New(n);
    for (int32_t j = 0; list != NULL && j < n; j++) {
        PyObject *t = config_tuple(&c[j]);
        if (t == NULL)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, j, t);
    }
    PyMem_Free(c);
    return list;
}

/* A zeroed, read-only 1-D array of n entries over a new bytes object (its base): C fills it through
 * data before Python sees it, and nothing can make it writeable afterwards (see _glue.h). */
static PyObject *sealed_array(npy_intp n, int typenum, void **data) {
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

static PyObject *new_arrays(int n, const int64_t *len, int typenum, void **data) {
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
static PyObject *state_wrap(PyObject *module, const spmv_fmt *F, int typenum, PyObject *idx,
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

static PyType_Spec state_spec = {
    "pyspmv._core.State", sizeof(glue_fmtstate), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    state_slots,
};

/* convert(format, p0, p1, max_fill, nrows, ncols, indptr, indices, values) -> State */
static PyObject *convert(PyObject *m, PyObject *args) {
    spmv_fmt F = {0};
    int nrows, ncols, rc;
    PyArrayObject *indptr, *indices, *values;
    spmv_err err = {0};
    PyObject *idx = NULL, *val = NULL, *res = NULL;
    if (!PyArg_ParseTuple(args, "iiidiiO&O&O&", &F.format, &F.param[0], &F.param[1], &F.max_fill,
                          &nrows, &ncols, int32_array, &indptr, int32_array, &indices, real_array,
                          &values) ||
        !csr_lengths(nrows, indptr, indices, "convert"))
        return NULL;
    if (F.format < 0 || F.format >= SPMV_NFORMATS)
        return PyErr_Format(PyExc_ValueError, "format code %d is not in [0, %d)", F.format,
                            SPMV_NFORMATS);
    if (PyArray_SIZE(values) < ((const int32_t *)PyArray_DATA(indptr))[nrows])
        return PyErr_Format(PyExc_ValueError, "convert: values has %zd entries; indptr[nrows] = %d",
                            (Py_ssize_t)PyArray_SIZE(values),
                            ((const int32_t *)PyArray_DATA(indptr))[nrows]);
    spmv_csr A = csr_of(nrows, ncols, indptr, indices);
    int big = PyArray_SIZE(indices) > NOGIL_MIN_WORK;
    CALL_C(big, rc = spmv_fmt_size(&A, &F, &err));
    if (rc) return raise_spmv_error(m, rc, &err, spmv_format_name(F.format));
    int typenum = PyArray_TYPE(values);
    idx = new_arrays(SPMV_MAXIDX, F.nidx, NPY_INT32, (void **)F.idx);
    val = new_arrays(SPMV_MAXVAL, F.nval, typenum, F.val);
    if (idx == NULL || val == NULL) goto exit;
    if (typenum == NPY_FLOAT32)
        CALL_C(big, rc = spmv_fmt_fill_f32(&A, PyArray_DATA(values), &F, &err));
    else
        CALL_C(big, rc = spmv_fmt_fill_f64(&A, PyArray_DATA(values), &F, &err));
    if (rc) {
        raise_spmv_error(m, rc, &err, spmv_format_name(F.format));
        goto exit;
    }
    /* No spmv_fmt_check: spmv_fmt_fill_* checked A and its output needs none (spmv.h). */
    res = state_wrap(m, &F, typenum, idx, val);
exit:
    Py_XDECREF(idx);
    Py_XDECREF(val);
    return res;
}

/* fmt_size(format, p0, p1, max_fill, nrows, ncols, indptr, indices) -> (scalars, nidx, nval):
 * conversion's first step alone, for per-configuration features without the arrays */
static PyObject *fmt_size(PyObject *m, PyObject *args) {
    spmv_fmt F = {0};
    int nrows, ncols, rc;
    PyArrayObject *indptr, *indices;
    spmv_err err = {0};
    if (!PyArg_ParseTuple(args, "iiidiiO&O&", &F.format, &F.param[0], &F.param[1], &F.max_fill,
                          &nrows, &ncols, int32_array, &indptr, int32_array, &indices) ||
        !csr_lengths(nrows, indptr, indices, "fmt_size"))
        return NULL;
    if (F.format < 0 || F.format >= SPMV_NFORMATS)
        return PyErr_Format(PyExc_ValueError, "format code %d is not in [0, %d)", F.format,
                            SPMV_NFORMATS);
    spmv_csr A = csr_of(nrows, ncols, indptr, indices);
    CALL_C(PyArray_SIZE(indices) > NOGIL_MIN_WORK, rc = spmv_fmt_size(&A, &F, &err));
    if (rc) return raise_spmv_error(m, rc, &err, spmv_format_name(F.format));
    return Py_BuildValue("((LLLL)(LLLL)(LL))", (long long)F.scalar[0], (long long)F.scalar[1],
                         (long long)F.scalar[2], (long long)F.scalar[3], (long long)F.nidx[0],
                         (long long)F.nidx[1], (long long)F.nidx[2], (long long)F.nidx[3],
                         (long long)F.nval[0], (long long)F.nval[1]);
}

/* The UTF-8 text of each str of seq (a sequence from PySequence_Fast) into a new array (PyMem_Free
 * it), valid while seq lives; NULL with an exception set where an item is no str or holds a NUL. */
static const char **utf8_ids(PyObject *seq, const char *what) {
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    const char **ids = PyMem_Calloc(n > 0 ? (size_t)n : 1, sizeof *ids);
    if (ids == NULL) return (const char **)PyErr_NoMemory();
    for (Py_ssize_t j = 0; j < n; j++) {
        PyObject *id = PySequence_Fast_GET_ITEM(seq, j);
        Py_ssize_t len;
        ids[j] = PyUnicode_Check(id) ? PyUnicode_AsUTF8AndSize(id, &len) : NULL;
        if (ids[j] == NULL || (Py_ssize_t)strlen(ids[j]) != len) {
            if (!PyErr_Occurred())
                PyErr_Format(PyUnicode_Check(id) ? PyExc_ValueError : PyExc_TypeError,
                             "%s: configuration %zd must be an id string without NUL characters. "
                             "Got %R instead.",
                             what, j, id);
            PyMem_Free(ids);
            return NULL;
        }
    }
    return ids;
}

/* config_sizes(ids, value_bytes, max_fill, nrows, ncols, indptr, indices) -> (bytes_moved,
 * padding_ratio, notes): spmv_config_sizes of the configurations ids (a tuple of str, which the core
 * parses); notes[j] is the reason a format cannot serve A, or None */
static PyObject *config_sizes(PyObject *m, PyObject *args) {
    PyArrayObject *indptr, *indices;
    PyObject *ids_arg;
    int vb, nrows, ncols, rc;
    double max_fill;
    spmv_err err = {0}, *why = NULL;
    PyObject *bytes = NULL, *pad = NULL, *notes = NULL, *res = NULL;
    const char **ids = NULL;
    if (!PyArg_ParseTuple(args, "O!idiiO&O&", &PyTuple_Type, &ids_arg, &vb, &max_fill, &nrows,
                          &ncols, int32_array, &indptr, int32_array, &indices) ||
        !csr_lengths(nrows, indptr, indices, "config_sizes"))
        return NULL;
    npy_intp n = PyTuple_GET_SIZE(ids_arg);
    if (n > INT32_MAX)
        return PyErr_Format(PyExc_ValueError, "config_sizes: %zd configurations", (Py_ssize_t)n);
    ids = utf8_ids(ids_arg, "config_sizes");
    if (ids == NULL) return NULL;
    why = PyMem_Calloc(n > 0 ? (size_t)n : 1, sizeof *why);
    bytes = PyArray_SimpleNew(1, &n, NPY_FLOAT64);
    pad = PyArray_SimpleNew(1, &n, NPY_FLOAT64);
    notes = PyTuple_New(n);
    if (why == NULL || bytes == NULL || pad == NULL || notes == NULL) {
        if (why == NULL) PyErr_NoMemory();
        goto exit;
    }
    spmv_configs C = {0};
    C.n = (int32_t)n;
    C.ids = ids; /* the core parses them (spmv_configs.ids) */
    spmv_csr A = csr_of(nrows, ncols, indptr, indices);
    CALL_C(PyArray_SIZE(indices) > NOGIL_MIN_WORK,
           rc = spmv_config_sizes(&A, &C, vb, max_fill, PyArray_DATA((PyArrayObject *)bytes),
                                  PyArray_DATA((PyArrayObject *)pad), why, &err));
    if (rc) {
        raise_spmv_error(m, rc, &err, "config_features");
        goto exit;
    }
    for (npy_intp j = 0; j < n; j++) {
        PyObject *note = why[j].code ? PyUnicode_FromString(why[j].msg) : Py_NewRef(Py_None);
        if (note == NULL) goto exit;
        PyTuple_SET_ITEM(notes, j, note);
    }
    res = PyTuple_Pack(3, bytes, pad, notes);
exit:
    PyMem_Free(ids);
    PyMem_Free(why);
    Py_XDECREF(bytes);
    Py_XDECREF(pad);
    Py_XDECREF(notes);
    return res;
}

/* to_csr(state) -> (indptr, indices, values) */
static PyObject *to_csr(PyObject *m, PyObject *arg) {
    spmv_err err = {0};
    int rc;
    const glue_fmtstate *S = state_get(m, arg);
    if (S == NULL) return NULL;
    const spmv_fmt F = S->F;
    int typenum = S->typenum;
    npy_intp np1 = (npy_intp)F.nrows + 1, nnz = (npy_intp)F.nnz;
    PyObject *indptr = PyArray_SimpleNew(1, &np1, NPY_INT32);
    PyObject *indices = PyArray_SimpleNew(1, &nnz, NPY_INT32);
    PyObject *values = PyArray_SimpleNew(1, &nnz, typenum);
    PyObject *res = NULL;
    if (indptr == NULL || indices == NULL || values == NULL) goto exit;
    int32_t *ip = PyArray_DATA((PyArrayObject *)indptr),
            *ix = PyArray_DATA((PyArrayObject *)indices);
    void *v = PyArray_DATA((PyArrayObject *)values);
    if (typenum == NPY_FLOAT32)
        CALL_C(nnz > NOGIL_MIN_WORK, rc = spmv_fmt_to_csr_f32(&F, ip, ix, v, &err));
    else
        CALL_C(nnz > NOGIL_MIN_WORK, rc = spmv_fmt_to_csr_f64(&F, ip, ix, v, &err));
    if (rc) {
        raise_spmv_error(m, rc, &err, spmv_format_name(F.format));
        goto exit;
    }
    res = PyTuple_Pack(3, indptr, indices, values);
exit:
    Py_XDECREF(indptr);
    Py_XDECREF(indices);
    Py_XDECREF(values);
    return res;
}

/* mv(state, kernel, x, y): y = A x in place */
static PyObject *mv(PyObject *m, PyObject *args) {
    PyObject *state;
    int kernel, rc;
    PyArrayObject *x, *y;
    spmv_err err = {0};
    const glue_fmtstate *S;
    if (!PyArg_ParseTuple(args, "OiO&O&", &state, &kernel, real_array, &x, real_out_array, &y) ||
        (S = state_get(m, state)) == NULL)
        return NULL;
    const spmv_fmt F = S->F;
    int typenum = S->typenum;
    if (!check_xy(&F, typenum, x, y)) return NULL;
    int big = F.nnz > NOGIL_MIN_WORK;
    if (typenum == NPY_FLOAT32)
        CALL_C(big, rc = spmv_fmt_mv_f32(&F, kernel, PyArray_DATA(x), PyArray_DATA(y), &err));
    else
        CALL_C(big, rc = spmv_fmt_mv_f64(&F, kernel, PyArray_DATA(x), PyArray_DATA(y), &err));
    if (rc) return raise_spmv_error(m, rc, &err, spmv_format_name(F.format));
    Py_RETURN_NONE;
}

/* bench(state, kernel, x, y, warmup, repeats, budget_s) -> (median, q25, q75, min, runs) in ms */
static PyObject *bench(PyObject *m, PyObject *args) {
    PyObject *state;
    int kernel, warmup, repeats, rc;
    double budget;
    PyArrayObject *x, *y;
    spmv_err err = {0};
    spmv_timing t = {0};
    const glue_fmtstate *S;
    if (!PyArg_ParseTuple(args, "OiO&O&iid", &state, &kernel, real_array, &x, real_out_array, &y,
                          &warmup, &repeats, &budget) ||
        (S = state_get(m, state)) == NULL)
        return NULL;
    const spmv_fmt F = S->F;
    int typenum = S->typenum;
    if (!check_xy(&F, typenum, x, y)) return NULL;
    Py_BEGIN_ALLOW_THREADS if (typenum == NPY_FLOAT32) rc = spmv_fmt_bench_f32(
        &F, kernel, PyArray_DATA(x), PyArray_DATA(y), warmup, repeats, budget, &t, &err);
    else rc = spmv_fmt_bench_f64(&F, kernel, PyArray_DATA(x), PyArray_DATA(y), warmup, repeats,
                                 budget, &t, &err);
    Py_END_ALLOW_THREADS if (rc) return raise_spmv_error(m, rc, &err, spmv_format_name(F.format));
    return Py_BuildValue("(ddddL)", t.median_ms, t.q25_ms, t.q75_ms, t.min_ms, (long long)t.runs);
}

/* recast(state, float64) -> the State with its values cast to float64 (True) or float32
 * (False), sharing its index arrays: a conversion serves both value types.  ValueError where a
 * finite value turns infinite in float32. */
static PyObject *recast(PyObject *m, PyObject *args) {
    PyObject *state, *val = NULL, *res = NULL;
    int to64;
    const glue_fmtstate *S;
    if (!PyArg_ParseTuple(args, "Op", &state, &to64) || (S = state_get(m, state)) == NULL)
        return NULL;
    spmv_fmt F = S->F;
    int from = S->typenum, to = to64 ? NPY_FLOAT64 : NPY_FLOAT32;
    if ((val = PyTuple_New(SPMV_MAXVAL)) == NULL) return NULL;
    for (int k = 0; k < SPMV_MAXVAL; k++) {
        void *out;
        PyObject *a = sealed_array((npy_intp)F.nval[k], to, &out);
        if (a == NULL) goto exit;
        PyTuple_SET_ITEM(val, k, a);
        for (int64_t i = 0; i < F.nval[k]; i++) {
            double v =
                from == NPY_FLOAT32 ? ((const float *)F.val[k])[i] : ((const double *)F.val[k])[i];
            if (to == NPY_FLOAT32) {
                float f = (float)v;
                if (isinf(f) && !isinf(v)) {
                    char msg[120]; /* PyErr_Format has no %g */
                    snprintf(msg, sizeof msg,
                             "value %g is past float32's range (3.4e38): this matrix has no "
                             "float32 form",
                             v);
                    PyErr_SetString(PyExc_ValueError, msg);
                    goto exit;
                }
                ((float *)out)[i] = f;
            } else {
                ((double *)out)[i] = v;
            }
        }
        F.val[k] = out;
    }
    /* the index arrays are the State's, the values new and of the same lengths: still valid */
    res = state_wrap(m, &F, to, S->idx, val);
exit:
    Py_XDECREF(val);
    return res;
}

/* ---- models: a spec dict of NumPy arrays -> spmv_model + spmv_configs, held by a capsule ---- */

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

static const char MODEL_CAPSULE[] = "pyspmv._core.model";

/* Model work past this many steps (spmv_model_cost x rows) runs without the GIL: below, a call
 * ends within milliseconds, and a thread that must then wait for the GIL back (a solver's
 * selection thread behind its iterations) loses more than the release gains. */
#define NOGIL_MIN_STEPS SPMV_POLL_STEPS

/* A long model call: the spmv_interrupt it passes the core, and the thread state saved while it
 * runs without the GIL (NULL: it holds the GIL). */
typedef struct {
    spmv_interrupt intr;
    PyThreadState *saved;
} glue_call;

/* The core's interruption check (spmv_interrupt): the GIL taken back where the call released it,
 * then Python's signal handlers; one that raises (Ctrl-C's KeyboardInterrupt) stops the call with
 * its exception set, which the caller returns (raise_spmv_error leaves it). */
static int glue_interrupted(void *arg) {
    glue_call *c = arg;
    if (c->saved != NULL) PyEval_RestoreThread(c->saved);
    int stop = PyErr_CheckSignals() < 0;
    if (c->saved != NULL) c->saved = PyEval_SaveThread();
    return stop;
}

static void call_begin(glue_call *c, int64_t steps) {
    c->intr.fn = glue_interrupted;
    c->intr.arg = c;
    c->saved = steps > NOGIL_MIN_STEPS ? PyEval_SaveThread() : NULL;
}

static void call_end(glue_call *c) {
    if (c->saved != NULL) PyEval_RestoreThread(c->saved);
    c->saved = NULL;
}

/* spec[key] as an int (required). */
static int spec_int(PyObject *spec, const char *key, long *out) {
    PyObject *v = PyDict_GetItemString(spec, key);
    if (v == NULL) {
        PyErr_Format(PyExc_ValueError, "model spec lacks '%s'", key);
        return 0;
    }
    *out = PyLong_AsLong(v);
    return !(*out == -1 && PyErr_Occurred());
}

static int spec_double(PyObject *spec, const char *key, double *out) {
    PyObject *v = PyDict_GetItemString(spec, key);
    if (v == NULL) {
        PyErr_Format(PyExc_ValueError, "model spec lacks '%s'", key);
        return 0;
    }
    *out = PyFloat_AsDouble(v);
    return !(*out == -1.0 && PyErr_Occurred());
}

/* spec[key]: a 1-D array of typenum with exactly n entries, kept alive in refs; absent or None
 * gives NULL when optional.  Returns 0 with an exception set on failure. */
static int spec_array(PyObject *spec, const char *key, int typenum, int64_t n, int optional,
                      PyObject *refs, const void **out) {
    PyObject *v = PyDict_GetItemString(spec, key);
    *out = NULL;
    if (v == NULL || v == Py_None) {
        if (optional) return 1;
        PyErr_Format(PyExc_ValueError, "model spec lacks the array '%s'", key);
        return 0;
    }
    if (!check_array(v, typenum, 0, key)) return 0;
    if (PyArray_SIZE((PyArrayObject *)v) != n) {
        PyErr_Format(PyExc_ValueError, "model spec array '%s' has %zd entries; it must have %lld",
                     key, (Py_ssize_t)PyArray_SIZE((PyArrayObject *)v), (long long)n);
        return 0;
    }
    if (PyList_Append(refs, v) < 0) return 0;
    *out = PyArray_DATA((PyArrayObject *)v);
    return 1;
}

#define I32(key, n, opt, dst) spec_array(spec, key, NPY_INT32, n, opt, refs, (const void **)&(dst))
#define F64(key, n, opt, dst)                                                                      \
    spec_array(spec, key, NPY_FLOAT64, n, opt, refs, (const void **)&(dst))
#define INT(key, dst) (spec_int(spec, key, &l_) && ((dst) = (int32_t)l_, 1))

/* Sub-model arrays (a cascade's stages) live in capsules kept in refs, freed with the rest. */
static void block_free(PyObject *cap) {
    PyMem_Free(PyCapsule_GetPointer(cap, "pyspmv._core.block"));
}

static int parse_model(PyObject *spec, spmv_model *M, PyObject *refs, int depth);

/* spec[f->name] into M at f->offset, as the field's table entry (csrc/model*.c) describes it:
 * scalars in range, arrays of their exact length, a list of sub-model specs.  Returns 0 with an
 * exception set on failure. */
static int parse_field(PyObject *spec, spmv_model *M, const spmv_model_field *f, PyObject *refs,
                       int depth) {
    char *at = (char *)M + f->offset;
    long l;
    double d;
    switch (f->type) {
    case SPMV_FIELD_INT:
        if (f->flags & SPMV_FIELD_DERIVED) return 1; /* set by the field it counts */
        if (!spec_int(spec, f->name, &l)) return 0;
        if (l < f->lo || l > f->hi) {
            PyErr_Format(PyExc_ValueError, "model spec field '%s' = %ld is outside [%lld, %lld]",
                         f->name, l, (long long)f->lo, (long long)f->hi);
            return 0;
        }
        *(int32_t *)(void *)at = (int32_t)l;
        return 1;
    case SPMV_FIELD_REAL:
        if (!spec_double(spec, f->name, &d)) return 0;
        *(double *)(void *)at = d;
        return 1;
    case SPMV_FIELD_MODELS:
        break;
    default: {
        int typenum = f->type == SPMV_FIELD_I32   ? NPY_INT32
                      : f->type == SPMV_FIELD_F64 ? NPY_FLOAT64
                                                  : NPY_UINT8;
        return spec_array(spec, f->name, typenum, spmv_model_field_len(M, f),
                          (f->flags & SPMV_FIELD_OPTIONAL) != 0, refs, (const void **)at);
    }
    }
    PyObject *subs = PyDict_GetItemString(spec, f->name);
    if (subs == NULL || !PyList_Check(subs) || PyList_GET_SIZE(subs) < 1 ||
        PyList_GET_SIZE(subs) > INT32_MAX || depth > 0) {
        PyErr_Format(PyExc_ValueError,
                     "model spec field '%s' must be a non-empty list of sub-model specs (not "
                     "inside a sub-model)",
                     f->name);
        return 0;
    }
    Py_ssize_t n = PyList_GET_SIZE(subs);
    spmv_model *sub = PyMem_Calloc((size_t)n, sizeof(spmv_model));
    PyObject *cap = sub == NULL ? NULL : PyCapsule_New(sub, "pyspmv._core.block", block_free);
    if (cap == NULL) {
        PyMem_Free(sub);
        if (!PyErr_Occurred()) PyErr_NoMemory();
        return 0;
    }
    int ok = PyList_Append(refs, cap) == 0;
    Py_DECREF(cap);
    /* the count goes to the INT field len[0] names */
    int32_t nf;
    const spmv_model_field *kf = spmv_model_fields(M->kind, &nf, NULL);
    for (int32_t i = 0; ok && i < nf; i++)
        if (kf[i].type == SPMV_FIELD_INT && strcmp(kf[i].name, f->len[0]) == 0)
            *(int32_t *)(void *)((char *)M + kf[i].offset) = (int32_t)n;
    for (Py_ssize_t s = 0; ok && s < n; s++) {
        PyObject *item = PyList_GET_ITEM(subs, s);
        if (!PyDict_Check(item)) {
            PyErr_Format(PyExc_TypeError, "model spec field '%s' must hold dicts", f->name);
            return 0;
        }
        ok = parse_model(item, &sub[s], refs, depth + 1);
        if (ok && (sub[s].kind < 0 || sub[s].kind > 62 || !((f->hi >> sub[s].kind) & 1))) {
            PyErr_Format(PyExc_ValueError, "model spec field '%s' cannot hold a model of kind %d",
                         f->name, sub[s].kind);
            return 0;
        }
    }
    *(const spmv_model **)(void *)at = sub;
    return ok;
}

/* The fields of one table: scalars first, whose values give the arrays' lengths. */
static int parse_fields(PyObject *spec, spmv_model *M, const spmv_model_field *f, int32_t n,
                        PyObject *refs, int depth) {
    for (int pass = 0; pass < 2; pass++)
        for (int32_t i = 0; i < n; i++) {
            int scalar = f[i].type == SPMV_FIELD_INT || f[i].type == SPMV_FIELD_REAL;
            if (scalar == (pass == 0) && !parse_field(spec, M, &f[i], refs, depth)) return 0;
        }
    return 1;
}

/* A spec: 'kind', then the head's fields and the kind's, each as its table says. */
static int parse_model(PyObject *spec, spmv_model *M, PyObject *refs, int depth) {
    long kind;
    int32_t nh, nk = 0;
    const char *name = NULL;
    if (!spec_int(spec, "kind", &kind)) return 0;
    const spmv_model_field *head = spmv_model_fields(-1, &nh, NULL);
    const spmv_model_field *own =
        kind >= 0 && kind < SPMV_MODEL_NKINDS ? spmv_model_fields((int)kind, &nk, &name) : NULL;
    if (name == NULL) {
        PyErr_Format(PyExc_ValueError, "model spec kind %ld is unknown", kind);
        return 0;
    }
    M->kind = (int)kind;
    return parse_fields(spec, M, head, nh, refs, depth) &&
           parse_fields(spec, M, own, nk, refs, depth);
}

/* A new int32 or float64 array of n entries in refs; its data into *data. */
static int ref_array(PyObject *refs, npy_intp n, int typenum, void **data) {
    PyObject *a = PyArray_ZEROS(1, &n, typenum, 0);
    if (a == NULL || PyList_Append(refs, a) < 0) {
        Py_XDECREF(a);
        return 0;
    }
    Py_DECREF(a); /* refs holds it */
    *data = PyArray_DATA((PyArrayObject *)a);
    return 1;
}

/* The configurations of a spec: "cfg.ids" (a sequence of cfg.n configuration ids), each parsed by
 * the core once, here, into the columns of the spmv_configs table (spmv_config_columns). */
static int parse_configs(PyObject *spec, glue_model *G, PyObject *refs) {
    long l_;
    spmv_configs *C = &G->configs;
    const int32_t *dev;
    if (!INT("cfg.n", C->n) || !INT("cfg.nextra", C->nextra)) return 0;
    G->nfeatures = 0;
    if (PyDict_GetItemString(spec, "cfg.nfeatures") != NULL && !INT("cfg.nfeatures", G->nfeatures))
        return 0;
    if (C->n < 0 || C->nextra < 0 || G->nfeatures < 0) {
        PyErr_SetString(PyExc_ValueError,
                        "model spec: cfg.n, cfg.nextra and cfg.nfeatures must be >= 0");
        return 0;
    }
    int64_t n = C->n;
    if (G->nfeatures > 0) /* a caller's features: only the groups and extra columns are read */
        return I32("cfg.group", n, 0, C->group) && F64("cfg.extra", n * C->nextra, 0, C->extra);
    if (!I32("cfg.group", n, 0, C->group) || !F64("cfg.extra", n * C->nextra, 0, C->extra) ||
        !I32("dev", 3, 0, dev))
        return 0;
    G->dev.sm_count = dev[0];
    G->dev.threads_per_sm = dev[1];
    G->dev.warp_size = dev[2];
    PyObject *ids = PyDict_GetItemString(spec, "cfg.ids");
    PyObject *seq =
        ids != NULL ? PySequence_Fast(ids, "model spec: cfg.ids must be a sequence") : NULL;
    if (seq == NULL) {
        if (ids == NULL)
            PyErr_SetString(PyExc_ValueError,
                            "model spec: cfg.ids (the configuration ids) is missing");
        return 0;
    }
    int32_t *format, *param, *unread;
    double *p, *launches;
    const char **utf8 = NULL;
    spmv_err err = {0};
    int ok = PySequence_Fast_GET_SIZE(seq) == n;
    if (!ok)
        PyErr_Format(PyExc_ValueError, "model spec: cfg.ids holds %zd ids; cfg.n is %d",
                     PySequence_Fast_GET_SIZE(seq), (int)n);
    ok = ok && ref_array(refs, (npy_intp)n, NPY_INT32, (void **)&format) &&
         ref_array(refs, (npy_intp)(2 * n), NPY_INT32, (void **)&param) &&
         ref_array(refs, (npy_intp)n, NPY_INT32, (void **)&unread) &&
         ref_array(refs, (npy_intp)(SPMV_NPCOLS * n), NPY_FLOAT64, (void **)&p) &&
         ref_array(refs, (npy_intp)n, NPY_FLOAT64, (void **)&launches) &&
         (utf8 = utf8_ids(seq, "model spec: cfg.ids")) != NULL;
    if (ok && spmv_configs_table(C->n, utf8, format, param, unread, p, launches, &err)) {
        PyErr_Format(PyExc_ValueError, "model spec: cfg.ids[%d]: %s", (int)err.where, err.msg);
        ok = 0;
    }
    PyMem_Free(utf8);
    Py_DECREF(seq);
    if (!ok) return 0;
    C->format = format;
    C->param = param;
    C->unread = unread;
    C->p = p;
    C->launches = launches;
    return 1;
}

static void model_capsule_free(PyObject *cap) {
    glue_model *G = PyCapsule_GetPointer(cap, MODEL_CAPSULE);
    if (G == NULL) return;
    Py_XDECREF(G->refs);
    PyMem_Free(G);
}

/* One spmv_model_field as a dict: name, type ('int', 'real', 'int32', 'float64', 'uint8',
 * 'models'), the flags as booleans, lo, hi, and the length rule: len, a list of (field, plus),
 * and add. */
static PyObject *field_dict(const spmv_model_field *f) {
    static const char *const types[] = {"int", "real", "int32", "float64", "uint8", "models"};
    PyObject *len = PyList_New(0);
    for (int k = 0; len != NULL && k < 2; k++) {
        if (f->len[k] == NULL) continue;
        PyObject *t = Py_BuildValue("(si)", f->len[k], (int)f->plus[k]);
        if (t == NULL || PyList_Append(len, t) < 0) Py_CLEAR(len);
        Py_XDECREF(t);
    }
    if (len == NULL) return NULL;
    return Py_BuildValue("{sssssOsOsOsLsLsNsi}", "name", f->name, "type", types[f->type],
                         "optional", (f->flags & SPMV_FIELD_OPTIONAL) ? Py_True : Py_False,
                         "neg_inf", (f->flags & SPMV_FIELD_NEG_INF) ? Py_True : Py_False, "derived",
                         (f->flags & SPMV_FIELD_DERIVED) ? Py_True : Py_False, "lo",
                         (long long)f->lo, "hi", (long long)f->hi, "len", len, "add", (int)f->add);
}

/* model_fields(kind) -> (name, tuple of field dicts): kind -1 is the head (csrc/model.c), 0 ..
 * NKINDS-1 the kinds of csrc/models.def (0: a cascade's one-class stage); None outside. */
static PyObject *model_fields(PyObject *m, PyObject *args) {
    int kind;
    int32_t n;
    const char *name;
    if (!PyArg_ParseTuple(args, "i", &kind)) return NULL;
    const spmv_model_field *f = spmv_model_fields(kind, &n, &name);
    if (name == NULL) Py_RETURN_NONE;
    PyObject *t = PyTuple_New(n);
    for (int32_t i = 0; t != NULL && i < n; i++) {
        PyObject *d = field_dict(&f[i]);
        if (d == NULL) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, d);
    }
    return t == NULL ? NULL : Py_BuildValue("(sN)", name, t);
}

/* model_new(spec) -> capsule: the model and its configurations, checked by spmv_model_check */
static PyObject *model_new(PyObject *m, PyObject *args) {
    PyObject *spec, *cap = NULL;
    spmv_err err = {0};
    if (!PyArg_ParseTuple(args, "O!", &PyDict_Type, &spec)) return NULL;
    glue_model *G = PyMem_Calloc(1, sizeof *G);
    if (G == NULL) return PyErr_NoMemory();
    G->refs = PyList_New(0);
    if (G->refs == NULL || !parse_model(spec, &G->model, G->refs, 0) ||
        !parse_configs(spec, G, G->refs))
        goto fail;
    int rc = spmv_model_check(&G->model, &err);
    if (rc == 0) rc = spmv_model_cost(&G->model, &G->steps, &err);
    if (rc) {
        raise_spmv_error(m, rc, &err, "model");
        goto fail;
    }
    int32_t base = G->nfeatures > 0 ? G->nfeatures : SPMV_NCOLS;
    if (G->model.ncols != base + G->configs.nextra) {
        PyErr_Format(PyExc_ValueError, "model: it reads %d columns, its configurations give %d",
                     (int)G->model.ncols, (int)(base + G->configs.nextra));
        goto fail;
    }
    for (int32_t j = 0; j < G->configs.n; j++) G->ranked += G->configs.group[j] >= 0;
    /* steps <= SPMV_MODEL_MAX_STEPS (spmv_model_check), ranked <= INT32_MAX: no overflow */
    if (G->steps * (G->ranked > 0 ? G->ranked : 1) > SPMV_MODEL_MAX_STEPS) {
        PyErr_Format(PyExc_ValueError,
                     "model: ranking one matrix takes up to %lld steps (tree nodes, distances, "
                     "...: %lld per configuration x %d configurations), past the limit of %lld "
                     "(SPMV_MODEL_MAX_STEPS)",
                     (long long)(G->steps * G->ranked), (long long)G->steps, (int)G->ranked,
                     (long long)SPMV_MODEL_MAX_STEPS);
        goto fail;
    }
    cap = PyCapsule_New(G, MODEL_CAPSULE, model_capsule_free);
    if (cap != NULL) return cap;
fail:
    Py_XDECREF(G->refs);
    PyMem_Free(G);
    return NULL;
}

static int model_converter(PyObject *o, void *out) {
    glue_model *G = PyCapsule_GetPointer(o, MODEL_CAPSULE);
    if (G == NULL) return 0;
    *(glue_model **)out = G;
    return 1;
}

/* model_cost(capsule) -> (steps per row, configurations ranked): spmv_model_cost and what one
 * ranking evaluates, whose product model_new held to SPMV_MODEL_MAX_STEPS. */
static PyObject *model_cost(PyObject *m, PyObject *args) {
    glue_model *G;
    (void)m;
    if (!PyArg_ParseTuple(args, "O&", model_converter, &G)) return NULL;
    return Py_BuildValue("(Li)", (long long)G->steps, (int)G->ranked);
}

/* model_predict(capsule, rows, stride, group) -> (ms[n], raw[n*nout]) */
static PyObject *model_predict(PyObject *m, PyObject *args) {
    glue_model *G;
    PyArrayObject *rows, *group;
    int stride, rc;
    spmv_err err = {0};
    if (!PyArg_ParseTuple(args, "O&O&iO&", model_converter, &G, real_array, &rows, &stride,
                          int32_array, &group))
        return NULL;
    npy_intp n = PyArray_SIZE(group), nraw = n * spmv_model_nout(&G->model);
    if (n > INT32_MAX)
        return PyErr_Format(PyExc_ValueError, "model_predict: %zd rows, past the int32 limit %d",
                            (Py_ssize_t)n, INT32_MAX);
    if (PyArray_TYPE(rows) != NPY_FLOAT64 || stride < 1 || PyArray_SIZE(rows) != n * stride)
        return PyErr_Format(PyExc_ValueError, "rows must be float64 with %zd x %d entries",
                            (Py_ssize_t)n, stride);
    PyObject *ms = PyArray_SimpleNew(1, &n, NPY_FLOAT64),
             *raw = PyArray_SimpleNew(1, &nraw, NPY_FLOAT64);
    if (ms == NULL || raw == NULL) goto fail;
    glue_call c;
    call_begin(&c, G->steps * (int64_t)n); /* <= 2^28 * 2^31 */
    rc = spmv_model_predict(&G->model, PyArray_DATA(rows), (int32_t)n, stride, PyArray_DATA(group),
                            PyArray_DATA((PyArrayObject *)ms), PyArray_DATA((PyArrayObject *)raw),
                            &c.intr, &err);
    call_end(&c);
    if (rc) {
        raise_spmv_error(m, rc, &err, "model");
        goto fail;
    }
    return Py_BuildValue("(NN)", ms, raw);
fail:
    Py_XDECREF(ms);
    Py_XDECREF(raw);
    return NULL;
}

/* core_rows(capsule, nrows, ncols, indptr, indices, value_bytes[, sample_rows[, sample_nnz]]) ->
 * rows[n * (NCOLS + nextra)] */
static PyObject *core_rows(PyObject *m, PyObject *args) {
    glue_model *G;
    int nrows, ncols, vb, rc;
    PyArrayObject *indptr, *indices;
    spmv_err err = {0};
    int sample = 0;
    long long sample_nnz = 0;
    if (!PyArg_ParseTuple(args, "O&iiO&O&i|iL", model_converter, &G, &nrows, &ncols, int32_array,
                          &indptr, int32_array, &indices, &vb, &sample, &sample_nnz) ||
        !csr_lengths(nrows, indptr, indices, "core_rows"))
        return NULL;
    if (G->nfeatures > 0)
        return PyErr_Format(PyExc_ValueError,
                            "core_rows: the model takes its own %d features, not a matrix's",
                            (int)G->nfeatures);
    npy_intp len = (npy_intp)G->configs.n * (SPMV_NCOLS + G->configs.nextra);
    PyObject *rows = PyArray_SimpleNew(1, &len, NPY_FLOAT64);
    if (rows == NULL) return NULL;
    spmv_csr A = csr_of(nrows, ncols, indptr, indices);
    CALL_C(PyArray_SIZE(indices) > NOGIL_MIN_WORK,
           rc = spmv_design_rows_estimate(&A, &G->dev, &G->configs, vb, 0, sample, sample_nnz,
                                          PyArray_DATA((PyArrayObject *)rows), &err));
    if (rc) {
        Py_DECREF(rows);
        return raise_spmv_error(m, rc, &err, "core_rows");
    }
    return rows;
}

/* The (id, ms) pairs in `order`, skipping configurations whose `keep` item is false (keep None:
 * all): what rank() returns, built here because 135 tuples cost several microseconds in Python.
 * The kept configurations are moved to the front of order first (its contents are lost), so that
 * the list is made at its final length and filled in place: appending and PyTuple_Pack's varargs
 * cost a third of the time on 135 pairs. */
static PyObject *ranked_pairs(int32_t *order, const double *ms, Py_ssize_t n, PyObject *ids,
                              PyObject *keep) {
    Py_ssize_t m = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        int32_t i = order[k];
        int kept = keep == Py_None ? 1 : PyObject_IsTrue(PyTuple_GET_ITEM(keep, i));
        if (kept < 0) return NULL; /* an item whose truth raised */
        if (kept) order[m++] = i;
    }
    PyObject *out = PyList_New(m);
    for (Py_ssize_t k = 0; out != NULL && k < m; k++) {
        PyObject *v = PyFloat_FromDouble(ms[order[k]]), *pair = v != NULL ? PyTuple_New(2) : NULL;
        if (pair == NULL) {
            Py_XDECREF(v);
            Py_CLEAR(out);
            break;
        }
        PyObject *id = PyTuple_GET_ITEM(ids, order[k]);
        Py_INCREF(id);
        PyTuple_SET_ITEM(pair, 0, id);
        PyTuple_SET_ITEM(pair, 1, v);
        PyList_SET_ITEM(out, k, pair);
    }
    return out;
}

/* rank(capsule, nrows, ncols, indptr, indices, value_bytes, add_ms or None, sample=0, ids=None,
 * keep=None, sample_nnz=0) -> (order, ms), or with ids (a tuple of one object per configuration)
 * the list of (ids[i], ms[i]) fastest first, only where keep (None, or a tuple of as many bools)
 * is true.  sample > 0: estimated rows from sample rows and at most sample_nnz entries. */
static PyObject *rank(PyObject *m, PyObject *args) {
    glue_model *G;
    int nrows, ncols, vb, rc;
    PyArrayObject *indptr, *indices;
    PyObject *add, *ids = Py_None, *keep = Py_None;
    spmv_err err = {0};
    int sample = 0;
    long long sample_nnz = 0;
    double *rows = NULL;
    if (!PyArg_ParseTuple(args, "O&iiO&O&iO|iOOL", model_converter, &G, &nrows, &ncols, int32_array,
                          &indptr, int32_array, &indices, &vb, &add, &sample, &ids, &keep,
                          &sample_nnz) ||
        !csr_lengths(nrows, indptr, indices, "rank"))
        return NULL;
    if ((ids != Py_None && (!PyTuple_Check(ids) || PyTuple_GET_SIZE(ids) != G->configs.n)) ||
        (keep != Py_None &&
         (ids == Py_None || !PyTuple_Check(keep) || PyTuple_GET_SIZE(keep) != G->configs.n)))
        return PyErr_Format(PyExc_ValueError,
                            "rank: ids and keep must be None or tuples of %zd items (keep only "
                            "with ids)",
                            (Py_ssize_t)G->configs.n);
    if (G->nfeatures > 0)
        return PyErr_Format(PyExc_ValueError,
                            "rank: the model takes its own %d features, not a matrix's",
                            (int)G->nfeatures);
    npy_intp n = G->configs.n;
    const double *addp = NULL;
    if (add != Py_None) {
        if (!check_array(add, NPY_FLOAT64, 0, "add_ms")) return NULL;
        if (PyArray_SIZE((PyArrayObject *)add) != n)
            return PyErr_Format(PyExc_ValueError, "add_ms has %zd entries; the model ranks %zd",
                                (Py_ssize_t)PyArray_SIZE((PyArrayObject *)add), (Py_ssize_t)n);
        addp = PyArray_DATA((PyArrayObject *)add);
    }
    PyObject *order = PyArray_SimpleNew(1, &n, NPY_INT32),
             *ms = PyArray_SimpleNew(1, &n, NPY_FLOAT64);
    if (order == NULL || ms == NULL) goto fail;
    spmv_csr A = csr_of(nrows, ncols, indptr, indices);
    if (sample > 0) { /* estimated rows (spmv_design_rows_estimate), then the ranking step */
        rows =
            PyMem_Malloc(((size_t)n > 0 ? (size_t)n : 1) * (size_t)G->model.ncols * sizeof *rows);
        if (rows == NULL) {
            PyErr_NoMemory();
            goto fail;
        }
    }
    int32_t *op = PyArray_DATA((PyArrayObject *)order);
    double *mp = PyArray_DATA((PyArrayObject *)ms);
    /* without the GIL for a large matrix, as every pass over one, or a costly model */
    glue_call c;
    call_begin(&c, PyArray_SIZE(indices) > NOGIL_MIN_WORK ? INT64_MAX : G->steps * G->ranked);
    if (sample > 0) {
        rc = spmv_design_rows_estimate(&A, &G->dev, &G->configs, vb, 0, sample, sample_nnz, rows,
                                       &err);
        if (rc == 0) rc = spmv_rank_rows(&G->configs, &G->model, rows, addp, op, mp, &c.intr, &err);
    } else {
        rc = spmv_rank(&A, &G->dev, &G->configs, &G->model, vb, addp, op, mp, &c.intr, &err);
    }
    call_end(&c);
    if (rc) {
        raise_spmv_error(m, rc, &err, "rank");
        goto fail;
    }
    PyMem_Free(rows);
    if (ids != Py_None) {
        PyObject *pairs = ranked_pairs(op, mp, n, ids, keep);
        Py_DECREF(order);
        Py_DECREF(ms);
        return pairs;
    }
    return Py_BuildValue("(NN)", order, ms);
fail:
    PyMem_Free(rows);
    Py_XDECREF(order);
    Py_XDECREF(ms);
    return NULL;
}

static PyMethodDef core_methods[] = {
    {"csr_check", csr_check, METH_VARARGS, "csr_check(nrows, ncols, indptr, indices)"},
    {"finite_check", finite_check, METH_VARARGS,
     "finite_check(values) -> None, or the position of the first non-finite entry"},
    {"features", features, METH_VARARGS,
     "features(nrows, ncols, indptr, indices, sm_count, threads_per_sm, warp_size) -> float64[]"},
    {"feature_names", feature_names, METH_NOARGS, "feature_names() -> tuple of str"},
    {"format_names", format_names, METH_NOARGS, "format_names() -> tuple of str"},
    {"gpu_props_h100", gpu_props_h100, METH_NOARGS,
     "gpu_props_h100() -> {'sm_count', 'threads_per_sm', 'warp_size'} of the H100 (features' "
     "default)"},
    {"omp_threads", omp_threads, METH_NOARGS,
     "omp_threads() -> threads the CPU kernels' OpenMP regions start (1 without OpenMP)"},
    {"model_fields", model_fields, METH_VARARGS,
     "model_fields(kind) -> (name, field dicts) of a model kind (-1: the head), None outside"},
    {"design_columns", design_columns, METH_NOARGS,
     "design_columns() -> tuple of str: the SPMV_NCOLS columns of a design row"},
    {"format_facts", format_facts, METH_NOARGS,
     "format_facts() -> per format code {'unread': bits of index arrays no kernel reads, "
     "'finite_x': whether its kernels multiply padding zeros by x}"},
    {"config_sizes", config_sizes, METH_VARARGS,
     "config_sizes(ids, value_bytes, max_fill, nrows, ncols, indptr, indices) -> "
     "(bytes_moved, padding_ratio, notes)"},
    {"kernels", kernels, METH_NOARGS, "kernels() -> list of registry entries (dict)"},
    {"config_parse", config_parse, METH_O,
     "config_parse(id) -> (kernel, params, given, canonical id, p columns)"},
    {"config_expand", config_expand, METH_VARARGS,
     "config_expand(device) -> list of config_parse's tuples, in registry order"},
    {"mm_read", mm_read, METH_VARARGS,
     "mm_read(body, first_line, format, field, nrows, ncols, nentries) -> (row, col, val)"},
    {"convert", convert, METH_VARARGS,
     "convert(format, p0, p1, max_fill, nrows, ncols, indptr, indices, values) -> State"},
    {"fmt_size", fmt_size, METH_VARARGS,
     "fmt_size(format, p0, p1, max_fill, nrows, ncols, indptr, indices) -> (scalars, nidx, nval)"},
    {"to_csr", to_csr, METH_O, "to_csr(state) -> (indptr, indices, values)"},
    {"mv", mv, METH_VARARGS, "mv(state, kernel, x, y): y = A @ x"},
    {"bench", bench, METH_VARARGS,
     "bench(state, kernel, x, y, warmup, repeats, budget_s) -> (median, q25, q75, min, runs)"},
    {"recast", recast, METH_VARARGS,
     "recast(state, float64) -> the State with values of the other type, same index arrays"},
    {"model_new", model_new, METH_VARARGS,
     "model_new(spec) -> model capsule (checked, its cost within MODEL_MAX_STEPS)"},
    {"model_cost", model_cost, METH_VARARGS,
     "model_cost(model) -> (most steps per row, configurations one ranking evaluates)"},
    {"model_predict", model_predict, METH_VARARGS,
     "model_predict(model, rows, stride, group) -> (ms, raw)"},
    {"core_rows", core_rows, METH_VARARGS,
     "core_rows(model, nrows, ncols, indptr, indices, value_bytes[, sample_rows[, sample_nnz]]) "
     "-> rows (flat); sample_rows > 0: estimated (spmv_design_rows_estimate)"},
    {"rank", rank, METH_VARARGS,
     "rank(model, nrows, ncols, indptr, indices, value_bytes, add_ms, sample=0, ids=None, "
     "keep=None, sample_nnz=0) "
     "-> (order, ms), or with ids the list of (id, ms) pairs fastest first"},
    {NULL, NULL, 0, NULL},
};

static int core_exec(PyObject *m) {
    glue_state *st = get_state(m);
    import_array1(-1);
    st->DeviceUnavailableError = PyErr_NewExceptionWithDoc(
        "pyspmv.DeviceUnavailableError",
        "Raised when a GPU configuration is asked for and no usable GPU is there; says why.",
        PyExc_RuntimeError, NULL);
    st->NotApplicableError =
        PyErr_NewExceptionWithDoc("pyspmv.NotApplicableError",
                                  "Raised when a format or configuration cannot serve a matrix "
                                  "(padding past its limit, ...).",
                                  PyExc_ValueError, NULL);
    if (st->DeviceUnavailableError == NULL || st->NotApplicableError == NULL) return -1;
    st->StateType = (PyTypeObject *)PyType_FromModuleAndSpec(m, &state_spec, NULL);
    if (st->StateType == NULL || PyModule_AddObjectRef(m, "State", (PyObject *)st->StateType) < 0)
        return -1;
    /* _cuda's way to the type (_glue.h): a borrowed pointer, the module state holding the type. */
    PyObject *cap = PyCapsule_New(st->StateType, STATE_CAPSULE, NULL);
    int added = cap != NULL ? PyModule_AddObjectRef(m, "_State_type", cap) : -1;
    Py_XDECREF(cap);
    if (added < 0) return -1;
    if (PyModule_AddObjectRef(m, "DeviceUnavailableError", st->DeviceUnavailableError) < 0 ||
        PyModule_AddObjectRef(m, "NotApplicableError", st->NotApplicableError) < 0 ||
        PyModule_AddIntConstant(m, "HAVE_NVCC", SPMV_HAVE_NVCC) < 0 ||
        PyModule_AddStringConstant(m, "GPU_ARCH", SPMV_GPU_ARCH) < 0 ||
        PyModule_AddIntConstant(m, "HAVE_OPENMP", HAVE_OPENMP) < 0 ||
        PyModule_AddIntConstant(m, "NFEATURES", SPMV_NFEATURES) < 0 ||
        PyModule_AddIntConstant(m, "NCOLS", SPMV_NCOLS) < 0 ||
        PyModule_AddIntConstant(m, "NOGIL_MIN_WORK", NOGIL_MIN_WORK) < 0 ||
        PyModule_AddIntConstant(m, "MODEL_MAX_STEPS", (long)SPMV_MODEL_MAX_STEPS) < 0 ||
        PyModule_AddIntConstant(m, "MAX_FILL_DEFAULT", (long)SPMV_DEFAULT_MAX_FILL) < 0 ||
        PyModule_AddIntConstant(m, "MM_COORDINATE", SPMV_MM_COORDINATE) < 0 ||
        PyModule_AddIntConstant(m, "MM_ARRAY", SPMV_MM_ARRAY) < 0 ||
        PyModule_AddIntConstant(m, "MM_REAL", SPMV_MM_REAL) < 0 ||
        PyModule_AddIntConstant(m, "MM_INTEGER", SPMV_MM_INTEGER) < 0 ||
        PyModule_AddIntConstant(m, "MM_PATTERN", SPMV_MM_PATTERN) < 0)
        return -1;
    return 0;
}

static int core_traverse(PyObject *m, visitproc visit, void *arg) {
    glue_state *st = get_state(m);
    Py_VISIT(st->DeviceUnavailableError);
    Py_VISIT(st->NotApplicableError);
    Py_VISIT(st->StateType);
    return 0;
}

static int core_clear(PyObject *m) {
    glue_state *st = get_state(m);
    Py_CLEAR(st->DeviceUnavailableError);
    Py_CLEAR(st->NotApplicableError);
    Py_CLEAR(st->StateType);
    return 0;
}

static void core_free(void *m) { core_clear((PyObject *)m); }

static PyModuleDef_Slot core_slots[] = {
    {Py_mod_exec, core_exec},
#if PY_VERSION_HEX >= 0x030d00f0
    {Py_mod_gil, Py_MOD_GIL_NOT_USED},
#endif
    {0, NULL},
};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT, "_core",      "pyspmv's C core (private; use the pyspmv package).",
    sizeof(glue_state),    core_methods, core_slots,
    core_traverse,         core_clear,   core_free,
};

PyMODINIT_FUNC PyInit__core(void) { return PyModuleDef_Init(&core_module); }
