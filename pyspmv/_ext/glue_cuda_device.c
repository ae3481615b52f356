// pyspmv/_ext/glue_cuda_device.c: _cuda's device functions — count, facts and versions, copy bandwidth
// SPDX-License-Identifier: BSD-3-Clause
#define NO_IMPORT_ARRAY
#include "glue_cuda.h"

PyObject *device_count(PyObject *m, PyObject *noargs) {
    int count = 0;
    spmv_err err = {0};
    int rc = spmv_cuda_device_count(&count, &err);
    if (rc) return raise_spmv_error(m, rc, &err, "");
    return PyLong_FromLong(count);
}

PyObject *info(PyObject *m, PyObject *noargs) {
    spmv_cuda_info d;
    spmv_err err = {0};
    int rc = spmv_cuda_get_info(&d, &err);
    if (rc) return raise_spmv_error(m, rc, &err, "");
    return Py_BuildValue(
        "{s:s,s:(ii),s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:L,s:L,s:i,s:i,s:i,s:L,s:L}", "name", d.name,
        "compute_capability", d.cc_major, d.cc_minor, "sm_count", d.sm_count, "max_threads_per_sm",
        d.max_threads_per_sm, "max_threads_per_block", d.max_threads_per_block, "warp_size",
        d.warp_size, "clock_khz", d.clock_khz, "mem_clock_khz", d.mem_clock_khz, "mem_bus_bits",
        d.mem_bus_bits, "l2_bytes", (long long)d.l2_bytes, "global_mem_bytes",
        (long long)d.global_mem_bytes, "driver_version", d.driver_version, "runtime_version",
        d.runtime_version, "cusparse_version", d.cusparse_version, "l2_persist_max",
        (long long)d.l2_persist_max, "l2_persist_limit", (long long)d.l2_persist_limit);
}

PyObject *copy_bandwidth(PyObject *m, PyObject *args) {
    long long bytes;
    int repeats, rc;
    double gbps = 0;
    spmv_err err = {0};
    if (!PyArg_ParseTuple(args, "Li", &bytes, &repeats)) return NULL;
    Py_BEGIN_ALLOW_THREADS rc = spmv_cuda_copy_bandwidth(bytes, repeats, &gbps, &err);
    Py_END_ALLOW_THREADS if (rc) return raise_spmv_error(m, rc, &err, "copy bandwidth");
    return PyFloat_FromDouble(gbps);
}

/* The contiguous NumPy array pin and unpin take (any dtype: a matrix's indices and values alike). */
static int contiguous_array(PyObject *o, void *out) {
    if (!PyArray_Check(o) || !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)o)) {
        PyErr_Format(PyExc_TypeError, "expected a C-contiguous NumPy array to pin, got %.80s",
                     Py_TYPE(o)->tp_name);
        return 0;
    }
    *(PyArrayObject **)out = (PyArrayObject *)o;
    return 1;
}

/* pin(array): page-lock a contiguous host array for fast copies (spmv_cuda_host_pin); unpin(array)
 * undoes it.  The caller (gpu.pinned) keeps the array alive in between. */
PyObject *pin(PyObject *m, PyObject *args) {
    PyArrayObject *a;
    int rc;
    spmv_err err = {0};
    if (!PyArg_ParseTuple(args, "O&", contiguous_array, &a)) return NULL;
    Py_BEGIN_ALLOW_THREADS rc =
        spmv_cuda_host_pin(PyArray_DATA(a), (int64_t)PyArray_NBYTES(a), &err);
    Py_END_ALLOW_THREADS if (rc) return raise_spmv_error(m, rc, &err, "pinning host memory");
    Py_RETURN_NONE;
}

PyObject *unpin(PyObject *m, PyObject *args) {
    PyArrayObject *a;
    spmv_err err = {0};
    if (!PyArg_ParseTuple(args, "O&", contiguous_array, &a)) return NULL;
    int rc = spmv_cuda_host_unpin(PyArray_DATA(a), &err);
    if (rc) return raise_spmv_error(m, rc, &err, "unpinning host memory");
    Py_RETURN_NONE;
}
