// pyspmv/_ext/glue_rank.c: _core's ranking — a model's design rows of a matrix (core_rows) and its
// configurations fastest first (rank)
// SPDX-License-Identifier: BSD-3-Clause
#define NO_IMPORT_ARRAY
#include "glue_core.h"

/* core_rows(capsule, nrows, ncols, indptr, indices, value_bytes[, sample_rows[, sample_nnz]]) ->
 * rows[n * (NCOLS + nextra)] */
PyObject *core_rows(PyObject *m, PyObject *args) {
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
 * keep=None, sample_nnz=0, first=False) -> (order, ms), or with ids (a tuple of one object per
 * configuration) the list of (ids[i], ms[i]) fastest first, only where keep (None, or a tuple of as
 * many bools) is true; with first also true, (that list, i, ms[i]) where i is the configuration
 * ranked first of all, kept or not (-1 and NaN: none), so that a restricted ranking knows the best
 * it left out.
 * sample > 0: estimated rows from sample rows and at most sample_nnz entries. */
PyObject *rank(PyObject *m, PyObject *args) {
    glue_model *G;
    int nrows, ncols, vb, rc;
    PyArrayObject *indptr, *indices;
    PyObject *add, *ids = Py_None, *keep = Py_None;
    spmv_err err = {0};
    int sample = 0, first = 0;
    long long sample_nnz = 0;
    double *rows = NULL;
    if (!PyArg_ParseTuple(args, "O&iiO&O&iO|iOOLp", model_converter, &G, &nrows, &ncols,
                          int32_array, &indptr, int32_array, &indices, &vb, &add, &sample, &ids,
                          &keep, &sample_nnz, &first) ||
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
        int32_t top = n > 0 ? op[0] : -1; /* before ranked_pairs moves the kept ones to the front */
        double top_ms = n > 0 ? mp[top] : Py_NAN;
        PyObject *pairs = ranked_pairs(op, mp, n, ids, keep);
        Py_DECREF(order);
        Py_DECREF(ms);
        return first && pairs != NULL ? Py_BuildValue("(Nid)", pairs, (int)top, top_ms) : pairs;
    }
    return Py_BuildValue("(NN)", order, ms);
fail:
    PyMem_Free(rows);
    Py_XDECREF(order);
    Py_XDECREF(ms);
    return NULL;
}
