// csrc/error.c: status codes to words, and the one way a callee reports a failure
// SPDX-License-Identifier: BSD-3-Clause
#include "spmv_internal.h"

#include <stdarg.h>
#include <stdio.h>

const char *spmv_strerror(int code) {
    switch (code) {
    case SPMV_OK:
        return "success";
    case SPMV_EINVAL:
        return "invalid argument";
    case SPMV_EINDEX:
        return "index out of range";
    case SPMV_EUNSORTED:
        return "indices unsorted or duplicated";
    case SPMV_EOVERFLOW:
        return "count past int32";
    case SPMV_ENOMEM:
        return "out of memory";
    case SPMV_ENOTAPPLICABLE:
        return "configuration not applicable to this matrix";
    case SPMV_ESCHEMA:
        return "model schema mismatch";
    case SPMV_ENODEVICE:
        return "no usable GPU";
    case SPMV_ECUDA:
        return "CUDA runtime error";
    case SPMV_ECUSPARSE:
        return "cuSPARSE error";
    case SPMV_EINTR:
        return "interrupted";
    default:
        return "unknown error";
    }
}

int spmv_fail(spmv_err *err, int code, int64_t where, int64_t value, int64_t limit, const char *fmt,
              ...) {
    if (err != NULL) {
        va_list ap;
        err->code = code;
        err->where = where;
        err->value = value;
        err->limit = limit;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

void spmv_what(const spmv_err *err, char *buf, size_t size, const char *fmt, ...) {
    buf[0] = '\0';
    if (err != NULL) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, size, fmt, ap);
        va_end(ap);
    }
}
