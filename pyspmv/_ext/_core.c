// pyspmv/_ext/_core.c: thin CPython glue over csrc/ (NumPy arrays in and out, statuses to
// exceptions) — the _core module: method table, exceptions, constants, module state; it registers
// the State type
// SPDX-License-Identifier: BSD-3-Clause
//
// Private: the public, keyword-friendly API is Python (pyspmv/*.py), which casts visibly and names
// arguments.  Converters here check and never cast.  A converted matrix crosses as a State
// (pyspmv._core.State, _glue.h's glue_fmtstate): format code, nrows, ncols, nnz, params (p0, p1),
// scalars (s0 .. s3), index_arrays and value_arrays, all read-only.  convert() and recast() make
// States, and State(...) makes one of arrays, copied where they could change and checked; so a State
// is its own seal, and the products (to_csr, mv, bench, _cuda's plans) take it without a check.
//
// The functions live one file per concern (glue_core.h declares them): glue_inputs.c (CSR check,
// finite values, Matrix Market), glue_registry.c (features, names, kernels, configurations),
// glue_fmtstate.c (the State type), glue_formats.c (convert, sizes, a State's products),
// glue_models.c (model specs) and glue_rank.c (design rows, ranking).
#include "glue_core.h"

#ifdef _OPENMP
#define HAVE_OPENMP 1
#else
#define HAVE_OPENMP 0
#endif

#include "spmv_config.h"

static PyMethodDef core_methods[] = {
    {"csr_check", csr_check, METH_VARARGS, "csr_check(nrows, ncols, indptr, indices)"},
    {"csr_copy", csr_copy, METH_VARARGS,
     "csr_copy(nrows, ncols, indptr, indices, data, out_typenum) -> (indptr, indices, data)"},
    {"finite_check", finite_check, METH_VARARGS,
     "finite_check(values) -> None, or the position of the first non-finite entry"},
    {"dlpack_info", dlpack_info, METH_VARARGS,
     "dlpack_info(capsule) -> (address, device_type, device_id, code, bits, lanes, shape, "
     "strides)"},
    {"features", features, METH_VARARGS,
     "features(nrows, ncols, indptr, indices, sm_count, threads_per_sm, warp_size) -> float64[]"},
    {"feature_names", feature_names, METH_NOARGS, "feature_names() -> tuple of str"},
    {"format_names", format_names, METH_NOARGS, "format_names() -> tuple of str"},
    {"gpu_props_h100", gpu_props_h100, METH_NOARGS,
     "gpu_props_h100() -> {'sm_count', 'threads_per_sm', 'warp_size'} of the H100 (features' "
     "default)"},
    {"omp_threads", omp_threads, METH_NOARGS,
     "omp_threads() -> threads the CPU kernels' OpenMP regions start (1 without OpenMP)"},
    {"model_fields", model_fields, METH_VARARGS,
     "model_fields(kind) -> (name, field dicts) of a model kind (-1: the head), None outside"},
    {"design_columns", design_columns, METH_NOARGS,
     "design_columns() -> tuple of str: the SPMV_NCOLS columns of a design row"},
    {"format_facts", format_facts, METH_NOARGS,
     "format_facts() -> per format code {'unread': bits of index arrays no kernel reads, "
     "'finite_x': whether its kernels multiply padding zeros by x}"},
    {"config_sizes", config_sizes, METH_VARARGS,
     "config_sizes(ids, value_bytes, max_fill, nrows, ncols, indptr, indices) -> "
     "(bytes_moved, padding_ratio, notes)"},
    {"kernels", kernels, METH_NOARGS, "kernels() -> list of registry entries (dict)"},
    {"config_parse", config_parse, METH_O,
     "config_parse(id) -> (kernel, params, given, canonical id, p columns)"},
    {"config_expand", config_expand, METH_VARARGS,
     "config_expand(device) -> list of config_parse's tuples, in registry order"},
    {"mm_read", mm_read, METH_VARARGS,
     "mm_read(body, first_line, format, field, nrows, ncols, nentries) -> (row, col, val)"},
    {"convert", convert, METH_VARARGS,
     "convert(format, p0, p1, max_fill, nrows, ncols, indptr, indices, values) -> State"},
    {"fmt_size", fmt_size, METH_VARARGS,
     "fmt_size(format, p0, p1, max_fill, nrows, ncols, indptr, indices) -> (scalars, nidx, nval)"},
    {"to_csr", to_csr, METH_O, "to_csr(state) -> (indptr, indices, values)"},
    {"mv", mv, METH_VARARGS, "mv(state, kernel, x, y): y = A @ x"},
    {"mv_scaled", mv_scaled, METH_VARARGS,
     "mv_scaled(state, kernel, alpha, x, beta, y, work): y = alpha A @ x + beta y"},
    {"bench", bench, METH_VARARGS,
     "bench(state, kernel, x, y, warmup, repeats, budget_s) -> (median, q25, q75, min, runs)"},
    {"recast", recast, METH_VARARGS,
     "recast(state, float64) -> the State with values of the other type, same index arrays"},
    {"model_new", model_new, METH_VARARGS,
     "model_new(spec) -> model capsule (checked, its cost within MODEL_MAX_STEPS)"},
    {"model_cost", model_cost, METH_VARARGS,
     "model_cost(model) -> (most steps per row, configurations one ranking evaluates)"},
    {"model_predict", model_predict, METH_VARARGS,
     "model_predict(model, rows, stride, group) -> (ms, raw)"},
    {"core_rows", core_rows, METH_VARARGS,
     "core_rows(model, nrows, ncols, indptr, indices, value_bytes[, sample_rows[, sample_nnz[, "
     "coarse]]]) -> rows (flat); sample_rows > 0: estimated (spmv_design_rows_estimate); coarse: "
     "from the sampled rows alone (spmv_design_rows_sampled)"},
    {"sample_plan", sample_plan, METH_VARARGS,
     "sample_plan(coarse, nrows, sample_rows, sample_nnz) -> start rows of the blocks a sample "
     "reads (spmv_sample_plan); empty: the exact path"},
    {"rank", rank, METH_VARARGS,
     "rank(model, nrows, ncols, indptr, indices, value_bytes, add_ms, sample=0, ids=None, "
     "keep=None, sample_nnz=0, first=False, coarse=None) "
     "-> (order, ms), or with ids the list of (id, ms) pairs fastest first"},
    {NULL, NULL, 0, NULL},
};

static int core_exec(PyObject *m) {
    glue_state *st = get_state(m);
    import_array1(-1);
    st->DeviceUnavailableError = PyErr_NewExceptionWithDoc(
        "pyspmv.DeviceUnavailableError",
        "Raised when a GPU configuration is asked for and no usable GPU is there; says why.",
        PyExc_RuntimeError, NULL);
    st->NotApplicableError =
        PyErr_NewExceptionWithDoc("pyspmv.NotApplicableError",
                                  "Raised when a format or configuration cannot serve a matrix "
                                  "(padding past its limit, ...).",
                                  PyExc_ValueError, NULL);
    if (st->DeviceUnavailableError == NULL || st->NotApplicableError == NULL) return -1;
    st->StateType = (PyTypeObject *)PyType_FromModuleAndSpec(m, &state_spec, NULL);
    if (st->StateType == NULL || PyModule_AddObjectRef(m, "State", (PyObject *)st->StateType) < 0)
        return -1;
    /* _cuda's way to the type (_glue.h): a borrowed pointer, the module state holding the type. */
    PyObject *cap = PyCapsule_New(st->StateType, STATE_CAPSULE, NULL);
    int added = cap != NULL ? PyModule_AddObjectRef(m, "_State_type", cap) : -1;
    Py_XDECREF(cap);
    if (added < 0) return -1;
    if (PyModule_AddObjectRef(m, "DeviceUnavailableError", st->DeviceUnavailableError) < 0 ||
        PyModule_AddObjectRef(m, "NotApplicableError", st->NotApplicableError) < 0 ||
        PyModule_AddIntConstant(m, "HAVE_NVCC", SPMV_HAVE_NVCC) < 0 ||
        PyModule_AddStringConstant(m, "GPU_ARCH", SPMV_GPU_ARCH) < 0 ||
        PyModule_AddIntConstant(m, "HAVE_OPENMP", HAVE_OPENMP) < 0 ||
        PyModule_AddIntConstant(m, "NFEATURES", SPMV_NFEATURES) < 0 ||
        PyModule_AddIntConstant(m, "NCOLS", SPMV_NCOLS) < 0 ||
        PyModule_AddIntConstant(m, "SAMPLE_BLOCK", SPMV_SAMPLE_BLOCK) < 0 ||
        PyModule_AddIntConstant(m, "NOGIL_MIN_WORK", NOGIL_MIN_WORK) < 0 ||
        PyModule_AddIntConstant(m, "MODEL_MAX_STEPS", (long)SPMV_MODEL_MAX_STEPS) < 0 ||
        PyModule_AddIntConstant(m, "MAX_FILL_DEFAULT", (long)SPMV_DEFAULT_MAX_FILL) < 0 ||
        PyModule_AddIntConstant(m, "MM_COORDINATE", SPMV_MM_COORDINATE) < 0 ||
        PyModule_AddIntConstant(m, "MM_ARRAY", SPMV_MM_ARRAY) < 0 ||
        PyModule_AddIntConstant(m, "MM_REAL", SPMV_MM_REAL) < 0 ||
        PyModule_AddIntConstant(m, "MM_INTEGER", SPMV_MM_INTEGER) < 0 ||
        PyModule_AddIntConstant(m, "MM_PATTERN", SPMV_MM_PATTERN) < 0)
        return -1;
    return 0;
}

static int core_traverse(PyObject *m, visitproc visit, void *arg) {
    glue_state *st = get_state(m);
    Py_VISIT(st->DeviceUnavailableError);
    Py_VISIT(st->NotApplicableError);
    Py_VISIT(st->StateType);
    return 0;
}

static int core_clear(PyObject *m) {
    glue_state *st = get_state(m);
    Py_CLEAR(st->DeviceUnavailableError);
    Py_CLEAR(st->NotApplicableError);
    Py_CLEAR(st->StateType);
    return 0;
}

static void core_free(void *m) { core_clear((PyObject *)m); }

static PyModuleDef_Slot core_slots[] = {
    {Py_mod_exec, core_exec},
#if PY_VERSION_HEX >= 0x030d00f0
    {Py_mod_gil, Py_MOD_GIL_NOT_USED},
#endif
    {0, NULL},
};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT, "_core",      "pyspmv's C core (private; use the pyspmv package).",
    sizeof(glue_state),    core_methods, core_slots,
    core_traverse,         core_clear,   core_free,
};

PyMODINIT_FUNC PyInit__core(void) { return PyModuleDef_Init(&core_module); }
