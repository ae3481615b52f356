// csrc/dia.c: DIA — size query, conversion from CSR, back to CSR, CPU kernel
// SPDX-License-Identifier: BSD-3-Clause
//
// Layout (spmv_fmt with format SPMV_FMT_DIA): scalar[0] = ndiag, the number of distinct offsets
// col - row present in A.  idx[0] = offsets[ndiag], ascending.  data and presence bits are laid out
// diagonal by diagonal, indexed by row:
//   val[0] = data[ndiag*nrows], data[d*nrows + i] = A[i, i + offsets[d]], or 0 where A has no entry
//            (or where i + offsets[d] falls outside [0, ncols));
//   idx[1] = presence bits, spmv_bitwords(ndiag*nrows) words (spmv_bit_set/get): bit d*nrows + i is
//            set iff A stores an entry at (i, i + offsets[d]) -- explicit zeros included, which a
//            zero in data alone could not tell from padding.
// No parameters.  Refused (SPMV_ENOTAPPLICABLE) when ndiag*nrows passes max_fill * max(nnz, nrows).
// Kernel variant 0: y[i] = sum over d with 0 <= i + offsets[d] < ncols of data[d*nrows + i] *
// x[i + offsets[d]], by blocks of rows (one thread each) and, within a block, diagonal by diagonal
// so that the inner loop runs over contiguous data and x.  The padding zeros are multiplied by x
// too, so a non-finite x would turn them into NaN; the Python layer refuses non-finite x for DIA.
#include "spmv_internal.h"

#include <string.h>

/* Rows per kernel block: a block's y stays in L1 while every diagonal passes over it.
 * TODO: untuned. */
#define DIA_BLOCK 1024

/* DIA's products start their threads later than the others' (SPMV_OMP_MIN_WORK): its slots are
 * contiguous runs of a diagonal that vectorize, so each costs a fraction of a CSR entry; with the
 * threshold at 4000 slots, products of 2,000-8,000-entry matrices ran 1.3-2x slower on 16 threads
 * than on one (16-core Xeon, studies/2026-11-23-omp-threshold/omp_threshold.md). */
#define DIA_OMP_MIN_WORK (5 * SPMV_OMP_MIN_WORK)

/* Mark the offsets A uses in mark[nrows+ncols-1] (offset o at o + nrows - 1); returns how many. */
static int64_t dia_mark(const spmv_csr *A, uint8_t *mark) {
    int64_t ndiag = 0;
    for (int32_t i = 0; i < A->nrows; i++)
        for (int32_t p = A->indptr[i]; p < A->indptr[i + 1]; p++) {
            int64_t o = (int64_t)A->indices[p] - i + A->nrows - 1;
            if (!mark[o]) mark[o] = 1, ndiag++;
        }
    return ndiag;
}

/* F's sizes for ndiag stored diagonals, refused past the fill guard: the size query's and the
 * summary's common end. */
static int dia_sizes(int64_t ndiag, spmv_fmt *F, spmv_err *err) {
    int64_t slots = ndiag * F->nrows;
    char what[48];
    spmv_what(err, what, sizeof what, "DIA with %lld diagonals", (long long)ndiag);
    int rc = spmv_fill_guard(F, slots, what, err);
    if (rc) return rc;
    F->scalar[0] = ndiag;
    F->nidx[0] = ndiag;
    F->nidx[1] = spmv_bitwords(slots);
    F->nval[0] = slots;
    return SPMV_OK;
}

static int dia_size(const spmv_csr *A, spmv_fmt *F, spmv_err *err) {
    int64_t span = (int64_t)A->nrows + A->ncols - 1;
    uint8_t *mark = (uint8_t *)spmv_calloc(span, 1, err);
    if (mark == NULL) return SPMV_ENOMEM;
    int64_t ndiag = dia_mark(A, mark);
    spmv_free(mark);
    return dia_sizes(ndiag, F, err);
}

/* F's offsets[] from A, and *slot = workspace[nrows+ncols-1] mapping offset + nrows - 1 to its
 * diagonal number, for the fill to place entries in O(1) each.  The caller frees *slot. */
static int dia_offsets(const spmv_csr *A, spmv_fmt *F, int32_t **slot, spmv_err *err) {
    int64_t span = (int64_t)A->nrows + A->ncols - 1;
    int32_t *s = (int32_t *)spmv_calloc(span, sizeof(int32_t), err);
    if (s == NULL) return SPMV_ENOMEM;
    for (int32_t i = 0; i < A->nrows; i++)
        for (int32_t p = A->indptr[i]; p < A->indptr[i + 1]; p++)
            s[(int64_t)A->indices[p] - i + A->nrows - 1] = 1;
    int32_t d = 0;
    for (int64_t o = 0; o < span; o++)
        if (s[o]) {
            F->idx[0][d] = (int32_t)(o - (A->nrows - 1));
            s[o] = d++;
        }
    *slot = s;
    return SPMV_OK;
}

#define SPMV_REAL float
#define SPMV_NAME(x) x##_f32
#include "dia_impl.h"
#define SPMV_REAL double
#define SPMV_NAME(x) x##_f64
#include "dia_impl.h"

static int dia_check(const spmv_fmt *F, spmv_err *err) {
    static const char *const what[] = {"offsets", "presence bits", NULL, NULL, "data", NULL};
    int32_t n = F->nrows, ncols = F->ncols;
    int rc = spmv_fmt_scalar(F, 0, 0, (int64_t)n + ncols - 1, "diagonals", err);
    if (rc) return rc;
    int64_t nd = F->scalar[0], slots = nd * n, count = 0; /* < 2^32 * 2^31: no overflow */
    int64_t nidx[SPMV_MAXIDX] = {nd, spmv_bitwords(slots)}, nval[SPMV_MAXVAL] = {slots};
    rc = spmv_fmt_lengths(F, nidx, nval, what, err);
    const int32_t *off = F->idx[0], *bits = F->idx[1];
    for (int64_t d = 0; rc == SPMV_OK && d < nd; d++)
        if (off[d] < -(int64_t)(n - 1) || off[d] > ncols - 1 || (d > 0 && off[d] <= off[d - 1]))
            return spmv_fail(err, SPMV_EINDEX, d, off[d], ncols,
                             "dia: offsets[%lld] = %d; offsets must increase strictly within "
                             "[-(nrows-1), ncols-1] = [%d, %d]",
                             (long long)d, off[d], -(n - 1), ncols - 1);
    for (int64_t d = 0; rc == SPMV_OK && d < nd; d++)
        for (int32_t i = 0; i < n; i++) {
            if (!spmv_bit_get(bits, d * n + i)) continue;
            if ((int64_t)i + off[d] < 0 || (int64_t)i + off[d] >= ncols)
                return spmv_fail(err, SPMV_EINDEX, i, (int64_t)i + off[d], ncols,
                                 "dia: a presence bit of diagonal %lld marks row %d, column %lld, "
                                 "outside [0, ncols = %d)",
                                 (long long)d, i, (long long)i + off[d], ncols);
            count++;
        }
    return rc ? rc : spmv_fmt_count(F, count, err);
}

/* The pass marks the offsets as dia_mark does. */
static int dia_size_summary(spmv_summary *S, spmv_fmt *F, spmv_err *err) {
    return dia_sizes(S->ndiag, F, err);
}

SPMV_API const spmv_format_ops spmv_dia_ops = {
    .size = dia_size,
    .fill_f32 = dia_fill_f32,
    .fill_f64 = dia_fill_f64,
    .to_csr_f32 = dia_to_csr_f32,
    .to_csr_f64 = dia_to_csr_f64,
    .mv_f32 = dia_mv_f32,
    .mv_f64 = dia_mv_f64,
    .check = dia_check,
    .size_summary = dia_size_summary,
    .unread = 1 << 1, /* presence bits (idx[1]) exist for exact round trips only */
    .finite_x = 1,    /* padding zeros inside the matrix are multiplied by x */
    .pattern = 1,     /* its size is the number of diagonals, which the pattern pass counts */
};
