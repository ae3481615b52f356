// pyspmv/_ext/glue_formats.c: _core's format functions — convert and size a CSR matrix, and a
// State's products: to_csr, mv, mv_scaled, bench, recast
// SPDX-License-Identifier: BSD-3-Clause
#define NO_IMPORT_ARRAY
#include "glue_core.h"

#include <math.h>

/* convert(format, p0, p1, max_fill, nrows, ncols, indptr, indices, values) -> State */
PyObject *convert(PyObject *m, PyObject *args) {
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
PyObject *fmt_size(PyObject *m, PyObject *args) {
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

/* config_sizes(ids, value_bytes, max_fill, nrows, ncols, indptr, indices) -> (bytes_moved,
 * padding_ratio, notes): spmv_config_sizes of the configurations ids (a tuple of str, which the core
 * parses); notes[j] is the reason a format cannot serve A, or None */
PyObject *config_sizes(PyObject *m, PyObject *args) {
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
PyObject *to_csr(PyObject *m, PyObject *arg) {
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

/* Whether the memory of a and b overlaps (a product reading x while writing y over it would read
 * what it wrote). */
static int overlap(PyArrayObject *a, PyArrayObject *b) {
    const char *pa = PyArray_BYTES(a), *pb = PyArray_BYTES(b);
    return PyArray_NBYTES(a) > 0 && PyArray_NBYTES(b) > 0 && pa < pb + PyArray_NBYTES(b) &&
           pb < pa + PyArray_NBYTES(a);
}

static int disjoint(PyArrayObject *a, const char *an, PyArrayObject *b, const char *bn) {
    if (!overlap(a, b)) return 1;
    PyErr_Format(PyExc_ValueError, "%s and %s overlap in memory; the product needs them apart", an,
                 bn);
    return 0;
}

/* mv(state, kernel, x, y): y = A x in place; x and y must not overlap */
PyObject *mv(PyObject *m, PyObject *args) {
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
    if (!check_xy(&F, typenum, x, y) || !disjoint(x, "x", y, "y")) return NULL;
    int big = F.nnz > NOGIL_MIN_WORK;
    if (typenum == NPY_FLOAT32)
        CALL_C(big, rc = spmv_fmt_mv_f32(&F, kernel, PyArray_DATA(x), PyArray_DATA(y), &err));
    else
        CALL_C(big, rc = spmv_fmt_mv_f64(&F, kernel, PyArray_DATA(x), PyArray_DATA(y), &err));
    if (rc) return raise_spmv_error(m, rc, &err, spmv_format_name(F.format));
    Py_RETURN_NONE;
}

/* mv_scaled(state, kernel, alpha, x, beta, y, work): y = alpha A x + beta y in place
 * (spmv_fmt_mv_scaled_*); work is None or a vector of y's length and dtype, needed when alpha and
 * beta are both non-zero; x, y and work must not overlap */
PyObject *mv_scaled(PyObject *m, PyObject *args) {
    PyObject *state, *work_arg;
    int kernel, rc;
    double alpha, beta;
    PyArrayObject *x, *y, *work = NULL;
    spmv_err err = {0};
    const glue_fmtstate *S;
    if (!PyArg_ParseTuple(args, "OidO&dO&O", &state, &kernel, &alpha, real_array, &x, &beta,
                          real_out_array, &y, &work_arg) ||
        (S = state_get(m, state)) == NULL)
        return NULL;
    const spmv_fmt F = S->F;
    int typenum = S->typenum;
    if (!check_xy(&F, typenum, x, y) || !disjoint(x, "x", y, "y")) return NULL;
    if (work_arg != Py_None) {
        if (!real_out_array(work_arg, &work)) return NULL;
        if (!check_xy(&F, typenum, x, work) || !disjoint(x, "x", work, "work") ||
            !disjoint(y, "y", work, "work"))
            return NULL;
    }
    int big = F.nnz > NOGIL_MIN_WORK;
    if (typenum == NPY_FLOAT32)
        CALL_C(big, rc = spmv_fmt_mv_scaled_f32(&F, kernel, (float)alpha, PyArray_DATA(x),
                                                (float)beta, PyArray_DATA(y),
                                                work ? PyArray_DATA(work) : NULL, &err));
    else
        CALL_C(big, rc = spmv_fmt_mv_scaled_f64(&F, kernel, alpha, PyArray_DATA(x), beta,
                                                PyArray_DATA(y), work ? PyArray_DATA(work) : NULL,
                                                &err));
    if (rc) return raise_spmv_error(m, rc, &err, spmv_format_name(F.format));
    Py_RETURN_NONE;
}

/* bench(state, kernel, x, y, warmup, repeats, budget_s) -> (median, q25, q75, min, runs) in ms */
PyObject *bench(PyObject *m, PyObject *args) {
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
PyObject *recast(PyObject *m, PyObject *args) {
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
