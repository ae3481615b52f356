// pyspmv/_ext/glue_rank.c: _core's ranking — a model's design rows of a matrix (core_rows) and its
// configurations fastest first (rank)
// SPDX-License-Identifier: BSD-3-Clause
#define NO_IMPORT_ARRAY
#include "glue_core.h"

/* The coarse indptr of a sampled matrix (spmv_design_rows_sampled), or NULL for None; -1 with an
 * exception where it is not an int32 array of ceil(nrows / 256) + 1 items or comes without a
 * sample. */
static int coarse_of(PyObject *o, int nrows, int sample, const int32_t **out, const char *where) {
    *out = NULL;
    if (o == Py_None) return 0;
    if (!check_array(o, NPY_INT32, 0, "coarse")) return -1;
    npy_intp want = (npy_intp)(((int64_t)nrows + SPMV_SAMPLE_BLOCK - 1) / SPMV_SAMPLE_BLOCK) + 1;
    if (nrows < 1 || PyArray_SIZE((PyArrayObject *)o) != want || sample <= 0) {
        PyErr_Format(PyExc_ValueError,
                     "%s: coarse must hold indptr at every %d rows and at nrows (%zd items for "
                     "nrows = %d), with sample_rows > 0; got %zd items, sample_rows = %d",
                     where, SPMV_SAMPLE_BLOCK, (Py_ssize_t)want, nrows,
                     (Py_ssize_t)PyArray_SIZE((PyArrayObject *)o), sample);
        return -1;
    }
    *out = PyArray_DATA((PyArrayObject *)o);
    return 0;
}

/* The estimated rows of A: from A itself, or from its sampled rows and coarse indptr. */
static int estimate_rows(const spmv_csr *A, const int32_t *coarse, const glue_model *G, int vb,
                         int sample, long long sample_nnz, double *rows, spmv_err *err) {
    if (coarse != NULL)
        return spmv_design_rows_sampled(A, coarse, &G->dev, &G->configs, vb, 0, sample, sample_nnz,
                                        rows, err);
    return spmv_design_rows_estimate(A, &G->dev, &G->configs, vb, 0, sample, sample_nnz, rows, err);
}

/* sample_plan(coarse, nrows, sample_rows, sample_nnz) -> int32 array of the start rows of the blocks
 * a sample reads (spmv_sample_plan); empty where the exact path is taken. */
PyObject *sample_plan(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *co;
    int nrows, sample;
    long long sample_nnz;
    const int32_t *coarse;
    if (!PyArg_ParseTuple(args, "OiiL", &co, &nrows, &sample, &sample_nnz) ||
        coarse_of(co, nrows, sample, &coarse, "sample_plan") < 0)
        return NULL;
    if (coarse == NULL) return PyErr_Format(PyExc_ValueError, "sample_plan: coarse is None");
    npy_intp kmax = (npy_intp)(sample / SPMV_SAMPLE_BLOCK + 1), k;
    PyObject *range = PyArray_SimpleNew(1, &kmax, NPY_INT32);
    if (range == NULL) return NULL;
    k = (npy_intp)spmv_sample_plan(coarse, nrows, sample, sample_nnz,
                                   PyArray_DATA((PyArrayObject *)range));
    PyObject *out = PySequence_GetSlice(range, 0, k);
    Py_DECREF(range);
    return out;
}

/* core_rows(capsule, nrows, ncols, indptr, indices, value_bytes[, sample_rows[, sample_nnz[,
 * coarse]]]) -> rows[n * (NCOLS + nextra)]; coarse: A holds only the sampled rows (coarse_of) */
PyObject *core_rows(PyObject *m, PyObject *args) {
    glue_model *G;
    int nrows, ncols, vb, rc;
    PyArrayObject *indptr, *indices;
    spmv_err err = {0};
    int sample = 0;
    long long sample_nnz = 0;
    PyObject *co = Py_None;
    const int32_t *coarse;
    if (!PyArg_ParseTuple(args, "O&iiO&O&i|iLO", model_converter, &G, &nrows, &ncols, int32_array,
                          &indptr, int32_array, &indices, &vb, &sample, &sample_nnz, &co) ||
        !csr_lengths(nrows, indptr, indices, "core_rows") ||
        coarse_of(co, nrows, sample, &coarse, "core_rows") < 0)
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
           rc = estimate_rows(&A, coarse, G, vb, sample, sample_nnz,
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
 * keep=None, sample_nnz=0, first=False, coarse=None) -> (order, ms), or with ids (a tuple of one object per
 * configuration) the list of (ids[i], ms[i]) fastest first, only where keep (None, or a tuple of as
 * many bools) is true; with first also true, (that list, i, ms[i]) where i is the configuration
 * ranked first of all, kept or not (-1 and NaN: none), so that a restricted ranking knows the best
 * it left out.
 * sample > 0: estimated rows from sample rows and at most sample_nnz entries; with coarse, from
 * an A that holds only those rows (coarse_of). */
PyObject *rank(PyObject *m, PyObject *args) {
    glue_model *G;
    int nrows, ncols, vb, rc;
    PyArrayObject *indptr, *indices;
    PyObject *add, *ids = Py_None, *keep = Py_None;
    spmv_err err = {0};
    int sample = 0, first = 0;
    long long sample_nnz = 0;
    double *rows = NULL;
    PyObject *co = Py_None;
    const int32_t *coarse;
    if (!PyArg_ParseTuple(args, "O&iiO&O&iO|iOOLpO", model_converter, &G, &nrows, &ncols,
                          int32_array, &indptr, int32_array, &indices, &vb, &add, &sample, &ids,
                          &keep, &sample_nnz, &first, &co) ||
        !csr_lengths(nrows, indptr, indices, "rank") ||
        coarse_of(co, nrows, sample, &coarse, "rank") < 0)
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
        rc = estimate_rows(&A, coarse, G, vb, sample, sample_nnz, rows, &err);
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
