// pyspmv/_ext/glue_registry.c: _core's features and queries of the core's lists — names, format
// facts, the kernel registry, configurations (parse, expand, ids as UTF-8)
// SPDX-License-Identifier: BSD-3-Clause
#define NO_IMPORT_ARRAY
#include "glue_core.h"

#ifdef _OPENMP
#include <omp.h>
#endif

PyObject *features(PyObject *m, PyObject *args) {
    int nrows, ncols;
    PyArrayObject *indptr, *indices;
    spmv_gpu_props dev;
    spmv_err err = {0};
    int rc;
    if (!PyArg_ParseTuple(args, "iiO&O&iii", &nrows, &ncols, int32_array, &indptr, int32_array,
                          &indices, &dev.sm_count, &dev.threads_per_sm, &dev.warp_size) ||
        !csr_lengths(nrows, indptr, indices, "features"))
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

PyObject *feature_names(PyObject *m, PyObject *noargs) {
    return names_tuple(spmv_feature_name, SPMV_NFEATURES);
}

/* gpu_props_h100() -> {"sm_count", "threads_per_sm", "warp_size"}: spmv_gpu_props_h100, the one
 * statement of the device the default features assume. */
PyObject *gpu_props_h100(PyObject *m, PyObject *noargs) {
    spmv_gpu_props p;
    spmv_gpu_props_h100(&p);
    return Py_BuildValue("{sisisi}", "sm_count", (int)p.sm_count, "threads_per_sm",
                         (int)p.threads_per_sm, "warp_size", (int)p.warp_size);
}

PyObject *format_names(PyObject *m, PyObject *noargs) {
    return names_tuple(spmv_format_name, SPMV_NFORMATS);
}

/* omp_threads() -> the threads an OpenMP region of the CPU kernels would start now (1 without
 * OpenMP): OMP_NUM_THREADS, else the runtime's default. */
PyObject *omp_threads(PyObject *m, PyObject *noargs) {
#ifdef _OPENMP
    return PyLong_FromLong(omp_get_max_threads());
#else
    return PyLong_FromLong(1);
#endif
}

PyObject *design_columns(PyObject *m, PyObject *noargs) {
    return names_tuple(spmv_design_column_name, SPMV_NCOLS);
}

/* format_facts() -> per format code {"unread": bits, "finite_x": bool}: the facts csrc/<format>.c
 * keeps beside its operations (spmv_format_unread, spmv_format_finite_x). */
PyObject *format_facts(PyObject *m, PyObject *noargs) {
    PyObject *t = PyTuple_New(SPMV_NFORMATS);
    for (int f = 0; t != NULL && f < SPMV_NFORMATS; f++) {
        PyObject *v = Py_BuildValue("{sisO}", "unread", (int)spmv_format_unread(f), "finite_x",
                                    spmv_format_finite_x(f) ? Py_True : Py_False);
        if (v == NULL) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, f, v);
    }
    return t;
}

static PyObject *grid_tuple(const spmv_kernel_desc *d, int k) {
    PyObject *t = PyTuple_New(d->ngrid[k]);
    for (int i = 0; t != NULL && i < d->ngrid[k]; i++)
        PyTuple_SET_ITEM(t, i, PyLong_FromLong(d->grid[k][i]));
    return t;
}

/* One registry entry as a dict; parameter slots as 4-tuples (names None where unused). */
static PyObject *kernel_dict(const spmv_kernel_desc *d) {
    PyObject *g[SPMV_NPARAM] = {NULL};
    PyObject *e = NULL;
    int ok = 1;
    for (int k = 0; k < SPMV_NPARAM; k++) ok = ok && (g[k] = grid_tuple(d, k)) != NULL;
    /* the id's fields: "library/format[/kernel]" (the first one names the id's library) */
    const char *f1 = strchr(d->id, '/'), *f2 = f1 != NULL ? strchr(f1 + 1, '/') : NULL;
    int prefix_len = f1 != NULL ? (int)(f1 - d->id) : (int)strlen(d->id);
    if (ok)
        e = Py_BuildValue(
            "{s:s,s:s#,s:z,s:i,s:s,s:i,s:i,s:(zzzz),s:(OOOO),s:(iiii),s:i,s:O,s:z,s:z}", "id",
            d->id, "prefix", d->id, (Py_ssize_t)prefix_len, "name", f2 != NULL ? f2 + 1 : NULL,
            "device", d->device, "library", d->library == SPMV_LIB_CUSPARSE ? "cusparse" : "pyspmv",
            "format", d->format, "kernel", d->kernel, "param_names", d->param_name[0],
            d->param_name[1], d->param_name[2], d->param_name[3], "grid", g[0], g[1], g[2], g[3],
            "param_default", d->param_default[0], d->param_default[1], d->param_default[2],
            d->param_default[3], "launches", d->launches, "deterministic",
            d->deterministic ? Py_True : Py_False, "cusparse_format", d->cusparse_format,
            "cusparse_alg", d->cusparse_alg);
    for (int k = 0; k < SPMV_NPARAM; k++) Py_XDECREF(g[k]);
    return e;
}

PyObject *kernels(PyObject *m, PyObject *noargs) {
    PyObject *list = PyList_New(0);
    for (int i = 0; list != NULL && i < spmv_kernel_count(); i++) {
        PyObject *e = kernel_dict(spmv_kernel_get(i));
        if (e == NULL || PyList_Append(list, e) < 0) Py_CLEAR(list);
        Py_XDECREF(e);
    }
    return list;
}

/* A configuration as Python sees it: (kernel, params, given, id, p), the registry index, the four
 * slots (defaults filled), the bits of the slots the id names, the canonical id and the p_* design
 * columns (NaN where none): csrc/config.c's spmv_config, spmv_config_id, spmv_config_columns. */
static PyObject *config_tuple(const spmv_config *c) {
    char id[SPMV_CONFIG_ID_MAX];
    spmv_config_cols cols;
    spmv_err err = {0};
    int len = spmv_config_id(c, id, sizeof id);
    if (len < 0 || len >= (int)sizeof id || spmv_config_columns(c, &cols, &err))
        return PyErr_Format(PyExc_ValueError, "configuration of kernel %d: %s", (int)c->kernel,
                            err.msg[0] ? err.msg : "its id does not fit");
    PyObject *p = PyTuple_New(SPMV_NPCOLS);
    for (int k = 0; p != NULL && k < SPMV_NPCOLS; k++) {
        PyObject *v = PyFloat_FromDouble(cols.p[k]);
        if (v == NULL)
            Py_CLEAR(p);
        else
            PyTuple_SET_ITEM(p, k, v);
    }
    if (p == NULL) return NULL;
    return Py_BuildValue("(i(iiii)isN)", (int)c->kernel, (int)c->param[0], (int)c->param[1],
                         (int)c->param[2], (int)c->param[3], (int)c->given, id, p);
}

/* spmv_config_parse of a str into *c; a ValueError with the core's message otherwise (an unknown
 * kernel's message lists the registry's kernels). */
static int parse_id(PyObject *id, spmv_config *c) {
    Py_ssize_t len;
    spmv_err err = {0};
    if (!PyUnicode_Check(id)) {
        PyErr_Format(PyExc_TypeError,
                     "A configuration must be a Config or an id string. Got %s instead.",
                     Py_TYPE(id)->tp_name);
        return 0;
    }
    const char *s = PyUnicode_AsUTF8AndSize(id, &len);
    if (s == NULL) return 0;
    if ((Py_ssize_t)strlen(s) != len) {
        PyErr_Format(PyExc_ValueError, "Configuration %R: an id holds no NUL character.", id);
        return 0;
    }
    if (spmv_config_parse(s, c, &err) == SPMV_OK) return 1;
    if (err.where != 0) {
        PyErr_SetString(PyExc_ValueError, err.msg);
        return 0;
    }
    PyObject *known = PyList_New(0), *sep = NULL, *joined = NULL;
    for (int i = 0; known != NULL && i < spmv_kernel_count(); i++) {
        PyObject *k = PyUnicode_FromString(spmv_kernel_get(i)->id);
        if (k == NULL || PyList_Append(known, k) < 0) Py_CLEAR(known);
        Py_XDECREF(k);
    }
    if (known != NULL && PyList_Sort(known) == 0 && (sep = PyUnicode_FromString(", ")) != NULL)
        joined = PyUnicode_Join(sep, known);
    if (joined != NULL)
        PyErr_Format(PyExc_ValueError,
                     "%s Known kernels: %U; list every id with pyspmv.configs('cpu') or "
                     "pyspmv.configs('cuda').",
                     err.msg, joined);
    Py_XDECREF(known);
    Py_XDECREF(sep);
    Py_XDECREF(joined);
    return 0;
}

/* config_parse(id) -> config tuple (config_tuple) */
PyObject *config_parse(PyObject *m, PyObject *id) {
    spmv_config c;
    (void)m;
    return parse_id(id, &c) ? config_tuple(&c) : NULL;
}

/* config_expand(device) -> list of config tuples: every configuration of device (0 cpu, 1 cuda) in
 * registry order (spmv_config_expand). */
PyObject *config_expand(PyObject *m, PyObject *args) {
    int device;
    (void)m;
    if (!PyArg_ParseTuple(args, "i", &device)) return NULL;
    int32_t n = spmv_config_expand(device, NULL);
    spmv_config *c = PyMem_Calloc(n > 0 ? (size_t)n : 1, sizeof *c);
    if (c == NULL) return PyErr_NoMemory();
    spmv_config_expand(device, c);
    PyObject *list = PyList_New(n);
    for (int32_t j = 0; list != NULL && j < n; j++) {
        PyObject *t = config_tuple(&c[j]);
        if (t == NULL)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, j, t);
    }
    PyMem_Free(c);
    return list;
}

/* The UTF-8 text of each str of seq (a sequence from PySequence_Fast) into a new array (PyMem_Free
 * it), valid while seq lives; NULL with an exception set where an item is no str or holds a NUL. */
const char **utf8_ids(PyObject *seq, const char *what) {
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    const char **ids = PyMem_Calloc(n > 0 ? (size_t)n : 1, sizeof *ids);
    if (ids == NULL) return (const char **)PyErr_NoMemory();
    for (Py_ssize_t j = 0; j < n; j++) {
        PyObject *id = PySequence_Fast_GET_ITEM(seq, j);
        Py_ssize_t len;
        ids[j] = PyUnicode_Check(id) ? PyUnicode_AsUTF8AndSize(id, &len) : NULL;
        if (ids[j] == NULL || (Py_ssize_t)strlen(ids[j]) != len) {
            if (!PyErr_Occurred())
                PyErr_Format(PyUnicode_Check(id) ? PyExc_ValueError : PyExc_TypeError,
                             "%s: configuration %zd must be an id string without NUL characters. "
                             "Got %R instead.",
                             what, j, id);
            PyMem_Free(ids);
            return NULL;
        }
    }
    return ids;
}
