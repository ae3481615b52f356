// pyspmv/glue_inputs.c: _core's input checks — a CSR structure, finite values — and Matrix Market
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
    if (PyArray_TYPE(v) == NPY_FLOAT32)
        rc = spmv_finite_check_f32(PyArray_DATA(v), PyArray_SIZE(v), &err);
    else
        rc = spmv_finite_check_f64(PyArray_DATA(v), PyArray_SIZE(v), &err);
    if (rc == 0) Py_RETURN_NONE;
    return PyLong_FromLongLong(err.where);
}
