// pyspmv/_ext/glue_cuda_krylov.c: _cuda's Krylov type — a CG, BiCGSTAB or GMRES solve on the device
// (kernels/krylov.cu; pyspmv/solvers/device.py): vectors, preconditioner, iterations
// SPDX-License-Identifier: BSD-3-Clause
#define NO_IMPORT_ARRAY
#include "glue_cuda.h"

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

/* set_wake(address): the address of a C int another thread sets to have iterate return (0: none);
 * the caller keeps its memory alive while the solver may read it */
static PyObject *krylov_set_wake(KrylovObject *self, PyObject *args) {
    unsigned long long address;
    if (!krylov_live(self) || !PyArg_ParseTuple(args, "K", &address)) return NULL;
    spmv_cuda_krylov_set_wake(self->k, (const volatile int *)(uintptr_t)address);
    Py_RETURN_NONE;
}

/* set_graphs(on) -> the previous setting */
static PyObject *krylov_set_graphs(KrylovObject *self, PyObject *args) {
    int on;
    if (!krylov_live(self) || !PyArg_ParseTuple(args, "p", &on)) return NULL;
    return PyBool_FromLong(spmv_cuda_krylov_set_graphs(self->k, on));
}

/* set_l2(on) -> the previous setting */
static PyObject *krylov_set_l2(KrylovObject *self, PyObject *args) {
    int on, was;
    if (!krylov_live(self) || !PyArg_ParseTuple(args, "p", &on)) return NULL;
    Py_BEGIN_ALLOW_THREADS was = spmv_cuda_krylov_set_l2(self->k, on);
    Py_END_ALLOW_THREADS return PyBool_FromLong(was);
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
    {"set_wake", (PyCFunction)krylov_set_wake, METH_VARARGS,
     "set_wake(address): iterate returns before its next iteration once the int there is set"},
    {"set_graphs", (PyCFunction)krylov_set_graphs, METH_VARARGS,
     "set_graphs(on) -> previous: CG and BiCGSTAB iterations as CUDA graphs"},
    {"set_l2", (PyCFunction)krylov_set_l2, METH_VARARGS,
     "set_l2(on) -> previous: the solver's vectors kept in L2 (a persisting window)"},
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

int krylov_add(PyObject *m) {
    PyObject *t = PyType_FromModuleAndSpec(m, &krylov_spec, NULL);
    if (t == NULL) return -1;
    int rc = PyModule_AddObjectRef(m, "Krylov", t);
    Py_DECREF(t);
    return rc;
}
