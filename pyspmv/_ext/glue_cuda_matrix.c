// pyspmv/_ext/glue_cuda_matrix.c: _cuda's Matrix type — an upload, a device CSR read in place
// (wrap_csr), conversion on the device, reading a matrix back
// SPDX-License-Identifier: BSD-3-Clause
#define NO_IMPORT_ARRAY
#include "glue_cuda.h"

/* Matrix(state): upload a converted matrix (a _core.State) once for the plans of its format. */
static PyObject *matrix_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *state, *module = PyType_GetModule(type);
    const glue_fmtstate *S;
    spmv_err err = {0};
    if (!no_keywords(kwds, "Matrix") || !PyArg_ParseTuple(args, "O", &state) ||
        (S = state_get(module, state)) == NULL)
        return NULL;
    const spmv_fmt F = S->F;
    MatrixObject *self = (MatrixObject *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->module = Py_NewRef(module);
    self->state = Py_NewRef(state);
    self->typenum = S->typenum;
    int rc, elem = S->typenum == NPY_FLOAT32 ? 4 : 8;
    Py_BEGIN_ALLOW_THREADS rc = spmv_cuda_matrix_create(&F, elem, &self->M, &err);
    Py_END_ALLOW_THREADS if (rc) {
        Py_DECREF(self);
        return raise_spmv_error(module, rc, &err, "upload");
    }
    return (PyObject *)self;
}

int matrix_live(MatrixObject *self) {
    if (self->M == NULL) PyErr_SetString(PyExc_ValueError, "this device matrix has been closed");
    return self->M != NULL;
}

static PyObject *matrix_nbytes(MatrixObject *self, void *closure) {
    return matrix_live(self) ? PyLong_FromLongLong(spmv_cuda_matrix_bytes(self->M)) : NULL;
}

static PyObject *matrix_upload_ms(MatrixObject *self, void *closure) {
    return matrix_live(self) ? PyFloat_FromDouble(spmv_cuda_matrix_upload_ms(self->M)) : NULL;
}

static int matrix_traverse(MatrixObject *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->module);
    Py_VISIT(self->state);
    Py_VISIT(self->keep);
    return 0;
}

static int matrix_clear(MatrixObject *self) {
    Py_CLEAR(self->state);
    return 0;
}

/* wrap_csr(nrows, ncols, nnz, ptr, col, val, elem_size, keep): a Matrix over a CSR that lives on the
 * device (addresses of int32 row pointers and columns, values of elem_size bytes), read in place;
 * keep (the arrays' owner) is held as long as the Matrix. */
PyObject *wrap_csr(PyObject *module, PyObject *args) {
    int nrows, ncols, elem;
    long long nnz;
    unsigned long long ptr, col, val;
    PyObject *keep;
    spmv_err err = {0};
    if (!PyArg_ParseTuple(args, "iiLKKKiO", &nrows, &ncols, &nnz, &ptr, &col, &val, &elem, &keep))
        return NULL;
    glue_state *st = get_state(module);
    PyTypeObject *type = (PyTypeObject *)st->MatrixType;
    MatrixObject *self = (MatrixObject *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->module = Py_NewRef(module);
    self->keep = Py_NewRef(keep);
    self->typenum = elem == 4 ? NPY_FLOAT32 : NPY_FLOAT64;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = spmv_cuda_matrix_wrap_csr(
        nrows, ncols, (int64_t)nnz, (const int32_t *)(uintptr_t)ptr,
        (const int32_t *)(uintptr_t)col, (const void *)(uintptr_t)val, elem, &self->M, &err);
    Py_END_ALLOW_THREADS if (rc) {
        Py_DECREF(self);
        return raise_spmv_error(module, rc, &err, "A");
    }
    return (PyObject *)self;
}

/* upload_csr(nrows, ncols, indptr, indices, values): a Matrix holding this host CSR (int32 row
 * pointers and columns, float32 or float64 values) uploaded as it is: no converted copy on the host
 * first, which for a Matrix's own arrays would only repeat them (a fresh copy of 2e7 entries costs the
 * host about 0.3 s, most of it the kernel zeroing new pages).  Checked by spmv_cuda_matrix_create
 * as any state is (lengths, sorted columns in range), before the upload. */
PyObject *upload_csr(PyObject *module, PyObject *args) {
    int nrows, ncols;
    PyArrayObject *indptr, *indices, *values;
    spmv_err err = {0};
    if (!PyArg_ParseTuple(args, "iiO&O&O&:upload_csr", &nrows, &ncols, int32_array, &indptr,
                          int32_array, &indices, real_array, &values))
        return NULL;
    if (nrows < 0 || ncols < 0 || PyArray_SIZE(indptr) != (npy_intp)nrows + 1 ||
        PyArray_SIZE(values) != PyArray_SIZE(indices))
        return PyErr_Format(PyExc_ValueError,
                            "upload_csr: a %d x %d CSR needs nrows + 1 row pointers and as many "
                            "values as columns; got %zd, %zd columns and %zd values",
                            nrows, ncols, (Py_ssize_t)PyArray_SIZE(indptr),
                            (Py_ssize_t)PyArray_SIZE(indices), (Py_ssize_t)PyArray_SIZE(values));
    spmv_fmt F = {0};
    F.format = SPMV_FMT_CSR;
    F.nrows = nrows;
    F.ncols = ncols;
    F.nnz = PyArray_SIZE(indices);
    F.idx[0] = (int32_t *)PyArray_DATA(indptr);
    F.nidx[0] = nrows + 1;
    F.idx[1] = (int32_t *)PyArray_DATA(indices);
    F.nidx[1] = F.nnz;
    F.val[0] = PyArray_DATA(values);
    F.nval[0] = F.nnz;
    glue_state *st = get_state(module);
    PyTypeObject *type = (PyTypeObject *)st->MatrixType;
    MatrixObject *self = (MatrixObject *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->module = Py_NewRef(module);
    self->typenum = PyArray_TYPE(values);
    int rc, elem = self->typenum == NPY_FLOAT32 ? 4 : 8;
    Py_BEGIN_ALLOW_THREADS rc = spmv_cuda_matrix_create(&F, elem, &self->M, &err);
    Py_END_ALLOW_THREADS if (rc) {
        Py_DECREF(self);
        return raise_spmv_error(module, rc, &err, "upload");
    }
    return (PyObject *)self;
}

static void matrix_dealloc(MatrixObject *self) {
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    spmv_cuda_matrix_free(self->M); /* plans hold a reference: none is left */
    Py_CLEAR(self->state);
    Py_CLEAR(self->keep); /* after the matrix: it read these arrays */
    Py_CLEAR(self->module);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

/* ---- Conversion on the device (spmv_cuda_matrix_convert), reading a matrix back ---- */

/* A Matrix over M, a device conversion's result: no State (plans on it are made by
 * spmv_cuda_plan_create_dev), nothing to keep.  Takes M (freed on failure). */
static PyObject *matrix_of(PyTypeObject *type, spmv_cuda_matrix *M) {
    MatrixObject *self = (MatrixObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        spmv_cuda_matrix_free(M);
        return NULL;
    }
    self->module = Py_NewRef(PyType_GetModule(type));
    self->typenum = spmv_cuda_matrix_elem_size(M) == 4 ? NPY_FLOAT32 : NPY_FLOAT64;
    self->M = M;
    return (PyObject *)self;
}

/* convert(format, p0, p1, max_fill) -> Matrix: this CSR converted on the device. */
static PyObject *matrix_convert(MatrixObject *self, PyObject *args) {
    const char *name;
    int32_t p[2];
    double fill;
    int f = 0, rc;
    spmv_cuda_matrix *M = NULL;
    spmv_err err = {0};
    if (!matrix_live(self) || !PyArg_ParseTuple(args, "siid", &name, &p[0], &p[1], &fill))
        return NULL;
    while (f < SPMV_NFORMATS && strcmp(spmv_format_name(f), name) != 0) f++;
    if (f == SPMV_NFORMATS) {
        char names[160] = "";
        for (int k = 0; k < SPMV_NFORMATS; k++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", k ? ", " : "",
                     spmv_format_name(k));
        return PyErr_Format(PyExc_ValueError,
                            "The 'format' parameter of convert() must be one of %s. Got '%s' "
                            "instead.",
                            names, name);
    }
    Py_BEGIN_ALLOW_THREADS rc = spmv_cuda_matrix_convert_fill(self->M, f, p, fill, &M, &err);
    /* prefixed with the format's name, as _core.convert's messages are */
    Py_END_ALLOW_THREADS if (rc) return raise_spmv_error(self->module, rc, &err, name);
    return matrix_of(Py_TYPE(self), M);
}

/* arrays() -> (format, nrows, ncols, nnz, params, scalars, index_arrays, value_arrays): the matrix
 * read back, as _core.State takes it (every slot an array, empty where unused). */
static PyObject *matrix_arrays(MatrixObject *self, PyObject *noargs) {
    spmv_fmt F;
    spmv_err err = {0};
    if (!matrix_live(self)) return NULL;
    spmv_cuda_matrix_header(self->M, &F);
    int typenum = self->typenum, rc;
    PyObject *idx = PyTuple_New(SPMV_MAXIDX), *val = PyTuple_New(SPMV_MAXVAL);
    if (idx == NULL || val == NULL) goto fail;
    for (int k = 0; k < SPMV_MAXIDX + SPMV_MAXVAL; k++) {
        int isval = k >= SPMV_MAXIDX, j = isval ? k - SPMV_MAXIDX : k;
        npy_intp n = (npy_intp)(isval ? F.nval[j] : F.nidx[j]);
        PyObject *a = PyArray_SimpleNew(1, &n, isval ? typenum : NPY_INT32);
        if (a == NULL) goto fail;
        PyTuple_SET_ITEM(isval ? val : idx, j, a);
        if (isval)
            F.val[j] = PyArray_DATA((PyArrayObject *)a);
        else
            F.idx[j] = (int32_t *)PyArray_DATA((PyArrayObject *)a);
    }
    Py_BEGIN_ALLOW_THREADS rc = spmv_cuda_matrix_download(self->M, &F, &err);
    Py_END_ALLOW_THREADS if (rc) {
        raise_spmv_error(self->module, rc, &err, "download");
        goto fail;
    }
    return Py_BuildValue("(siiL(ii)(LLLL)NN)", spmv_format_name(F.format), F.nrows, F.ncols,
                         (long long)F.nnz, F.param[0], F.param[1], (long long)F.scalar[0],
                         (long long)F.scalar[1], (long long)F.scalar[2], (long long)F.scalar[3],
                         idx, val);
fail:
    Py_XDECREF(idx);
    Py_XDECREF(val);
    return NULL;
}

static PyMethodDef matrix_methods[] = {
    {"convert", (PyCFunction)matrix_convert, METH_VARARGS,
     "convert(format, p0, p1, max_fill) -> Matrix: this CSR converted on the device"},
    {"arrays", (PyCFunction)matrix_arrays, METH_NOARGS,
     "arrays() -> (format, nrows, ncols, nnz, params, scalars, index_arrays, value_arrays)"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef matrix_getset[] = {
    {"nbytes", (getter)matrix_nbytes, NULL, "device bytes: matrix arrays, x and y", NULL},
    {"upload_ms", (getter)matrix_upload_ms, NULL, "upload time in ms", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot matrix_slots[] = {
    {Py_tp_new, matrix_new},
    {Py_tp_dealloc, matrix_dealloc},
    {Py_tp_traverse, matrix_traverse},
    {Py_tp_clear, matrix_clear},
    {Py_tp_getset, matrix_getset},
    {Py_tp_methods, matrix_methods},
    {Py_tp_doc, "Matrix(state): a converted matrix uploaded once, for the plans of its format"},
    {0, NULL},
};

PyType_Spec matrix_spec = {
    "pyspmv._cuda.Matrix",
    sizeof(MatrixObject),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    matrix_slots,
};
