// pyspmv/_ext/_cuda.c: thin CPython glue over kernels/spmv_cuda.h (device, plans, checked and timed
// runs) — the _cuda module: method table, module state; it registers the Matrix, Plan, Krylov types
// SPDX-License-Identifier: BSD-3-Clause
//
// A separate module from _core because it links the CUDA runtime and cuSPARSE: where they are
// missing, importing it fails and pyspmv says why instead of failing to import at all.  Private:
// pyspmv/devices/gpu.py is the Python face.
//
// The module's files: glue_cuda_device.c (device count, facts, copy bandwidth), glue_cuda_matrix.c
// (the Matrix type, wrap_csr), glue_cuda_plan.c (the Plan type) and glue_cuda_krylov.c (the
// Krylov type); they share glue_cuda.h.
#include "glue_cuda.h"

static PyMethodDef cuda_methods[] = {
    {"device_count", device_count, METH_NOARGS, "device_count() -> int, or DeviceUnavailableError"},
    {"info", info, METH_NOARGS, "info() -> dict of device and software versions"},
    {"wrap_csr", wrap_csr, METH_VARARGS,
     "wrap_csr(nrows, ncols, nnz, ptr, col, val, elem_size, keep) -> Matrix read in place"},
    {"upload_csr", upload_csr, METH_VARARGS,
     "upload_csr(nrows, ncols, indptr, indices, values) -> Matrix of this host CSR, uploaded as it "
     "is"},
    {"pin", pin, METH_VARARGS, "pin(array): page-lock a contiguous host array (cudaHostRegister)"},
    {"unpin", unpin, METH_VARARGS, "unpin(array): undo pin(array)"},
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
