// csrc/mem.c: the core's allocation wrappers (overflow-checked, failure-injectable in test builds)
// SPDX-License-Identifier: BSD-3-Clause
#include "spmv_internal.h"

#include <stdlib.h>

#ifdef SPMV_FAIL_INJECT
/* Test builds only (a separate static library): production code keeps no mutable global state. */
static _Thread_local int64_t fail_at, count;
void spmv_fail_after(int64_t k) {
    fail_at = k;
    count = 0;
}
int64_t spmv_alloc_count(void) { return count; }
#define INJECTED() (++count, fail_at > 0 && count == fail_at)
#else
#define INJECTED() 0
#endif

static void *alloc(int64_t n, int64_t size, int zero, spmv_err *err) {
    void *p = NULL;
    if (n < 0 || size <= 0 || (n > 0 && n > INT64_MAX / size) || (uint64_t)(n * size) > SIZE_MAX) {
        spmv_fail(err, SPMV_ENOMEM, -1, n, -1,
                  "allocation of %lld elements of %lld bytes overflows", (long long)n,
                  (long long)size);
        return NULL;
    }
    if (!INJECTED()) {
        size_t bytes = (size_t)(n > 0 ? n * size : 1); /* malloc(0) may return NULL */
        p = zero ? calloc(bytes, 1) : malloc(bytes);
    }
    if (p == NULL)
        spmv_fail(err, SPMV_ENOMEM, -1, n * size, -1, "could not allocate %lld bytes",
                  (long long)(n * size));
    return p;
}

void *spmv_malloc(int64_t n, int64_t size, spmv_err *err) { return alloc(n, size, 0, err); }
void *spmv_calloc(int64_t n, int64_t size, spmv_err *err) { return alloc(n, size, 1, err); }
void spmv_free(void *p) { free(p); }
