// pyspmv/_core.c: thin CPython glue over csrc/ (NumPy arrays in and out, statuses to exceptions)
// SPDX-License-Identifier: BSD-3-Clause
//
// Private: the public, keyword-friendly API is Python (pyspmv/*.py), which casts visibly and names
// arguments.  Converters here check and never cast.  A converted matrix crosses as a "state" tuple
// (format, nrows, ncols, nnz, (p0, p1), (s0, s1, s2, s3), (idx arrays...), (val arrays...)).
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <numpy/arrayobject.h>

#include "spmv.h"
#include "spmv_config.h"

#include "_glue.h"

static spmv_csr csr_of(int nrows, int ncols, PyArrayObject *indptr, PyArrayObject *indices) {
    spmv_csr A = {nrows, ncols, PyArray_DATA(indptr), PyArray_DATA(indices)};
    return A;
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

static PyObject *finite_check(PyObject *m, PyObject *args) {
    PyArrayObject *v;
    spmv_err err = {0};
    int rc;
    if (!PyArg_ParseTuple(args, "O&", real_array, &v)) return NULL;
    if (PyArray_TYPE(v) == NPY_FLOAT32) rc = spmv_finite_check_f32(PyArray_DATA(v), PyArray_SIZE(v), &err);
    else rc = spmv_finite_check_f64(PyArray_DATA(v), PyArray_SIZE(v), &err);
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
                          &indices, &dev.sm_count, &dev.threads_per_sm, &dev.warp_size))
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

static PyObject *format_names(PyObject *m, PyObject *noargs) {
    return names_tuple(spmv_format_name, SPMV_NFORMATS);
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
    if (ok)
        e = Py_BuildValue("{s:s,s:i,s:s,s:i,s:i,s:(zzzz),s:(OOOO),s:(iiii),s:i,s:O}", "id", d->id,
                          "device", d->device, "library",
                          d->library == SPMV_LIB_CUSPARSE ? "cusparse" : "pyspmv", "format",
                          d->format, "kernel", d->kernel, "param_names", d->param_name[0],
                          d->param_name[1], d->param_name[2], d->param_name[3], "grid", g[0], g[1],
                          g[2], g[3], "param_default", d->param_default[0], d->param_default[1],
                          d->param_default[2], d->param_default[3], "launches", d->launches,
                          "deterministic", d->deterministic ? Py_True : Py_False);
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

static PyObject *new_arrays(int n, const int64_t *len, int typenum, void **data) {
    PyObject *t = PyTuple_New(n);
    for (int k = 0; t != NULL && k < n; k++) {
        npy_intp d = (npy_intp)len[k];
        PyObject *a = PyArray_ZEROS(1, &d, typenum, 0);
        if (a == NULL) {
            Py_CLEAR(t);
            break;
        }
        data[k] = PyArray_DATA((PyArrayObject *)a);
        PyTuple_SET_ITEM(t, k, a);
    }
    return t;
}

/* convert(format, p0, p1, max_fill, nrows, ncols, indptr, indices, values) -> state tuple */
static PyObject *convert(PyObject *m, PyObject *args) {
    spmv_fmt F = {0};
    int nrows, ncols, rc;
    PyArrayObject *indptr, *indices, *values;
    spmv_err err = {0};
    PyObject *idx = NULL, *val = NULL, *res = NULL;
    if (!PyArg_ParseTuple(args, "iiidiiO&O&O&", &F.format, &F.param[0], &F.param[1], &F.max_fill,
                          &nrows, &ncols, int32_array, &indptr, int32_array, &indices, real_array,
                          &values))
        return NULL;
    if (F.format < 0 || F.format >= SPMV_NFORMATS)
        return PyErr_Format(PyExc_ValueError, "format code %d is not in [0, %d)", F.format,
                            SPMV_NFORMATS);
    if (PyArray_SIZE(values) != PyArray_SIZE(indices))
        return PyErr_Format(PyExc_ValueError, "values has %zd entries, indices %zd",
                            (Py_ssize_t)PyArray_SIZE(values), (Py_ssize_t)PyArray_SIZE(indices));
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
    res = Py_BuildValue("(iiiL(ii)(LLLL)OO)", F.format, F.nrows, F.ncols, (long long)F.nnz,
                        F.param[0], F.param[1], (long long)F.scalar[0], (long long)F.scalar[1],
                        (long long)F.scalar[2], (long long)F.scalar[3], idx, val);
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
                          &nrows, &ncols, int32_array, &indptr, int32_array, &indices))
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

/* to_csr(state) -> (indptr, indices, values) */
static PyObject *to_csr(PyObject *m, PyObject *args) {
    spmv_fmt F;
    spmv_err err = {0};
    int rc;
    if (!PyArg_ParseTuple(args, "O&", state_converter, &F)) return NULL;
    int typenum = state_typenum(PyTuple_GET_ITEM(args, 0));
    npy_intp np1 = (npy_intp)F.nrows + 1, nnz = (npy_intp)F.nnz;
    PyObject *indptr = PyArray_SimpleNew(1, &np1, NPY_INT32);
    PyObject *indices = PyArray_SimpleNew(1, &nnz, NPY_INT32);
    PyObject *values = PyArray_SimpleNew(1, &nnz, typenum);
    PyObject *res = NULL;
    if (indptr == NULL || indices == NULL || values == NULL) goto exit;
    int32_t *ip = PyArray_DATA((PyArrayObject *)indptr), *ix = PyArray_DATA((PyArrayObject *)indices);
    void *v = PyArray_DATA((PyArrayObject *)values);
    if (typenum == NPY_FLOAT32) CALL_C(nnz > NOGIL_MIN_WORK, rc = spmv_fmt_to_csr_f32(&F, ip, ix, v, &err));
    else CALL_C(nnz > NOGIL_MIN_WORK, rc = spmv_fmt_to_csr_f64(&F, ip, ix, v, &err));
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
    spmv_fmt F;
    int kernel, rc;
    PyArrayObject *x, *y;
    spmv_err err = {0};
    if (!PyArg_ParseTuple(args, "O&iO&O&", state_converter, &F, &kernel, real_array, &x,
                          real_out_array, &y))
        return NULL;
    int typenum = state_typenum(PyTuple_GET_ITEM(args, 0));
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
    spmv_fmt F;
    int kernel, warmup, repeats, rc;
    double budget;
    PyArrayObject *x, *y;
    spmv_err err = {0};
    spmv_timing t = {0};
    if (!PyArg_ParseTuple(args, "O&iO&O&iid", state_converter, &F, &kernel, real_array, &x,
                          real_out_array, &y, &warmup, &repeats, &budget))
        return NULL;
    int typenum = state_typenum(PyTuple_GET_ITEM(args, 0));
    if (!check_xy(&F, typenum, x, y)) return NULL;
    Py_BEGIN_ALLOW_THREADS
    if (typenum == NPY_FLOAT32)
        rc = spmv_fmt_bench_f32(&F, kernel, PyArray_DATA(x), PyArray_DATA(y), warmup, repeats,
                                budget, &t, &err);
    else
        rc = spmv_fmt_bench_f64(&F, kernel, PyArray_DATA(x), PyArray_DATA(y), warmup, repeats,
                                budget, &t, &err);
    Py_END_ALLOW_THREADS
    if (rc) return raise_spmv_error(m, rc, &err, spmv_format_name(F.format));
    return Py_BuildValue("(ddddL)", t.median_ms, t.q25_ms, t.q75_ms, t.min_ms, (long long)t.runs);
}

static PyObject *fmt_bytes(PyObject *m, PyObject *args) {
    spmv_fmt F;
    int elem;
    if (!PyArg_ParseTuple(args, "O&i", state_converter, &F, &elem)) return NULL;
    return PyLong_FromLongLong(spmv_fmt_bytes(&F, elem));
}

static PyMethodDef core_methods[] = {
    {"csr_check", csr_check, METH_VARARGS, "csr_check(nrows, ncols, indptr, indices)"},
    {"finite_check", finite_check, METH_VARARGS,
     "finite_check(values) -> None, or the position of the first non-finite entry"},
    {"features", features, METH_VARARGS,
     "features(nrows, ncols, indptr, indices, sm_count, threads_per_sm, warp_size) -> float64[]"},
    {"feature_names", feature_names, METH_NOARGS, "feature_names() -> tuple of str"},
    {"format_names", format_names, METH_NOARGS, "format_names() -> tuple of str"},
    {"kernels", kernels, METH_NOARGS, "kernels() -> list of registry entries (dict)"},
    {"convert", convert, METH_VARARGS,
     "convert(format, p0, p1, max_fill, nrows, ncols, indptr, indices, values) -> state"},
    {"fmt_size", fmt_size, METH_VARARGS,
     "fmt_size(format, p0, p1, max_fill, nrows, ncols, indptr, indices) -> (scalars, nidx, nval)"},
    {"to_csr", to_csr, METH_VARARGS, "to_csr(state) -> (indptr, indices, values)"},
    {"mv", mv, METH_VARARGS, "mv(state, kernel, x, y): y = A @ x"},
    {"bench", bench, METH_VARARGS,
     "bench(state, kernel, x, y, warmup, repeats, budget_s) -> (median, q25, q75, min, runs)"},
    {"fmt_bytes", fmt_bytes, METH_VARARGS, "fmt_bytes(state, elem_size) -> stored bytes"},
    {NULL, NULL, 0, NULL},
};

static int core_exec(PyObject *m) {
    glue_state *st = get_state(m);
    import_array1(-1);
    st->DeviceUnavailableError = PyErr_NewExceptionWithDoc(
        "pyspmv.DeviceUnavailableError",
        "Raised when a GPU configuration is asked for and no usable GPU is there; says why.",
        PyExc_RuntimeError, NULL);
    st->NotApplicableError = PyErr_NewExceptionWithDoc(
        "pyspmv.NotApplicableError",
        "Raised when a format or configuration cannot serve a matrix (padding past its limit, ...).",
        PyExc_ValueError, NULL);
    if (st->DeviceUnavailableError == NULL || st->NotApplicableError == NULL) return -1;
    if (PyModule_AddObjectRef(m, "DeviceUnavailableError", st->DeviceUnavailableError) < 0 ||
        PyModule_AddObjectRef(m, "NotApplicableError", st->NotApplicableError) < 0 ||
        PyModule_AddIntConstant(m, "HAVE_NVCC", SPMV_HAVE_NVCC) < 0 ||
        PyModule_AddIntConstant(m, "NFEATURES", SPMV_NFEATURES) < 0 ||
        PyModule_AddIntConstant(m, "MAX_FILL_DEFAULT", (long)SPMV_DEFAULT_MAX_FILL) < 0)
        return -1;
    return 0;
}

static int core_traverse(PyObject *m, visitproc visit, void *arg) {
    glue_state *st = get_state(m);
    Py_VISIT(st->DeviceUnavailableError);
    Py_VISIT(st->NotApplicableError);
    return 0;
}

static int core_clear(PyObject *m) {
    glue_state *st = get_state(m);
    Py_CLEAR(st->DeviceUnavailableError);
    Py_CLEAR(st->NotApplicableError);
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
    PyModuleDef_HEAD_INIT, "_core", "pyspmv's C core (private; use the pyspmv package).",
    sizeof(glue_state), core_methods, core_slots, core_traverse, core_clear, core_free,
};

PyMODINIT_FUNC PyInit__core(void) { return PyModuleDef_Init(&core_module); }
