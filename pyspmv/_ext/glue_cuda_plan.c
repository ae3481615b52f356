// pyspmv/_ext/glue_cuda_plan.c: _cuda's Plan type — a configuration bound to a matrix on the GPU:
// checked products, timed runs, products on device vectors
// SPDX-License-Identifier: BSD-3-Clause
#define NO_IMPORT_ARRAY
#include "glue_cuda.h"

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

int plan_live(PlanObject *self) {
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

/* bench(x, y, warmup, repeats, budget_s[, run]) -> (median, q25, q75, min, runs) in ms per product;
 * x None: made on the device (no host x, no upload); y gets the last product (None: not downloaded,
 * one copy of y over the host link fewer); run: products a timing queues back to back (default 1,
 * spmv_cuda_plan_bench_runs) */
static PyObject *plan_bench(PlanObject *self, PyObject *args) {
    PyArrayObject *x = NULL, *y = NULL;
    PyObject *xo, *yo;
    int warmup, repeats, run = 1, rc;
    double budget;
    spmv_timing t = {0};
    spmv_err err = {0};
    if (!plan_live(self) ||
        !PyArg_ParseTuple(args, "OOiid|i", &xo, &yo, &warmup, &repeats, &budget, &run) ||
        (xo != Py_None && !real_array(xo, &x)) || (yo != Py_None && !real_out_array(yo, &y)))
        return NULL;
    if (!plan_xy(self, x, y)) return NULL;
    const void *xp = x != NULL ? PyArray_DATA(x) : NULL;
    void *yp = y != NULL ? PyArray_DATA(y) : NULL;
    Py_BEGIN_ALLOW_THREADS rc =
        spmv_cuda_plan_bench_runs(self->plan, xp, yp, warmup, repeats, run, budget, &t, &err);
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

static PyObject *plan_keeps_matrix(PlanObject *self, void *closure) {
    return plan_live(self) ? PyBool_FromLong(spmv_cuda_plan_keep(self->plan)) : NULL;
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
     "bench(x, y, warmup, repeats, budget_s[, run]) -> (median, q25, q75, min, runs) in ms a "
     "product"},
    {"mv_dev", (PyCFunction)plan_mv_dev, METH_VARARGS,
     "mv_dev(x, y, alpha, beta, stream): y = alpha A x + beta y on device addresses"},
    {"close", (PyCFunction)plan_close, METH_NOARGS, "free the device memory now"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef plan_getset[] = {
    {"nbytes", (getter)plan_nbytes, NULL, "device bytes held", NULL},
    {"setup_ms", (getter)plan_setup_ms, NULL, "upload and setup time in ms", NULL},
    {"device", (getter)plan_device, NULL, "the CUDA device ordinal of its arrays", NULL},
    {"keeps_matrix", (getter)plan_keeps_matrix, NULL,
     "whether its kernel may keep the matrix's streams in the L2 (else evict-first)", NULL},
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

PyType_Spec plan_spec = {
    "pyspmv._cuda.Plan",
    sizeof(PlanObject),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    plan_slots,
};
