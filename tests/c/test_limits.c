// tests/c/test_limits.c: matrices at int32's limit (nrows = INT32_MAX) through the features and checks
// SPDX-License-Identifier: BSD-3-Clause
//
// The Matrix Market reproducer of issue 11: 2147483647 rows, one entry.  Its indptr takes 8 GiB; an
// anonymous mapping that is only read costs no memory (untouched pages read as the shared zero
// page), so the test writes only the last page: rows 0 .. n-2 empty, the entry in row n-1.
// Skipped (exit 77) where the mapping is refused.
#define _DEFAULT_SOURCE
#include "mu.h"
#include "spmv.h"

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

static int32_t *big_indptr(int32_t n, size_t *bytes) {
    *bytes = ((size_t)n + 1) * sizeof(int32_t);
    void *p = mmap(NULL, *bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static int test_features_at_int32_max(void) {
    int32_t n = INT32_MAX, ix[1] = {0};
    size_t bytes;
    int32_t *ip = big_indptr(n, &bytes);
    if (ip == NULL) {
        printf("skip: cannot map %zu bytes\n", bytes);
        return 77;
    }
    ip[n] = 1; /* the one entry, in the last row, column 0 */
    spmv_csr A = {n, 1, ip, ix};
    spmv_gpu_props dev;
    spmv_gpu_props_h100(&dev);
    double out[SPMV_NFEATURES];
    spmv_err err = {0};
    int rc = spmv_features_compute(&A, &dev, out, &err);
    if (rc == SPMV_ENOMEM) { /* the 2 GiB of diagonal marks may be refused: then a clean error */
        munmap(ip, bytes);
        printf("skip: %s\n", err.msg);
        return 77;
    }
    mu_check(rc == SPMV_OK);
    mu_check(out[0] == INT32_MAX && out[2] == 1 && out[6] == 1 /* nnz_max */);
    /* one pass only (each takes seconds at 2^31 rows under the sanitizers): the loop bounds are
     * what overflowed; the validation itself is tested at small sizes in test_hostile.c */
    munmap(ip, bytes);
    return 0;
}

int main(void) {
    int r = test_features_at_int32_max();
    printf("%s test_features_at_int32_max\n", r == 0 ? "ok  " : r == 77 ? "skip" : "FAIL");
    return r;
}
