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
#include "spmv_cuda.h"

typedef struct {
    PyObject *DeviceUnavailableError;
    PyObject *NotApplicableError;
} core_state;

static core_state *get_state(PyObject *module) { return (core_state *)PyModule_GetState(module); }

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
static PyObject *raise_spmv_error(PyObject *module, int code, const spmv_err *err,
                                  const char *argname) {
    core_state *st = get_state(module);
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

static int check_array(PyObject *o, int typenum, int writeable, const char *what) {
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

static int int32_array(PyObject *o, void *out) {
    if (!check_array(o, NPY_INT32, 0, "an index array")) return 0;
    *(PyArrayObject **)out = (PyArrayObject *)o;
    return 1;
}

static int real_array(PyObject *o, void *out) {
    if (!check_array(o, -1, 0, "a value array")) return 0;
    *(PyArrayObject **)out = (PyArrayObject *)o;
    return 1;
}

static int real_out_array(PyObject *o, void *out) {
    if (!check_array(o, -1, 1, "the output array")) return 0;
    *(PyArrayObject **)out = (PyArrayObject *)o;
    return 1;
}

/* A state tuple to a spmv_fmt whose arrays are borrowed from the tuple. */
static int state_converter(PyObject *o, void *out) {
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
    return 1;
}

static int state_typenum(PyObject *state) {
    PyObject *val = PyTuple_GET_ITEM(state, 7);
    return PyArray_TYPE((PyArrayObject *)PyTuple_GET_ITEM(val, 0));
}

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

static PyObject *kernels(PyObject *m, PyObject *noargs) {
    PyObject *list = PyList_New(0);
    for (int i = 0; list != NULL && i < spmv_kernel_count(); i++) {
        const spmv_kernel_desc *d = spmv_kernel_get(i);
        PyObject *g0 = grid_tuple(d, 0), *g1 = grid_tuple(d, 1);
        PyObject *e = (g0 && g1) ? Py_BuildValue("{s:s,s:i,s:i,s:i,s:(zz),s:(OO),s:(ii),s:O}", "id",
                                                 d->id, "device", d->device, "format", d->format,
                                                 "kernel", d->kernel, "param_names",
                                                 d->param_name[0], d->param_name[1], "grid", g0,
                                                 g1, "param_default", d->param_default[0],
                                                 d->param_default[1], "deterministic",
                                                 d->deterministic ? Py_True : Py_False)
                                 : NULL;
        Py_XDECREF(g0);
        Py_XDECREF(g1);
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

static int check_xy(const spmv_fmt *F, int typenum, PyArrayObject *x, PyArrayObject *y) {
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

static PyObject *cuda_device_count(PyObject *m, PyObject *noargs) {
    int count = 0;
    spmv_err err = {0};
    int rc = spmv_cuda_device_count(&count, &err);
    if (rc) return raise_spmv_error(m, rc, &err, "");
    return PyLong_FromLong(count);
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
    {"to_csr", to_csr, METH_VARARGS, "to_csr(state) -> (indptr, indices, values)"},
    {"mv", mv, METH_VARARGS, "mv(state, kernel, x, y): y = A @ x"},
    {"bench", bench, METH_VARARGS,
     "bench(state, kernel, x, y, warmup, repeats, budget_s) -> (median, q25, q75, min, runs)"},
    {"fmt_bytes", fmt_bytes, METH_VARARGS, "fmt_bytes(state, elem_size) -> stored bytes"},
    {"cuda_device_count", cuda_device_count, METH_NOARGS, "cuda_device_count() -> int"},
    {NULL, NULL, 0, NULL},
};

static int core_exec(PyObject *m) {
    core_state *st = get_state(m);
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
    core_state *st = get_state(m);
    Py_VISIT(st->DeviceUnavailableError);
    Py_VISIT(st->NotApplicableError);
    return 0;
}

static int core_clear(PyObject *m) {
    core_state *st = get_state(m);
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
    sizeof(core_state), core_methods, core_slots, core_traverse, core_clear, core_free,
};

PyMODINIT_FUNC PyInit__core(void) { return PyModuleDef_Init(&core_module); }
