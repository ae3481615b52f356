// benchmarks/pass_floor.c: what any exact pass over a CSR's indices costs at least (rank_cost.py's floor)
// SPDX-License-Identifier: BSD-3-Clause
//
//     pass_floor FILE REPEATS  ->  "read_us marks_us threads"
//
// FILE (written by rank_cost.py): int64 nrows, ncols, nnz, then int32 indptr[nrows + 1] and
// indices[nnz], a valid CSR.  Two loops on every OpenMP thread, rows split evenly, each the
// minimum over REPEATS runs:
// - read: every index read once (with indptr), summed -- the bytes an exact pass cannot avoid;
// - marks: besides, one byte per occupied diagonal in a per-thread array, then the arrays ORed and
//   counted -- the least work that gives one feature of the 33 (ndiag, DIA's size) exactly.
// The design rows' pass does this and more per entry (gaps, runs, segments, BSR tiles, bands).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int fail(const char *what) {
    fprintf(stderr, "pass_floor: %s\n", what);
    return 2;
}

int main(int argc, char **argv) {
    if (argc != 3) return fail("usage: pass_floor FILE REPEATS");
    int reps = atoi(argv[2]);
    FILE *f = fopen(argv[1], "rb");
    int64_t h[3];
    if (reps < 1 || reps > 100000) return fail("REPEATS must be in [1, 100000]");
    if (f == NULL || fread(h, sizeof h, 1, f) != 1) return fail("cannot read the header");
    if (h[0] < 1 || h[0] >= INT32_MAX || h[1] < 1 || h[1] >= INT32_MAX || h[2] < 0 ||
        h[2] >= INT32_MAX)
        return fail("nrows, ncols and nnz must be in [1, 2^31 - 1) (nnz from 0)");
    int32_t n = (int32_t)h[0], ncols = (int32_t)h[1];
    int64_t nnz = h[2], noff = (int64_t)n + ncols - 1;
    int32_t *ip = malloc(sizeof(int32_t) * (size_t)(n + 1));
    int32_t *ix = malloc(sizeof(int32_t) * (size_t)(nnz > 0 ? nnz : 1));
    if (ip == NULL || ix == NULL) return fail("out of memory");
    if (fread(ip, sizeof(int32_t), (size_t)n + 1, f) != (size_t)n + 1 ||
        fread(ix, sizeof(int32_t), (size_t)nnz, f) != (size_t)nnz)
        return fail("the file is shorter than its header says");
    fclose(f);
    if (ip[0] != 0 || ip[n] != nnz) return fail("indptr must run from 0 to nnz");
    for (int32_t i = 0; i < n; i++)
        if (ip[i + 1] < ip[i]) return fail("indptr decreases");
    for (int64_t k = 0; k < nnz; k++)
        if (ix[k] < 0 || ix[k] >= ncols) return fail("an index is out of [0, ncols)");
    int nt = 1;
#ifdef _OPENMP
    nt = omp_get_max_threads();
#endif
    uint8_t **mark = calloc((size_t)nt, sizeof *mark);
    if (mark == NULL) return fail("out of memory");
    for (int t = 0; t < nt; t++)
        if ((mark[t] = malloc((size_t)noff)) == NULL) return fail("out of memory");
    double best_read = 1e30, best_marks = 1e30;
    int64_t sink = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        int64_t s = 0;
#pragma omp parallel for schedule(static) reduction(+ : s)
        for (int32_t i = 0; i < n; i++)
            for (int32_t q = ip[i]; q < ip[i + 1]; q++) s += ix[q] - i;
        double t1 = now();
        int64_t nd = 0;
#pragma omp parallel
        {
            int t = 0;
#ifdef _OPENMP
            t = omp_get_thread_num();
#endif
            memset(mark[t], 0, (size_t)noff);
            uint8_t *m = mark[t] + (n - 1); /* m[col - row]: offsets -(n-1) .. ncols-1 */
#pragma omp for schedule(static)
            for (int32_t i = 0; i < n; i++)
                for (int32_t q = ip[i]; q < ip[i + 1]; q++) m[ix[q] - i] = 1;
        }
        for (int t = 1; t < nt; t++)
            for (int64_t k = 0; k < noff; k++) mark[0][k] |= mark[t][k];
        for (int64_t k = 0; k < noff; k++) nd += mark[0][k];
        double t2 = now();
        sink += s + nd;
        best_read = t1 - t0 < best_read ? t1 - t0 : best_read;
        best_marks = t2 - t1 < best_marks ? t2 - t1 : best_marks;
    }
    printf("%.3f %.3f %d %lld\n", 1e6 * best_read, 1e6 * best_marks, nt, (long long)(sink & 1));
    for (int t = 0; t < nt; t++) free(mark[t]);
    free(mark);
    free(ix);
    free(ip);
    return 0;
}
