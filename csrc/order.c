// csrc/order.c: locality orders — reverse Cuthill-McKee of a square matrix's pattern, and checks
// SPDX-License-Identifier: BSD-3-Clause
//
// A GPU product gathers x[col] for every entry; rows that run together reading nearby columns hit
// the same cache lines.  Reverse Cuthill-McKee numbers the graph of A + A^T breadth first, from a
// vertex of least degree in each component, neighbours by increasing degree, and reverses the
// result: rows close in the new order have columns close in it too (a small bandwidth).  The order
// is a conversion's (CSR's order=1, csrc/csr.c); its result is the same on every machine (ties
// broken by vertex number, no threads).
#include "spmv_internal.h"

#include <stdlib.h>
#include <string.h>

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The graph of A + A^T without its diagonal, each neighbour once: adj[ptr[i], ptr[i+1]) sorted.
 * ptr[n + 1], cur[n] (a cursor per row) and adj[2 nnz] are the caller's. */
static void sym_graph(const spmv_csr *A, int64_t *ptr, int64_t *cur, int32_t *adj) {
    int32_t n = A->nrows;
    memset(ptr, 0, sizeof(int64_t) * ((size_t)n + 1));
    for (int32_t i = 0; i < n; i++)
        for (int32_t p = A->indptr[i]; p < A->indptr[i + 1]; p++)
            if (A->indices[p] != i) ptr[i + 1]++, ptr[A->indices[p] + 1]++;
    for (int32_t i = 0; i < n; i++) ptr[i + 1] += ptr[i];
    memcpy(cur, ptr, sizeof(int64_t) * (size_t)n);
    for (int32_t i = 0; i < n; i++)
        for (int32_t p = A->indptr[i]; p < A->indptr[i + 1]; p++) {
            int32_t j = A->indices[p];
            if (j != i) adj[cur[i]++] = j, adj[cur[j]++] = i;
        }
    /* each row sorted and its repeats dropped, packed to the front: ptr[i] is rewritten once row
     * i - 1's end (the old ptr[i]) has been read */
    int64_t kept = 0, start = 0;
    for (int32_t i = 0; i < n; i++) {
        int64_t end = ptr[i + 1], k0 = kept;
        qsort(adj + start, (size_t)(end - start), sizeof(int32_t), cmp_i32);
        for (int64_t q = start; q < end; q++)
            if (q == start || adj[q] != adj[q - 1]) adj[kept++] = adj[q];
        ptr[i] = k0;
        start = end;
    }
    ptr[n] = kept;
}

int spmv_order_rcm(const spmv_csr *A, int32_t *perm, spmv_err *err) {
    if (A == NULL || perm == NULL)
        return spmv_fail(err, SPMV_EINVAL, -1, -1, -1, "a matrix and perm, not NULL");
    int32_t n = A->nrows;
    if (A->ncols != n)
        return spmv_fail(err, SPMV_ENOTAPPLICABLE, -1, A->ncols, n,
                         "a locality order renumbers rows and columns alike: the matrix must be "
                         "square, and it is %d x %d",
                         (int)n, (int)A->ncols);
    int64_t nnz = n > 0 ? A->indptr[n] : 0;
    int64_t *ptr = (int64_t *)spmv_malloc((int64_t)n + 1, sizeof(int64_t), err);
    int32_t *adj = (int32_t *)spmv_malloc(2 * nnz + 1, sizeof(int32_t), err);
    int32_t *deg_order = (int32_t *)spmv_malloc((int64_t)n + 1, sizeof(int32_t), err);
    int64_t *keys = (int64_t *)spmv_malloc((int64_t)n + 1, sizeof(int64_t), err);
    int64_t *cur = (int64_t *)spmv_malloc((int64_t)n + 1, sizeof(int64_t), err);
    uint8_t *seen = (uint8_t *)spmv_calloc((int64_t)n + 1, 1, err);
    int rc = ptr && adj && deg_order && keys && cur && seen ? SPMV_OK : SPMV_ENOMEM;
    if (rc == SPMV_OK) {
        sym_graph(A, ptr, cur, adj);
        /* vertices by increasing degree, then number: where each component's search starts */
        for (int32_t i = 0; i < n; i++) keys[i] = (ptr[i + 1] - ptr[i]) << 32 | (int64_t)i;
        qsort(keys, (size_t)n, sizeof(int64_t), cmp_i64);
        for (int32_t i = 0; i < n; i++) deg_order[i] = (int32_t)(keys[i] & 0xffffffff);
        int32_t tail = 0; /* perm holds the Cuthill-McKee order as it grows: the queue */
        for (int32_t s = 0; s < n; s++) {
            int32_t root = deg_order[s];
            if (seen[root]) continue;
            seen[root] = 1;
            perm[tail++] = root;
            for (int32_t head = tail - 1; head < tail; head++) {
                int32_t v = perm[head], m = 0;
                for (int64_t q = ptr[v]; q < ptr[v + 1]; q++)
                    if (!seen[adj[q]]) {
                        seen[adj[q]] = 1;
                        keys[m++] = (ptr[adj[q] + 1] - ptr[adj[q]]) << 32 | (int64_t)adj[q];
                    }
                qsort(keys, (size_t)m, sizeof(int64_t), cmp_i64);
                for (int32_t k = 0; k < m; k++) perm[tail++] = (int32_t)(keys[k] & 0xffffffff);
            }
        }
        for (int32_t i = 0; i < n / 2; i++) { /* reversed */
            int32_t t = perm[i];
            perm[i] = perm[n - 1 - i];
            perm[n - 1 - i] = t;
        }
    }
    spmv_free(ptr);
    spmv_free(adj);
    spmv_free(deg_order);
    spmv_free(keys);
    spmv_free(cur);
    spmv_free(seen);
    return rc;
}
