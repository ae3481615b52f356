// pyspmv/_ext/glue_inputs.c: _core's input checks: CSR structure, finite values, DLPack, Matrix
// Market
// SPDX-License-Identifier: BSD-3-Clause
#define NO_IMPORT_ARRAY
#include "glue_core.h"

PyObject *csr_check(PyObject *m, PyObject *args) {
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

/* csr_copy(nrows, ncols, indptr, indices, data, out_typenum) -> (indptr, indices, data): new
 * arrays (values in NPY_FLOAT32 or NPY_FLOAT64) holding the CSR arrays given, checked as csr_check
 * does, in one threaded pass (spmv_csr_copy); the same errors as csr_check. */
PyObject *csr_copy(PyObject *m, PyObject *args) {
    int nrows, ncols, out_type, rc;
    PyArrayObject *indptr, *indices, *data;
    spmv_err err = {0};
    if (!PyArg_ParseTuple(args, "iiO&O&O&i", &nrows, &ncols, int32_array, &indptr, int32_array,
                          &indices, real_array, &data, &out_type))
        return NULL;
    if (out_type != NPY_FLOAT32 && out_type != NPY_FLOAT64)
        return PyErr_Format(PyExc_ValueError, "csr_copy: out_type %d is not float32 or float64",
                            out_type);
    if (PyArray_SIZE(data) != PyArray_SIZE(indices))
        return PyErr_Format(PyExc_ValueError, "csr_copy: %zd values for %zd column indices",
                            (Py_ssize_t)PyArray_SIZE(data), (Py_ssize_t)PyArray_SIZE(indices));
    npy_intp np1 = PyArray_SIZE(indptr), nnz = PyArray_SIZE(indices);
    PyObject *ip = PyArray_SimpleNew(1, &np1, NPY_INT32),
             *ix = PyArray_SimpleNew(1, &nnz, NPY_INT32);
    PyObject *v = PyArray_SimpleNew(1, &nnz, out_type), *res = NULL;
    if (ip == NULL || ix == NULL || v == NULL) goto exit;
    spmv_csr A = csr_of(nrows, ncols, indptr, indices);
    CALL_C(nnz > NOGIL_MIN_WORK,
           rc = spmv_csr_copy(&A, np1, nnz, PyArray_DATA(data), (int)PyArray_ITEMSIZE(data),
                              PyArray_DATA((PyArrayObject *)ip), PyArray_DATA((PyArrayObject *)ix),
                              PyArray_DATA((PyArrayObject *)v), out_type == NPY_FLOAT32 ? 4 : 8,
                              &err));
    if (rc)
        raise_spmv_error(m, rc, &err, "");
    else
        res = PyTuple_Pack(3, ip, ix, v);
exit:
    Py_XDECREF(ip);
    Py_XDECREF(ix);
    Py_XDECREF(v);
    return res;
}

/* mm_read(body, first_line, format, field, nrows, ncols, nentries) -> (row, col, val): a Matrix
 * Market body parsed by spmv_mm_read (row and col int32, 0-based, None for array; val float64,
 * None for pattern); ValueError naming the line otherwise. */
PyObject *mm_read(PyObject *m, PyObject *args) {
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

PyObject *finite_check(PyObject *m, PyObject *args) {
    PyArrayObject *v;
    spmv_err err = {0};
    int rc;
    if (!PyArg_ParseTuple(args, "O&", real_array, &v)) return NULL;
    int f32 = PyArray_TYPE(v) == NPY_FLOAT32;
    CALL_C(PyArray_SIZE(v) > NOGIL_MIN_WORK,
           rc = f32 ? spmv_finite_check_f32(PyArray_DATA(v), PyArray_SIZE(v), &err)
                    : spmv_finite_check_f64(PyArray_DATA(v), PyArray_SIZE(v), &err));
    if (rc == 0) Py_RETURN_NONE;
    return PyLong_FromLongLong(err.where);
}

/* ---- DLPack ----
 * The structs of the DLPack ABI (dmlc/dlpack's dlpack.h, the "dltensor" capsule of
 * __dlpack__()), declared here as the protocol fixes them: pyspmv reads a producer's vector
 * description and never frees or keeps what the capsule holds. */
typedef struct {
    int32_t device_type; /* 1 CPU, 2 CUDA, 3 CUDA host (pinned), 13 CUDA managed, ... */
    int32_t device_id;
} dl_device;

typedef struct {
    uint8_t code; /* 0 int, 1 uint, 2 float, ... */
    uint8_t bits;
    uint16_t lanes;
} dl_dtype;

typedef struct {
    void *data;
    dl_device device;
    int32_t ndim;
    dl_dtype dtype;
    int64_t *shape;
    int64_t *strides; /* in elements; NULL: compact row-major */
    uint64_t byte_offset;
} dl_tensor;

typedef struct dl_managed {
    dl_tensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct dl_managed *self);
} dl_managed;

/* dlpack_info(capsule) -> (address, device_type, device_id, type_code, bits, lanes, shape,
 * strides or None): what a "dltensor" capsule describes, the address with byte_offset added.  The
 * capsule keeps its ownership (its deleter runs when it is collected, unconsumed), so the caller
 * holds the capsule, or the producer's array, while it uses the address. */
PyObject *dlpack_info(PyObject *m, PyObject *args) {
    PyObject *capsule;
    if (!PyArg_ParseTuple(args, "O", &capsule)) return NULL;
    if (!PyCapsule_IsValid(capsule, "dltensor"))
        return PyErr_Format(PyExc_TypeError,
                            "__dlpack__() returned %s, not an unconsumed 'dltensor' capsule",
                            Py_TYPE(capsule)->tp_name);
    const dl_managed *t = (const dl_managed *)PyCapsule_GetPointer(capsule, "dltensor");
    if (t == NULL) return NULL;
    const dl_tensor *d = &t->dl_tensor;
    if (d->ndim < 0 || d->ndim > 32 || (d->ndim > 0 && d->shape == NULL))
        return PyErr_Format(PyExc_ValueError, "a DLPack tensor with ndim %d", (int)d->ndim);
    PyObject *shape = PyTuple_New(d->ndim), *strides = NULL;
    if (shape == NULL) return NULL;
    for (int k = 0; k < d->ndim; k++)
        PyTuple_SET_ITEM(shape, k, PyLong_FromLongLong((long long)d->shape[k]));
    if (d->strides != NULL) {
        strides = PyTuple_New(d->ndim);
        if (strides == NULL) {
            Py_DECREF(shape);
            return NULL;
        }
        for (int k = 0; k < d->ndim; k++)
            PyTuple_SET_ITEM(strides, k, PyLong_FromLongLong((long long)d->strides[k]));
    } else {
        strides = Py_NewRef(Py_None);
    }
    return Py_BuildValue("(KiiiiiNN)", (unsigned long long)((uintptr_t)d->data + d->byte_offset),
                         (int)d->device.device_type, (int)d->device.device_id, (int)d->dtype.code,
                         (int)d->dtype.bits, (int)d->dtype.lanes, shape, strides);
}
