// pyspmv/_ext/_cuda.c: thin CPython glue over kernels/spmv_cuda.h (device, plans, checked and timed
// runs)
// SPDX-License-Identifier: BSD-3-Clause
//
// A separate module from _core because it links the CUDA runtime and cuSPARSE: where they are
// missing, importing it fails and pyspmv says why instead of failing to import at all.  Private:
// pyspmv/devices/gpu.py is the Python face.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <numpy/arrayobject.h>

#include "spmv.h"
#include "spmv_cuda.h"

#include "_glue.h"

typedef struct {
    PyObject_HEAD spmv_cuda_matrix *M;
    PyObject *state;  /* the State it was uploaded from (plans' setup reads its host arrays), or
                         NULL for a matrix that lives on the device only */
    PyObject *keep;   /* what owns the device arrays M reads in place (wrap_csr), or NULL */
    PyObject *module; /* for the exception classes */
    int typenum;
} MatrixObject;

typedef struct {
    PyObject_HEAD spmv_cuda_plan *plan;
    PyObject *module; /* for the exception classes */
    PyObject *matrix; /* the MatrixObject it runs on, or NULL when it owns its matrix */
    int32_t nrows, ncols;
    int typenum;
} PlanObject;

static PyObject *device_count(PyObject *m, PyObject *noargs) {
    int count = 0;
    spmv_err err = {0};
    int rc = spmv_cuda_device_count(&count, &err);
    if (rc) return raise_spmv_error(m, rc, &err, "");
    return PyLong_FromLong(count);
}

static PyObject *info(PyObject *m, PyObject *noargs) {
    spmv_cuda_info d;
    spmv_err err = {0};
    int rc = spmv_cuda_get_info(&d, &err);
    if (rc) return raise_spmv_error(m, rc, &err, "");
    return Py_BuildValue(
        "{s:s,s:(ii),s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:L,s:L,s:i,s:i,s:i}", "name", d.name,
        "compute_capability", d.cc_major, d.cc_minor, "sm_count", d.sm_count, "max_threads_per_sm",
        d.max_threads_per_sm, "max_threads_per_block", d.max_threads_per_block, "warp_size",
        d.warp_size, "clock_khz", d.clock_khz, "mem_clock_khz", d.mem_clock_khz, "mem_bus_bits",
        d.mem_bus_bits, "l2_bytes", (long long)d.l2_bytes, "global_mem_bytes",
        (long long)d.global_mem_bytes, "driver_version", d.driver_version, "runtime_version",
        d.runtime_version, "cusparse_version", d.cusparse_version);
}

static PyObject *copy_bandwidth(PyObject *m, PyObject *args) {
    long long bytes;
    int repeats, rc;
    double gbps = 0;
    spmv_err err = {0};
    if (!PyArg_ParseTuple(args, "Li", &bytes, &repeats)) return NULL;
    Py_BEGIN_ALLOW_THREADS rc = spmv_cuda_copy_bandwidth(bytes, repeats, &gbps, &err);
    Py_END_ALLOW_THREADS if (rc) return raise_spmv_error(m, rc, &err, "copy bandwidth");
    return PyFloat_FromDouble(gbps);
}

/* ---- Matrix ---- */

static int no_keywords(PyObject *kwds, const char *what) {
    if (kwds != NULL && PyDict_Size(kwds) > 0) {
        PyErr_Format(PyExc_TypeError, "%s() takes positional arguments only", what);
        return 0;
    }
    return 1;
}

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

static int matrix_live(MatrixObject *self) {
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
static PyObject *wrap_csr(PyObject *module, PyObject *args) {
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

static PyType_Spec matrix_spec = {
    "pyspmv._cuda.Matrix",
    sizeof(MatrixObject),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    matrix_slots,
};

/* ---- Plan ---- */

/* A plan over a Matrix with no host copy (wrap_csr, a device conversion). */
static PyObject *plan_on_device(PyTypeObject *type, PyObject *module, MatrixObject *on,
                                const spmv_config *c, const char *id) {
    spmv_err err = {0};
    spmv_fmt F;
    spmv_cuda_matrix_header(on->M, &F);
    PlanObject *self = (PlanObject *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->module = Py_NewRef(module);
    self->matrix = Py_NewRef((PyObject *)on);
    self->nrows = F.nrows;
    self->ncols = F.ncols;
    self->typenum = on->typenum;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = spmv_cuda_plan_create_dev(on->M, c, &self->plan, &err);
    Py_END_ALLOW_THREADS if (rc) {
        Py_DECREF(self);
        return raise_spmv_error(module, rc, &err, id);
    }
    return (PyObject *)self;
}

/* Plan(state or Matrix, kernel, params): set a configuration up over a matrix, uploading it first
 * when given its state (the plan then owns the upload).  kernel and params are the configuration as
 * the core parsed it (pyspmv._core.config_parse: registry index, four slots). */
static PyObject *plan_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    spmv_config c = {0};
    char id[SPMV_CONFIG_ID_MAX];
    PyObject *src;
    spmv_err err = {0};
    if (!no_keywords(kwds, "Plan") ||
        !PyArg_ParseTuple(args, "Oi(iiii)", &src, &c.kernel, &c.param[0], &c.param[1], &c.param[2],
                          &c.param[3]))
        return NULL;
    if (spmv_config_id(&c, id, sizeof id) < 0) /* the kernel's id (no slot given): messages */
        return PyErr_Format(PyExc_ValueError, "kernel %d is not a registry index", (int)c.kernel);
    PyObject *module = PyType_GetModule(type);
    glue_state *st = get_state(module);
    MatrixObject *on = NULL;
    if (PyObject_TypeCheck(src, (PyTypeObject *)st->MatrixType)) {
        on = (MatrixObject *)src;
        if (!matrix_live(on)) return NULL;
        if (on->state == NULL) return plan_on_device(type, module, on, &c, id);
        src = on->state;
    }
    const glue_fmtstate *S = state_get(module, src);
    if (S == NULL) return NULL;
    const spmv_fmt F = S->F;
    int typenum = S->typenum;
    PlanObject *self = (PlanObject *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->module = Py_NewRef(module);
    self->matrix = on != NULL ? Py_NewRef((PyObject *)on) : NULL;
    self->nrows = F.nrows;
    self->ncols = F.ncols;
    self->typenum = typenum;
    int rc, elem = typenum == NPY_FLOAT32 ? 4 : 8;
    spmv_cuda_matrix *M = on != NULL ? on->M : NULL;
    Py_BEGIN_ALLOW_THREADS rc = M != NULL ? spmv_cuda_plan_create_on(M, &F, &c, &self->plan, &err)
                                          : spmv_cuda_plan_create(&F, &c, elem, &self->plan, &err);
    Py_END_ALLOW_THREADS if (rc) {
        Py_DECREF(self);
        return raise_spmv_error(module, rc, &err, id);
    }
    return (PyObject *)self;
}

static int plan_live(PlanObject *self) {
    if (self->plan == NULL) PyErr_SetString(PyExc_ValueError, "this plan has been closed");
    return self->plan != NULL;
}

static int plan_xy(PlanObject *self, PyArrayObject *x, PyArrayObject *y) {
    spmv_fmt shape = {0};
    shape.nrows = self->nrows;
    shape.ncols = self->ncols;
    return check_xy(&shape, self->typenum, x, y);
}

/* mv(x, y): y = A x, y poisoned on the device first */
static PyObject *plan_mv(PlanObject *self, PyObject *args) {
    PyArrayObject *x, *y;
    spmv_err err = {0};
    int rc;
    if (!plan_live(self) || !PyArg_ParseTuple(args, "O&O&", real_array, &x, real_out_array, &y) ||
        !plan_xy(self, x, y))
        return NULL;
    Py_BEGIN_ALLOW_THREADS rc =
        spmv_cuda_plan_mv(self->plan, PyArray_DATA(x), PyArray_DATA(y), &err);
    Py_END_ALLOW_THREADS if (rc) return raise_spmv_error(self->module, rc, &err, "CUDA SpMV");
    Py_RETURN_NONE;
}

/* bench(x, y, warmup, repeats, budget_s) -> (median, q25, q75, min, runs) in ms; y gets the last
 * product */
static PyObject *plan_bench(PlanObject *self, PyObject *args) {
    PyArrayObject *x, *y;
    int warmup, repeats, rc;
    double budget;
    spmv_timing t = {0};
    spmv_err err = {0};
    if (!plan_live(self) ||
        !PyArg_ParseTuple(args, "O&O&iid", real_array, &x, real_out_array, &y, &warmup, &repeats,
                          &budget) ||
        !plan_xy(self, x, y))
        return NULL;
    Py_BEGIN_ALLOW_THREADS rc = spmv_cuda_plan_bench(self->plan, PyArray_DATA(x), PyArray_DATA(y),
                                                     warmup, repeats, budget, &t, &err);
    Py_END_ALLOW_THREADS if (rc) return raise_spmv_error(self->module, rc, &err,
                                                         "CUDA SpMV timing");
    return Py_BuildValue("(ddddL)", t.median_ms, t.q25_ms, t.q75_ms, t.min_ms, (long long)t.runs);
}

/* mv_dev(x, y, alpha, beta, stream): y = alpha A x + beta y on device addresses, queued on stream
 * (an address; 0 the legacy default stream).  Keeps the GIL: the call only queues work, and
 * releasing the GIL would cost about as much as the call. */
static PyObject *plan_mv_dev(PlanObject *self, PyObject *args) {
    unsigned long long x, y, stream;
    double alpha, beta;
    spmv_err err = {0};
    if (!plan_live(self) || !PyArg_ParseTuple(args, "KKddK", &x, &y, &alpha, &beta, &stream))
        return NULL;
    int rc = spmv_cuda_plan_mv_dev(self->plan, (const void *)(uintptr_t)x, (void *)(uintptr_t)y,
                                   alpha, beta, (void *)(uintptr_t)stream, &err);
    if (rc) return raise_spmv_error(self->module, rc, &err, "CUDA SpMV on device vectors");
    Py_RETURN_NONE;
}

static PyObject *plan_device(PlanObject *self, void *closure) {
    return plan_live(self) ? PyLong_FromLong(spmv_cuda_plan_device(self->plan)) : NULL;
}

static PyObject *plan_close(PlanObject *self, PyObject *noargs) {
    spmv_cuda_plan_free(self->plan);
    self->plan = NULL;
    Py_CLEAR(self->matrix); /* after the plan: the matrix outlives it */
    Py_RETURN_NONE;
}

static PyObject *plan_nbytes(PlanObject *self, void *closure) {
    return plan_live(self) ? PyLong_FromLongLong(spmv_cuda_plan_bytes(self->plan)) : NULL;
}

static PyObject *plan_setup_ms(PlanObject *self, void *closure) {
    return plan_live(self) ? PyFloat_FromDouble(spmv_cuda_plan_setup_ms(self->plan)) : NULL;
}

static int plan_traverse(PlanObject *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->module);
    Py_VISIT(self->matrix);
    return 0;
}

static void plan_dealloc(PlanObject *self) {
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    spmv_cuda_plan_free(self->plan);
    Py_CLEAR(self->matrix);
    Py_CLEAR(self->module);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static PyMethodDef plan_methods[] = {
    {"mv", (PyCFunction)plan_mv, METH_VARARGS, "mv(x, y): y = A @ x on the GPU"},
    {"bench", (PyCFunction)plan_bench, METH_VARARGS,
     "bench(x, y, warmup, repeats, budget_s) -> (median, q25, q75, min, runs) in ms"},
    {"mv_dev", (PyCFunction)plan_mv_dev, METH_VARARGS,
     "mv_dev(x, y, alpha, beta, stream): y = alpha A x + beta y on device addresses"},
    {"close", (PyCFunction)plan_close, METH_NOARGS, "free the device memory now"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef plan_getset[] = {
    {"nbytes", (getter)plan_nbytes, NULL, "device bytes held", NULL},
    {"setup_ms", (getter)plan_setup_ms, NULL, "upload and setup time in ms", NULL},
    {"device", (getter)plan_device, NULL, "the CUDA device ordinal of its arrays", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot plan_slots[] = {
    {Py_tp_new, plan_new},
    {Py_tp_dealloc, plan_dealloc},
    {Py_tp_traverse, plan_traverse},
    {Py_tp_methods, plan_methods},
    {Py_tp_getset, plan_getset},
    {Py_tp_doc, "Plan(state, kernel, params): a configuration bound to a matrix on the GPU"},
    {0, NULL},
};

static PyType_Spec plan_spec = {
    "pyspmv._cuda.Plan",
    sizeof(PlanObject),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    plan_slots,
};

/* ---- Krylov: a solve on the device (kernels/krylov.cu; pyspmv/solvers/device.py) ---- */

typedef struct {
    PyObject_HEAD spmv_cuda_krylov *k;
    PyObject *module;
    PyObject *precond; /* the Plan or callable set as M, held while set */
    int64_t n;
    int typenum;
} KrylovObject;

static int krylov_live(KrylovObject *self) {
    if (self->k == NULL) PyErr_SetString(PyExc_ValueError, "this solver has been closed");
    return self->k != NULL;
}

/* The spmv_cuda_plan of a live _cuda.Plan, else NULL with TypeError or ValueError. */
static spmv_cuda_plan *plan_of(PyObject *module, PyObject *o) {
    PyObject *type = PyObject_GetAttrString(module, "Plan");
    if (type == NULL) return NULL;
    int ok = PyObject_TypeCheck(o, (PyTypeObject *)type);
    Py_DECREF(type);
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "expected a pyspmv._cuda.Plan, got %.80s",
                     Py_TYPE(o)->tp_name);
        return NULL;
    }
    return plan_live((PlanObject *)o) ? ((PlanObject *)o)->plan : NULL;
}

/* A host vector of the solver's length and dtype. */
static int krylov_host_vector(KrylovObject *self, PyObject *o, int writeable, const char *what) {
    if (!check_array(o, self->typenum, writeable, what)) return 0;
    if (PyArray_SIZE((PyArrayObject *)o) != self->n) {
        PyErr_Format(PyExc_ValueError, "%s has %zd entries; the solver has %lld", what,
                     (Py_ssize_t)PyArray_SIZE((PyArrayObject *)o), (long long)self->n);
        return 0;
    }
    return 1;
}

/* Krylov(method, n, elem_size, restart) */
static PyObject *krylov_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    int method, elem, restart, rc;
    long long n;
    spmv_err err = {0};
    if (!no_keywords(kwds, "Krylov") ||
        !PyArg_ParseTuple(args, "iLii", &method, &n, &elem, &restart))
        return NULL;
    PyObject *module = PyType_GetModule(type);
    KrylovObject *self = (KrylovObject *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->module = Py_NewRef(module);
    self->n = n;
    self->typenum = elem == 4 ? NPY_FLOAT32 : NPY_FLOAT64;
    Py_BEGIN_ALLOW_THREADS rc = spmv_cuda_krylov_create(method, n, elem, restart, &self->k, &err);
    Py_END_ALLOW_THREADS if (rc) {
        Py_DECREF(self);
        return raise_spmv_error(module, rc, &err, "solver");
    }
    return (PyObject *)self;
}

/* load(which, ndarray) or load(which, device pointer, stream pointer): b or x into the solver */
static PyObject *krylov_load(KrylovObject *self, PyObject *args) {
    int which, rc;
    PyObject *src;
    unsigned long long stream = 0;
    spmv_err err = {0};
    if (!krylov_live(self) || !PyArg_ParseTuple(args, "iO|K", &which, &src, &stream)) return NULL;
    const void *ptr;
    if (PyArray_Check(src)) {
        if (!krylov_host_vector(self, src, 0, which == SPMV_KRYLOV_B ? "b" : "x0")) return NULL;
        ptr = PyArray_DATA((PyArrayObject *)src);
    } else {
        ptr = PyLong_AsVoidPtr(src);
        if (ptr == NULL && PyErr_Occurred()) return NULL;
    }
    Py_BEGIN_ALLOW_THREADS rc =
        spmv_cuda_krylov_vector(self->k, which, ptr, NULL, (void *)(uintptr_t)stream, &err);
    Py_END_ALLOW_THREADS if (rc) return raise_spmv_error(self->module, rc, &err, "solver vector");
    Py_RETURN_NONE;
}

/* read_x(ndarray) or read_x(device pointer, stream pointer): x out of the solver */
static PyObject *krylov_read_x(KrylovObject *self, PyObject *args) {
    int rc;
    PyObject *dst;
    unsigned long long stream = 0;
    spmv_err err = {0};
    if (!krylov_live(self) || !PyArg_ParseTuple(args, "O|K", &dst, &stream)) return NULL;
    void *ptr;
    if (PyArray_Check(dst)) {
        if (!krylov_host_vector(self, dst, 1, "x")) return NULL;
        ptr = PyArray_DATA((PyArrayObject *)dst);
    } else {
        ptr = PyLong_AsVoidPtr(dst);
        if (ptr == NULL && PyErr_Occurred()) return NULL;
    }
    Py_BEGIN_ALLOW_THREADS rc =
        spmv_cuda_krylov_vector(self->k, SPMV_KRYLOV_X, NULL, ptr, (void *)(uintptr_t)stream, &err);
    Py_END_ALLOW_THREADS if (rc) return raise_spmv_error(self->module, rc, &err, "solver vector");
    Py_RETURN_NONE;
}

/* M as a Python callable: in copied to a new host array, f(array) must return an ndarray of n
 * entries of the solver's dtype (pyspmv/solvers/device.py wraps the user's M so that it does),
 * copied to out.  Runs with the solver's stream drained, the GIL taken back for the call. */
static int krylov_precond_call(void *ctx, const void *in, void *out, spmv_err *err) {
    KrylovObject *self = (KrylovObject *)ctx;
    PyGILState_STATE g = PyGILState_Ensure();
    npy_intp n = (npy_intp)self->n;
    PyObject *v = NULL, *res = NULL;
    int rc = SPMV_OK;
    v = PyArray_SimpleNew(1, &n, self->typenum);
    if (v == NULL) goto fail;
    rc = spmv_cuda_krylov_copy(self->k, PyArray_DATA((PyArrayObject *)v), in, err);
    if (rc) goto done;
    res = PyObject_CallOneArg(self->precond, v);
    if (res == NULL || !krylov_host_vector(self, res, 0, "the preconditioner's result")) goto fail;
    rc = spmv_cuda_krylov_copy(self->k, out, PyArray_DATA((PyArrayObject *)res), err);
    goto done;
fail: /* the Python exception stays set: the caller raises it */
    rc = SPMV_EINVAL;
    if (err != NULL) {
        err->code = rc;
        snprintf(err->msg, sizeof err->msg, "the preconditioner M raised");
    }
done:
    Py_XDECREF(v);
    Py_XDECREF(res);
    PyGILState_Release(g);
    return rc;
}

/* set_precond(None | inverse diagonal ndarray | Plan | callable) */
static PyObject *krylov_set_precond(KrylovObject *self, PyObject *args) {
    PyObject *M;
    spmv_err err = {0};
    int rc;
    if (!krylov_live(self) || !PyArg_ParseTuple(args, "O", &M)) return NULL;
    const void *diag = NULL;
    spmv_cuda_plan *plan = NULL;
    spmv_cuda_precond_fn fn = NULL;
    PyObject *type = PyObject_GetAttrString(self->module, "Plan");
    if (type == NULL) return NULL;
    int is_plan = PyObject_TypeCheck(M, (PyTypeObject *)type);
    Py_DECREF(type);
    if (M == Py_None) {
    } else if (PyArray_Check(M)) {
        if (!krylov_host_vector(self, M, 0, "the inverse diagonal")) return NULL;
        diag = PyArray_DATA((PyArrayObject *)M);
    } else if (is_plan) {
        if ((plan = plan_of(self->module, M)) == NULL) return NULL;
    } else if (PyCallable_Check(M)) {
        fn = krylov_precond_call;
    } else {
        return PyErr_Format(PyExc_TypeError,
                            "M must be None, an array, a Plan or callable, not %.80s",
                            Py_TYPE(M)->tp_name);
    }
    rc = spmv_cuda_krylov_set_precond(self->k, diag, plan, fn, self, &err);
    if (rc) return raise_spmv_error(self->module, rc, &err, "preconditioner");
    Py_XSETREF(self->precond, diag != NULL || M == Py_None ? NULL : Py_NewRef(M));
    Py_RETURN_NONE;
}

/* start(plan, tol, x_zero) */
static PyObject *krylov_start(KrylovObject *self, PyObject *args) {
    PyObject *po;
    double tol;
    int x_zero, rc;
    spmv_err err = {0};
    spmv_cuda_plan *A;
    if (!krylov_live(self) || !PyArg_ParseTuple(args, "Odp", &po, &tol, &x_zero) ||
        (A = plan_of(self->module, po)) == NULL)
        return NULL;
    Py_BEGIN_ALLOW_THREADS rc = spmv_cuda_krylov_start(self->k, A, tol, x_zero, &err);
    Py_END_ALLOW_THREADS if (rc) {
        if (PyErr_Occurred()) return NULL;
        return raise_spmv_error(self->module, rc, &err, "solver start");
    }
    Py_RETURN_NONE;
}

static PyObject *status_tuple(const spmv_cuda_krylov_status *st) {
    return Py_BuildValue("(LLLidd)", (long long)st->iterations, (long long)st->products,
                         (long long)st->cycles, st->state, st->residual, st->estimate);
}

/* iterate(plan, max_iters, max_cycles) -> (iterations, products, cycles, state, residual,
 * estimate) */
static PyObject *krylov_iterate(KrylovObject *self, PyObject *args) {
    PyObject *po;
    long long max_iters, max_cycles;
    int rc;
    spmv_err err = {0};
    spmv_cuda_krylov_status st;
    spmv_cuda_plan *A;
    if (!krylov_live(self) || !PyArg_ParseTuple(args, "OLL", &po, &max_iters, &max_cycles) ||
        (A = plan_of(self->module, po)) == NULL)
        return NULL;
    Py_INCREF(po); /* the plan stays alive while the GIL is released */
    Py_BEGIN_ALLOW_THREADS rc =
        spmv_cuda_krylov_iterate(self->k, A, max_iters, max_cycles, &st, &err);
    Py_END_ALLOW_THREADS Py_DECREF(po);
    if (rc) {
        if (PyErr_Occurred()) return NULL;
        return raise_spmv_error(self->module, rc, &err, "solver iteration");
    }
    return status_tuple(&st);
}

/* status() -> the tuple iterate returns */
static PyObject *krylov_status(KrylovObject *self, PyObject *noargs) {
    spmv_cuda_krylov_status st;
    if (!krylov_live(self)) return NULL;
    spmv_cuda_krylov_get_status(self->k, &st);
    return status_tuple(&st);
}

/* prepare(plan): a trial product of it on the solver's vectors, synchronised, and the iteration's
 * graph captured for it */
static PyObject *krylov_prepare(KrylovObject *self, PyObject *args) {
    PyObject *po;
    int rc;
    spmv_err err = {0};
    spmv_cuda_plan *A;
    if (!krylov_live(self) || !PyArg_ParseTuple(args, "O", &po) ||
        (A = plan_of(self->module, po)) == NULL)
        return NULL;
    Py_INCREF(po);
    Py_BEGIN_ALLOW_THREADS rc = spmv_cuda_krylov_prepare(self->k, A, &err);
    Py_END_ALLOW_THREADS Py_DECREF(po);
    if (rc) return raise_spmv_error(self->module, rc, &err, "trial product");
    Py_RETURN_NONE;
}

/* norm_b() -> the 2-norm of the loaded b */
static PyObject *krylov_norm_b(KrylovObject *self, PyObject *noargs) {
    double nb = 0;
    int rc;
    spmv_err err = {0};
    if (!krylov_live(self)) return NULL;
    Py_BEGIN_ALLOW_THREADS rc = spmv_cuda_krylov_norm_b(self->k, &nb, &err);
    Py_END_ALLOW_THREADS if (rc) return raise_spmv_error(self->module, rc, &err, "norm of b");
    return PyFloat_FromDouble(nb);
}

/* set_graphs(on) -> the previous setting */
static PyObject *krylov_set_graphs(KrylovObject *self, PyObject *args) {
    int on;
    if (!krylov_live(self) || !PyArg_ParseTuple(args, "p", &on)) return NULL;
    return PyBool_FromLong(spmv_cuda_krylov_set_graphs(self->k, on));
}

static PyObject *krylov_close(KrylovObject *self, PyObject *noargs) {
    spmv_cuda_krylov_free(self->k);
    self->k = NULL;
    Py_CLEAR(self->precond); /* after the solver: it may still have applied it */
    Py_RETURN_NONE;
}

static int krylov_traverse(KrylovObject *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->module);
    Py_VISIT(self->precond);
    return 0;
}

static int krylov_clear(KrylovObject *self) {
    spmv_cuda_krylov_free(self->k);
    self->k = NULL;
    Py_CLEAR(self->precond);
    return 0;
}

static void krylov_dealloc(KrylovObject *self) {
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    krylov_clear(self);
    Py_CLEAR(self->module);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static PyMethodDef krylov_methods[] = {
    {"load", (PyCFunction)krylov_load, METH_VARARGS,
     "load(which, array or device pointer[, stream]): b (0) or x (1) into the solver"},
    {"read_x", (PyCFunction)krylov_read_x, METH_VARARGS,
     "read_x(array or device pointer[, stream]): x out of the solver"},
    {"set_precond", (PyCFunction)krylov_set_precond, METH_VARARGS,
     "set_precond(None, inverse diagonal, Plan or callable)"},
    {"start", (PyCFunction)krylov_start, METH_VARARGS, "start(plan, tol, x_zero)"},
    {"iterate", (PyCFunction)krylov_iterate, METH_VARARGS,
     "iterate(plan, max_iters, max_cycles) -> (iterations, products, cycles, state, residual, "
     "estimate)"},
    {"status", (PyCFunction)krylov_status, METH_NOARGS, "status() -> as iterate"},
    {"prepare", (PyCFunction)krylov_prepare, METH_VARARGS,
     "prepare(plan): a trial product, synchronised, and the iteration's graph for it"},
    {"norm_b", (PyCFunction)krylov_norm_b, METH_NOARGS, "norm_b() -> the 2-norm of the loaded b"},
    {"set_graphs", (PyCFunction)krylov_set_graphs, METH_VARARGS,
     "set_graphs(on) -> previous: CG and BiCGSTAB iterations as CUDA graphs"},
    {"close", (PyCFunction)krylov_close, METH_NOARGS, "free the device memory now"},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot krylov_slots[] = {
    {Py_tp_new, krylov_new},
    {Py_tp_dealloc, krylov_dealloc},
    {Py_tp_traverse, krylov_traverse},
    {Py_tp_clear, krylov_clear},
    {Py_tp_methods, krylov_methods},
    {Py_tp_doc, "Krylov(method, n, elem_size, restart): a CG, BiCGSTAB or GMRES solve on the GPU"},
    {0, NULL},
};

static PyType_Spec krylov_spec = {
    "pyspmv._cuda.Krylov",
    sizeof(KrylovObject),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    krylov_slots,
};

static int krylov_add(PyObject *m) {
    PyObject *t = PyType_FromModuleAndSpec(m, &krylov_spec, NULL);
    if (t == NULL) return -1;
    int rc = PyModule_AddObjectRef(m, "Krylov", t);
    Py_DECREF(t);
    return rc;
}

/* ---- module ---- */

static PyMethodDef cuda_methods[] = {
    {"device_count", device_count, METH_NOARGS, "device_count() -> int, or DeviceUnavailableError"},
    {"info", info, METH_NOARGS, "info() -> dict of device and software versions"},
    {"wrap_csr", wrap_csr, METH_VARARGS,
     "wrap_csr(nrows, ncols, nnz, ptr, col, val, elem_size, keep) -> Matrix read in place"},
    {"copy_bandwidth", copy_bandwidth, METH_VARARGS,
     "copy_bandwidth(bytes, repeats) -> GB/s of device-to-device copies (read + write)"},
    {NULL, NULL, 0, NULL},
};

static int cuda_exec(PyObject *m) {
    glue_state *st = get_state(m);
    import_array1(-1);
    PyObject *core = PyImport_ImportModule("pyspmv._core");
    if (core == NULL) return -1;
    st->DeviceUnavailableError = PyObject_GetAttrString(core, "DeviceUnavailableError");
    st->NotApplicableError = PyObject_GetAttrString(core, "NotApplicableError");
    Py_DECREF(core);
    if (st->DeviceUnavailableError == NULL || st->NotApplicableError == NULL) return -1;
    /* The State type through _core's capsule, not its attribute: only _core's States pass. */
    st->StateType = (PyTypeObject *)PyCapsule_Import(STATE_CAPSULE, 0);
    if (st->StateType == NULL) return -1;
    Py_INCREF(st->StateType);
    st->MatrixType = PyType_FromModuleAndSpec(m, &matrix_spec, NULL);
    if (st->MatrixType == NULL || PyModule_AddObjectRef(m, "Matrix", st->MatrixType) < 0) return -1;
    PyObject *plan = PyType_FromModuleAndSpec(m, &plan_spec, NULL);
    if (plan == NULL) return -1;
    int rc = PyModule_AddObjectRef(m, "Plan", plan);
    Py_DECREF(plan);
    return rc < 0 ? rc : krylov_add(m);
}

static int cuda_traverse(PyObject *m, visitproc visit, void *arg) {
    glue_state *st = get_state(m);
    Py_VISIT(st->DeviceUnavailableError);
    Py_VISIT(st->NotApplicableError);
    Py_VISIT(st->MatrixType);
    Py_VISIT(st->StateType);
    return 0;
}

static int cuda_clear(PyObject *m) {
    glue_state *st = get_state(m);
    Py_CLEAR(st->DeviceUnavailableError);
    Py_CLEAR(st->NotApplicableError);
    Py_CLEAR(st->MatrixType);
    Py_CLEAR(st->StateType);
    return 0;
}

static void cuda_free(void *m) { cuda_clear((PyObject *)m); }

static PyModuleDef_Slot cuda_slots[] = {
    {Py_mod_exec, cuda_exec},
    {0, NULL},
};

static struct PyModuleDef cuda_module = {
    PyModuleDef_HEAD_INIT, "_cuda",      "pyspmv's CUDA side (private; use the pyspmv package).",
    sizeof(glue_state),    cuda_methods, cuda_slots,
    cuda_traverse,         cuda_clear,   cuda_free,
};

PyMODINIT_FUNC PyInit__cuda(void) { return PyModuleDef_Init(&cuda_module); }
