// pyspmv/_ext/glue_models.c: _core's models — a spec dict of NumPy arrays parsed by the core's
// field tables into a spmv_model and its spmv_configs, held by a capsule; model_new, _cost,
// _predict
// SPDX-License-Identifier: BSD-3-Clause
#define NO_IMPORT_ARRAY
#include "glue_core.h"

static const char MODEL_CAPSULE[] = "pyspmv._core.model";

/* Model work past this many steps (spmv_model_cost x rows) runs without the GIL: below, a call
 * ends within milliseconds, and a thread that must then wait for the GIL back (a solver's
 * selection thread behind its iterations) loses more than the release gains. */
#define NOGIL_MIN_STEPS SPMV_POLL_STEPS

/* The core's interruption check (spmv_interrupt): the GIL taken back where the call released it,
 * then Python's signal handlers; one that raises (Ctrl-C's KeyboardInterrupt) stops the call with
 * its exception set, which the caller returns (raise_spmv_error leaves it). */
static int glue_interrupted(void *arg) {
    glue_call *c = arg;
    if (c->saved != NULL) PyEval_RestoreThread(c->saved);
    int stop = PyErr_CheckSignals() < 0;
    if (c->saved != NULL) c->saved = PyEval_SaveThread();
    return stop;
}

void call_begin(glue_call *c, int64_t steps) {
    c->intr.fn = glue_interrupted;
    c->intr.arg = c;
    c->saved = steps > NOGIL_MIN_STEPS ? PyEval_SaveThread() : NULL;
}

void call_end(glue_call *c) {
    if (c->saved != NULL) PyEval_RestoreThread(c->saved);
    c->saved = NULL;
}

/* spec[key] as an int (required). */
static int spec_int(PyObject *spec, const char *key, long *out) {
    PyObject *v = PyDict_GetItemString(spec, key);
    if (v == NULL) {
        PyErr_Format(PyExc_ValueError, "model spec lacks '%s'", key);
        return 0;
    }
    *out = PyLong_AsLong(v);
    return !(*out == -1 && PyErr_Occurred());
}

static int spec_double(PyObject *spec, const char *key, double *out) {
    PyObject *v = PyDict_GetItemString(spec, key);
    if (v == NULL) {
        PyErr_Format(PyExc_ValueError, "model spec lacks '%s'", key);
        return 0;
    }
    *out = PyFloat_AsDouble(v);
    return !(*out == -1.0 && PyErr_Occurred());
}

/* spec[key]: a 1-D array of typenum with exactly n entries, kept alive in refs; absent or None
 * gives NULL when optional.  Returns 0 with an exception set on failure. */
static int spec_array(PyObject *spec, const char *key, int typenum, int64_t n, int optional,
                      PyObject *refs, const void **out) {
    PyObject *v = PyDict_GetItemString(spec, key);
    *out = NULL;
    if (v == NULL || v == Py_None) {
        if (optional) return 1;
        PyErr_Format(PyExc_ValueError, "model spec lacks the array '%s'", key);
        return 0;
    }
    if (!check_array(v, typenum, 0, key)) return 0;
    if (PyArray_SIZE((PyArrayObject *)v) != n) {
        PyErr_Format(PyExc_ValueError, "model spec array '%s' has %zd entries; it must have %lld",
                     key, (Py_ssize_t)PyArray_SIZE((PyArrayObject *)v), (long long)n);
        return 0;
    }
    if (PyList_Append(refs, v) < 0) return 0;
    *out = PyArray_DATA((PyArrayObject *)v);
    return 1;
}

#define I32(key, n, opt, dst) spec_array(spec, key, NPY_INT32, n, opt, refs, (const void **)&(dst))
#define F64(key, n, opt, dst)                                                                      \
    spec_array(spec, key, NPY_FLOAT64, n, opt, refs, (const void **)&(dst))
#define INT(key, dst) (spec_int(spec, key, &l_) && ((dst) = (int32_t)l_, 1))

/* Sub-model arrays (a cascade's stages) live in capsules kept in refs, freed with the rest. */
static void block_free(PyObject *cap) {
    PyMem_Free(PyCapsule_GetPointer(cap, "pyspmv._core.block"));
}

static int parse_model(PyObject *spec, spmv_model *M, PyObject *refs, int depth);

/* spec[f->name] into M at f->offset, as the field's table entry (csrc/model*.c) describes it:
 * scalars in range, arrays of their exact length, a list of sub-model specs.  Returns 0 with an
 * exception set on failure. */
static int parse_field(PyObject *spec, spmv_model *M, const spmv_model_field *f, PyObject *refs,
                       int depth) {
    char *at = (char *)M + f->offset;
    long l;
    double d;
    switch (f->type) {
    case SPMV_FIELD_INT:
        if (f->flags & SPMV_FIELD_DERIVED) return 1; /* set by the field it counts */
        if (!spec_int(spec, f->name, &l)) return 0;
        if (l < f->lo || l > f->hi) {
            PyErr_Format(PyExc_ValueError, "model spec field '%s' = %ld is outside [%lld, %lld]",
                         f->name, l, (long long)f->lo, (long long)f->hi);
            return 0;
        }
        *(int32_t *)(void *)at = (int32_t)l;
        return 1;
    case SPMV_FIELD_REAL:
        if (!spec_double(spec, f->name, &d)) return 0;
        *(double *)(void *)at = d;
        return 1;
    case SPMV_FIELD_MODELS:
        break;
    default: {
        int typenum = f->type == SPMV_FIELD_I32   ? NPY_INT32
                      : f->type == SPMV_FIELD_F64 ? NPY_FLOAT64
                                                  : NPY_UINT8;
        return spec_array(spec, f->name, typenum, spmv_model_field_len(M, f),
                          (f->flags & SPMV_FIELD_OPTIONAL) != 0, refs, (const void **)at);
    }
    }
    PyObject *subs = PyDict_GetItemString(spec, f->name);
    if (subs == NULL || !PyList_Check(subs) || PyList_GET_SIZE(subs) < 1 ||
        PyList_GET_SIZE(subs) > INT32_MAX || depth > 0) {
        PyErr_Format(PyExc_ValueError,
                     "model spec field '%s' must be a non-empty list of sub-model specs (not "
                     "inside a sub-model)",
                     f->name);
        return 0;
    }
    Py_ssize_t n = PyList_GET_SIZE(subs);
    spmv_model *sub = PyMem_Calloc((size_t)n, sizeof(spmv_model));
    PyObject *cap = sub == NULL ? NULL : PyCapsule_New(sub, "pyspmv._core.block", block_free);
    if (cap == NULL) {
        PyMem_Free(sub);
        if (!PyErr_Occurred()) PyErr_NoMemory();
        return 0;
    }
    int ok = PyList_Append(refs, cap) == 0;
    Py_DECREF(cap);
    /* the count goes to the INT field len[0] names */
    int32_t nf;
    const spmv_model_field *kf = spmv_model_fields(M->kind, &nf, NULL);
    for (int32_t i = 0; ok && i < nf; i++)
        if (kf[i].type == SPMV_FIELD_INT && strcmp(kf[i].name, f->len[0]) == 0)
            *(int32_t *)(void *)((char *)M + kf[i].offset) = (int32_t)n;
    for (Py_ssize_t s = 0; ok && s < n; s++) {
        PyObject *item = PyList_GET_ITEM(subs, s);
        if (!PyDict_Check(item)) {
            PyErr_Format(PyExc_TypeError, "model spec field '%s' must hold dicts", f->name);
            return 0;
        }
        ok = parse_model(item, &sub[s], refs, depth + 1);
        if (ok && (sub[s].kind < 0 || sub[s].kind > 62 || !((f->hi >> sub[s].kind) & 1))) {
            PyErr_Format(PyExc_ValueError, "model spec field '%s' cannot hold a model of kind %d",
                         f->name, sub[s].kind);
            return 0;
        }
    }
    *(const spmv_model **)(void *)at = sub;
    return ok;
}

/* The fields of one table: scalars first, whose values give the arrays' lengths. */
static int parse_fields(PyObject *spec, spmv_model *M, const spmv_model_field *f, int32_t n,
                        PyObject *refs, int depth) {
    for (int pass = 0; pass < 2; pass++)
        for (int32_t i = 0; i < n; i++) {
            int scalar = f[i].type == SPMV_FIELD_INT || f[i].type == SPMV_FIELD_REAL;
            if (scalar == (pass == 0) && !parse_field(spec, M, &f[i], refs, depth)) return 0;
        }
    return 1;
}

/* A spec: 'kind', then the head's fields and the kind's, each as its table says. */
static int parse_model(PyObject *spec, spmv_model *M, PyObject *refs, int depth) {
    long kind;
    int32_t nh, nk = 0;
    const char *name = NULL;
    if (!spec_int(spec, "kind", &kind)) return 0;
    const spmv_model_field *head = spmv_model_fields(-1, &nh, NULL);
    const spmv_model_field *own =
        kind >= 0 && kind < SPMV_MODEL_NKINDS ? spmv_model_fields((int)kind, &nk, &name) : NULL;
    if (name == NULL) {
        PyErr_Format(PyExc_ValueError, "model spec kind %ld is unknown", kind);
        return 0;
    }
    M->kind = (int)kind;
    return parse_fields(spec, M, head, nh, refs, depth) &&
           parse_fields(spec, M, own, nk, refs, depth);
}

/* A new int32 or float64 array of n entries in refs; its data into *data. */
static int ref_array(PyObject *refs, npy_intp n, int typenum, void **data) {
    PyObject *a = PyArray_ZEROS(1, &n, typenum, 0);
    if (a == NULL || PyList_Append(refs, a) < 0) {
        Py_XDECREF(a);
        return 0;
    }
    Py_DECREF(a); /* refs holds it */
    *data = PyArray_DATA((PyArrayObject *)a);
    return 1;
}

/* The configurations of a spec: "cfg.ids" (a sequence of cfg.n configuration ids), each parsed by
 * the core once, here, into the columns of the spmv_configs table (spmv_config_columns). */
static int parse_configs(PyObject *spec, glue_model *G, PyObject *refs) {
    long l_;
    spmv_configs *C = &G->configs;
    const int32_t *dev;
    if (!INT("cfg.n", C->n) || !INT("cfg.nextra", C->nextra)) return 0;
    G->nfeatures = 0;
    if (PyDict_GetItemString(spec, "cfg.nfeatures") != NULL && !INT("cfg.nfeatures", G->nfeatures))
        return 0;
    if (C->n < 0 || C->nextra < 0 || G->nfeatures < 0) {
        PyErr_SetString(PyExc_ValueError,
                        "model spec: cfg.n, cfg.nextra and cfg.nfeatures must be >= 0");
        return 0;
    }
    int64_t n = C->n;
    if (G->nfeatures > 0) /* a caller's features: only the groups and extra columns are read */
        return I32("cfg.group", n, 0, C->group) && F64("cfg.extra", n * C->nextra, 0, C->extra);
    if (!I32("cfg.group", n, 0, C->group) || !F64("cfg.extra", n * C->nextra, 0, C->extra) ||
        !I32("dev", 3, 0, dev))
        return 0;
    G->dev.sm_count = dev[0];
    G->dev.threads_per_sm = dev[1];
    G->dev.warp_size = dev[2];
    PyObject *ids = PyDict_GetItemString(spec, "cfg.ids");
    PyObject *seq =
        ids != NULL ? PySequence_Fast(ids, "model spec: cfg.ids must be a sequence") : NULL;
    if (seq == NULL) {
        if (ids == NULL)
            PyErr_SetString(PyExc_ValueError,
                            "model spec: cfg.ids (the configuration ids) is missing");
        return 0;
    }
    int32_t *format, *param, *unread;
    double *p, *launches;
    const char **utf8 = NULL;
    spmv_err err = {0};
    int ok = PySequence_Fast_GET_SIZE(seq) == n;
    if (!ok)
        PyErr_Format(PyExc_ValueError, "model spec: cfg.ids holds %zd ids; cfg.n is %d",
                     PySequence_Fast_GET_SIZE(seq), (int)n);
    ok = ok && ref_array(refs, (npy_intp)n, NPY_INT32, (void **)&format) &&
         ref_array(refs, (npy_intp)(2 * n), NPY_INT32, (void **)&param) &&
         ref_array(refs, (npy_intp)n, NPY_INT32, (void **)&unread) &&
         ref_array(refs, (npy_intp)(SPMV_NPCOLS * n), NPY_FLOAT64, (void **)&p) &&
         ref_array(refs, (npy_intp)n, NPY_FLOAT64, (void **)&launches) &&
         (utf8 = utf8_ids(seq, "model spec: cfg.ids")) != NULL;
    if (ok && spmv_configs_table(C->n, utf8, format, param, unread, p, launches, &err)) {
        PyErr_Format(PyExc_ValueError, "model spec: cfg.ids[%d]: %s", (int)err.where, err.msg);
        ok = 0;
    }
    PyMem_Free(utf8);
    Py_DECREF(seq);
    if (!ok) return 0;
    C->format = format;
    C->param = param;
    C->unread = unread;
    C->p = p;
    C->launches = launches;
    return 1;
}

static void model_capsule_free(PyObject *cap) {
    glue_model *G = PyCapsule_GetPointer(cap, MODEL_CAPSULE);
    if (G == NULL) return;
    Py_XDECREF(G->refs);
    PyMem_Free(G);
}

/* One spmv_model_field as a dict: name, type ('int', 'real', 'int32', 'float64', 'uint8',
 * 'models'), the flags as booleans, lo, hi, and the length rule: len, a list of (field, plus),
 * and add. */
static PyObject *field_dict(const spmv_model_field *f) {
    static const char *const types[] = {"int", "real", "int32", "float64", "uint8", "models"};
    PyObject *len = PyList_New(0);
    for (int k = 0; len != NULL && k < 2; k++) {
        if (f->len[k] == NULL) continue;
        PyObject *t = Py_BuildValue("(si)", f->len[k], (int)f->plus[k]);
        if (t == NULL || PyList_Append(len, t) < 0) Py_CLEAR(len);
        Py_XDECREF(t);
    }
    if (len == NULL) return NULL;
    return Py_BuildValue("{sssssOsOsOsLsLsNsi}", "name", f->name, "type", types[f->type],
                         "optional", (f->flags & SPMV_FIELD_OPTIONAL) ? Py_True : Py_False,
                         "neg_inf", (f->flags & SPMV_FIELD_NEG_INF) ? Py_True : Py_False, "derived",
                         (f->flags & SPMV_FIELD_DERIVED) ? Py_True : Py_False, "lo",
                         (long long)f->lo, "hi", (long long)f->hi, "len", len, "add", (int)f->add);
}

/* model_fields(kind) -> (name, tuple of field dicts): kind -1 is the head (csrc/model.c), 0 ..
 * NKINDS-1 the kinds of csrc/models.def (0: a cascade's one-class stage); None outside. */
PyObject *model_fields(PyObject *m, PyObject *args) {
    int kind;
    int32_t n;
    const char *name;
    if (!PyArg_ParseTuple(args, "i", &kind)) return NULL;
    const spmv_model_field *f = spmv_model_fields(kind, &n, &name);
    if (name == NULL) Py_RETURN_NONE;
    PyObject *t = PyTuple_New(n);
    for (int32_t i = 0; t != NULL && i < n; i++) {
        PyObject *d = field_dict(&f[i]);
        if (d == NULL) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, d);
    }
    return t == NULL ? NULL : Py_BuildValue("(sN)", name, t);
}

/* model_new(spec) -> capsule: the model and its configurations, checked by spmv_model_check */
PyObject *model_new(PyObject *m, PyObject *args) {
    PyObject *spec, *cap = NULL;
    spmv_err err = {0};
    if (!PyArg_ParseTuple(args, "O!", &PyDict_Type, &spec)) return NULL;
    glue_model *G = PyMem_Calloc(1, sizeof *G);
    if (G == NULL) return PyErr_NoMemory();
    G->refs = PyList_New(0);
    if (G->refs == NULL || !parse_model(spec, &G->model, G->refs, 0) ||
        !parse_configs(spec, G, G->refs))
        goto fail;
    int rc = spmv_model_check(&G->model, &err);
    if (rc == 0) rc = spmv_model_cost(&G->model, &G->steps, &err);
    if (rc) {
        raise_spmv_error(m, rc, &err, "model");
        goto fail;
    }
    int32_t base = G->nfeatures > 0 ? G->nfeatures : SPMV_NCOLS;
    if (G->model.ncols != base + G->configs.nextra) {
        PyErr_Format(PyExc_ValueError, "model: it reads %d columns, its configurations give %d",
                     (int)G->model.ncols, (int)(base + G->configs.nextra));
        goto fail;
    }
    for (int32_t j = 0; j < G->configs.n; j++) G->ranked += G->configs.group[j] >= 0;
    /* steps <= SPMV_MODEL_MAX_STEPS (spmv_model_check), ranked <= INT32_MAX: no overflow */
    if (G->steps * (G->ranked > 0 ? G->ranked : 1) > SPMV_MODEL_MAX_STEPS) {
        PyErr_Format(PyExc_ValueError,
                     "model: ranking one matrix takes up to %lld steps (tree nodes, distances, "
                     "...: %lld per configuration x %d configurations), past the limit of %lld "
                     "(SPMV_MODEL_MAX_STEPS)",
                     (long long)(G->steps * G->ranked), (long long)G->steps, (int)G->ranked,
                     (long long)SPMV_MODEL_MAX_STEPS);
        goto fail;
    }
    cap = PyCapsule_New(G, MODEL_CAPSULE, model_capsule_free);
    if (cap != NULL) return cap;
fail:
    Py_XDECREF(G->refs);
    PyMem_Free(G);
    return NULL;
}

int model_converter(PyObject *o, void *out) {
    glue_model *G = PyCapsule_GetPointer(o, MODEL_CAPSULE);
    if (G == NULL) return 0;
    *(glue_model **)out = G;
    return 1;
}

/* model_cost(capsule) -> (steps per row, configurations ranked): spmv_model_cost and what one
 * ranking evaluates, whose product model_new held to SPMV_MODEL_MAX_STEPS. */
PyObject *model_cost(PyObject *m, PyObject *args) {
    glue_model *G;
    (void)m;
    if (!PyArg_ParseTuple(args, "O&", model_converter, &G)) return NULL;
    return Py_BuildValue("(Li)", (long long)G->steps, (int)G->ranked);
}

/* model_predict(capsule, rows, stride, group) -> (ms[n], raw[n*nout]) */
PyObject *model_predict(PyObject *m, PyObject *args) {
    glue_model *G;
    PyArrayObject *rows, *group;
    int stride, rc;
    spmv_err err = {0};
    if (!PyArg_ParseTuple(args, "O&O&iO&", model_converter, &G, real_array, &rows, &stride,
                          int32_array, &group))
        return NULL;
    npy_intp n = PyArray_SIZE(group), nraw = n * spmv_model_nout(&G->model);
    if (n > INT32_MAX)
        return PyErr_Format(PyExc_ValueError, "model_predict: %zd rows, past the int32 limit %d",
                            (Py_ssize_t)n, INT32_MAX);
    if (PyArray_TYPE(rows) != NPY_FLOAT64 || stride < 1 || PyArray_SIZE(rows) != n * stride)
        return PyErr_Format(PyExc_ValueError, "rows must be float64 with %zd x %d entries",
                            (Py_ssize_t)n, stride);
    PyObject *ms = PyArray_SimpleNew(1, &n, NPY_FLOAT64),
             *raw = PyArray_SimpleNew(1, &nraw, NPY_FLOAT64);
    if (ms == NULL || raw == NULL) goto fail;
    glue_call c;
    call_begin(&c, G->steps * (int64_t)n); /* <= 2^28 * 2^31 */
    rc = spmv_model_predict(&G->model, PyArray_DATA(rows), (int32_t)n, stride, PyArray_DATA(group),
                            PyArray_DATA((PyArrayObject *)ms), PyArray_DATA((PyArrayObject *)raw),
                            &c.intr, &err);
    call_end(&c);
    if (rc) {
        raise_spmv_error(m, rc, &err, "model");
        goto fail;
    }
    return Py_BuildValue("(NN)", ms, raw);
fail:
    Py_XDECREF(ms);
    Py_XDECREF(raw);
    return NULL;
}
