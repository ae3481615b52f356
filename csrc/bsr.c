// csrc/bsr.c: BSR — size query, conversion from CSR, back to CSR, CPU kernel
// SPDX-License-Identifier: BSD-3-Clause
//
// Layout (spmv_fmt with format SPMV_FMT_BSR): param[0] = b, the block size in [1, 32].  The matrix
// is cut into b x b blocks; only blocks holding at least one entry are stored.
//   scalar[0] = nbrows = ceil(nrows / b), scalar[1] = nbcols = ceil(ncols / b),
//   scalar[2] = nblocks;
//   idx[0] = block_ptr[nbrows+1]; idx[1] = block_col[nblocks], ascending within a block row;
//   idx[2] = presence bits, spmv_bitwords(nblocks*b*b) words: bit (blk*b + r)*b + c is set iff A
//            has an entry at (block row*b + r, block_col[blk]*b + c), so explicit zeros survive
//            the round trip and padding zeros do not appear;
//   val[0] = values[nblocks*b*b], row-major within each block, 0 where absent.
// Edge blocks reach past nrows and ncols; those rows and columns hold nothing.  Refused
// (SPMV_ENOTAPPLICABLE) when nblocks*b*b passes max_fill * max(nnz, nrows).  Kernel variant 0:
// block-row-parallel, dense b x b products skipping rows >= nrows and columns >= ncols, so x is
// never read past ncols.  Padding zeros are multiplied by x, so an inf or nan in x would leak into
// rows with no entry in that column: the Python layer refuses non-finite x for BSR.
#include "spmv_internal.h"

#define BSR_MAX_B 32

/* The next block column of block row `br` given one cursor per row into indices (cur[r] up to
 * indptr[row+1]): the smallest col/b among the rows' next entries, or -1 when every row is done.
 * Columns are sorted within rows, so repeated calls merge the rows and visit block columns in
 * ascending order without a sort or an nbcols-long workspace. */
static int32_t bsr_next(const spmv_csr *A, int32_t r0, int32_t rows, int32_t b,
                        const int32_t *cur) {
    int32_t bc = -1;
    for (int32_t r = 0; r < rows; r++)
        if (cur[r] < A->indptr[r0 + r + 1]) {
            int32_t c = A->indices[cur[r]] / b;
            if (bc < 0 || c < bc) bc = c;
        }
    return bc;
}

static int32_t bsr_rows(int32_t nrows, int32_t b, int64_t br) {
    int64_t left = nrows - br * b;
    return left < b ? (int32_t)left : b;
}

/* Blocks are counted in one pass over the entries with a mark per block column holding the last
 * block row that touched it (scipy's csr_count_blocks): one division per entry, where merging the
 * rows of each block row as the fill does costs O(b) per block and made the size query the bulk of
 * pyspmv.rank() (2.6 ms of 7 for every format of a 290k-entry matrix at b = 2). */
static int bsr_b(int32_t b, spmv_err *err) {
    if (b < 1 || b > BSR_MAX_B)
        return spmv_fail(err, SPMV_EINVAL, -1, b, BSR_MAX_B,
                         "The 'b' parameter of bsr must be a block size in [1, %d]. Got %d "
                         "instead.",
                         BSR_MAX_B, b);
    return SPMV_OK;
}

static int bsr_size_blocks(const spmv_csr *A, spmv_fmt *F, int64_t nblocks, spmv_err *err) {
    int32_t b = F->param[0];
    int64_t nbrows = ((int64_t)A->nrows + b - 1) / b, nbcols = ((int64_t)A->ncols + b - 1) / b;
    int64_t slots = nblocks * b * b;
    char what[48];
    spmv_what(err, what, sizeof what, "BSR with b=%d", (int)b);
    int rc = spmv_fill_guard(F, slots, what, err);
    if (rc) return rc;
    F->scalar[0] = nbrows;
    F->scalar[1] = nbcols;
    F->scalar[2] = nblocks;
    F->nidx[0] = nbrows + 1;
    F->nidx[1] = nblocks;
    F->nidx[2] = spmv_bitwords(slots);
    F->nval[0] = slots;
    return SPMV_OK;
}

/* Blocks are counted in one pass over the entries with a mark per block column holding the last
 * block row that touched it (scipy's csr_count_blocks): one division per entry, where merging the
 * rows of each block row as the fill does costs O(b) per block and made the size query the bulk of
 * pyspmv.rank() (2.6 ms of 7 for every format of a 290k-entry matrix at b = 2).  csrc/pass.c counts
 * the same way for the design rows. */
static int bsr_size(const spmv_csr *A, spmv_fmt *F, spmv_err *err) {
    int32_t b = F->param[0];
    int rc = bsr_b(b, err);
    if (rc) return rc;
    int64_t nbcols = ((int64_t)A->ncols + b - 1) / b, nblocks = 0;
    int32_t *mark = (int32_t *)spmv_malloc(nbcols, sizeof(int32_t), err);
    if (mark == NULL) return SPMV_ENOMEM;
    for (int64_t k = 0; k < nbcols; k++) mark[k] = -1;
    int shift = 0; /* b a power of two (every registered b): a shift instead of a division */
    while (shift < 5 && (1 << shift) < b) shift++;
    for (int32_t r = 0; r < A->nrows; r++) {
        int32_t br = r / b;
        const int32_t *c = A->indices + A->indptr[r], *end = A->indices + A->indptr[r + 1];
        if ((1 << shift) == b) {
            for (; c < end; c++)
                if (mark[*c >> shift] != br) mark[*c >> shift] = br, nblocks++;
        } else {
            for (; c < end; c++)
                if (mark[*c / b] != br) mark[*c / b] = br, nblocks++;
        }
    }
    spmv_free(mark);
    return bsr_size_blocks(A, F, nblocks, err);
}

/* The pass counts blocks for every block size asked for. */
static int bsr_need(spmv_summary *S, const spmv_fmt *F, spmv_err *err) {
    (void)err;
    spmv_pass *P = &S->pass;
    int32_t b = F->param[0];
    if (bsr_b(b, NULL)) return SPMV_OK; /* size_summary refuses it */
    for (int32_t j = 0; j < P->nb; j++)
        if (P->b[j] == b) return SPMV_OK;
    if (P->nb < SPMV_SUMMARY_MAXB) P->b[P->nb++] = b; /* else: size_summary counts them itself */
    return SPMV_OK;
}

static int bsr_size_summary(spmv_summary *S, spmv_fmt *F, spmv_err *err) {
    int32_t b = F->param[0];
    int rc = bsr_b(b, err);
    if (rc) return rc;
    for (int32_t j = 0; j < S->pass.nb; j++)
        if (S->pass.b[j] == b) return bsr_size_blocks(S->A, F, S->pass.blocks[j], err);
    return bsr_size(S->A, F, err); /* more block sizes than one pass counts */
}

/* Stored entries of row r of block row br: the set bits of its b-bit runs, one per block. */
static int32_t bsr_len(const spmv_fmt *F, int64_t br, int32_t r) {
    const int32_t *bp = F->idx[0], *bits = F->idx[2];
    int32_t b = F->param[0], len = 0;
    for (int64_t blk = bp[br]; blk < bp[br + 1]; blk++)
        for (int32_t c = 0; c < b; c++) len += spmv_bit_get(bits, (blk * b + r) * b + c);
    return len;
}

#define SPMV_REAL float
#define SPMV_NAME(x) x##_f32
#include "bsr_impl.h"
#define SPMV_REAL double
#define SPMV_NAME(x) x##_f64
#include "bsr_impl.h"

static int bsr_check(const spmv_fmt *F, spmv_err *err) {
    static const char *const what[] = {"block_ptr", "block_col", "presence bits",
                                       NULL,        "values",    NULL};
    int32_t b = F->param[0], n = F->nrows;
    if (b < 1 || b > BSR_MAX_B)
        return spmv_fail(err, SPMV_EINVAL, -1, b, BSR_MAX_B,
                         "The 'b' parameter of bsr must be a block size in [1, %d]. Got %d "
                         "instead.",
                         BSR_MAX_B, b);
    int64_t nbrows = ((int64_t)n + b - 1) / b, nbcols = ((int64_t)F->ncols + b - 1) / b, count = 0;
    int rc = spmv_fmt_scalar(F, 0, nbrows, nbrows, "block rows = ceil(nrows / b)", err);
    if (rc == SPMV_OK)
        rc = spmv_fmt_scalar(F, 1, nbcols, nbcols, "block columns = ceil(ncols / b)", err);
    if (rc == SPMV_OK) rc = spmv_fmt_scalar(F, 2, 0, INT32_MAX, "blocks", err);
    if (rc) return rc;
    int64_t nb = F->scalar[2], slots = nb * b * b;
    int64_t nidx[SPMV_MAXIDX] = {nbrows + 1, nb, spmv_bitwords(slots)}, nval[SPMV_MAXVAL] = {slots};
    rc = spmv_fmt_lengths(F, nidx, nval, what, err);
    if (rc == SPMV_OK) rc = spmv_fmt_ptr(F, F->idx[0], nbrows, nb, 1, "block_ptr", err);
    const int32_t *bp = F->idx[0], *bcol = F->idx[1], *bits = F->idx[2];
    for (int64_t br = 0; rc == SPMV_OK && br < nbrows; br++)
        for (int64_t blk = bp[br]; blk < bp[br + 1]; blk++) {
            if (bcol[blk] < 0 || bcol[blk] >= nbcols ||
                (blk > bp[br] && bcol[blk] <= bcol[blk - 1]))
                return spmv_fail(err, SPMV_EINDEX, blk, bcol[blk], nbcols,
                                 "bsr: block_col[%lld] = %d; block columns must lie in [0, %lld) "
                                 "and increase within a block row",
                                 (long long)blk, bcol[blk], (long long)nbcols);
            for (int64_t q = 0; q < (int64_t)b * b; q++) {
                if (!spmv_bit_get(bits, blk * b * b + q)) continue;
                int64_t i = br * b + q / b, j = (int64_t)bcol[blk] * b + q % b;
                if (i >= n || j >= F->ncols)
                    return spmv_fail(err, SPMV_EINDEX, i, j, F->ncols,
                                     "bsr: a presence bit of block %lld marks (%lld, %lld), "
                                     "outside the %d x %d matrix",
                                     (long long)blk, (long long)i, (long long)j, n, F->ncols);
                count++;
            }
        }
    return rc ? rc : spmv_fmt_count(F, count, err);
}

SPMV_API const spmv_format_ops spmv_bsr_ops = {
    .size = bsr_size,
    .fill_f32 = bsr_fill_f32,
    .fill_f64 = bsr_fill_f64,
    .to_csr_f32 = bsr_to_csr_f32,
    .to_csr_f64 = bsr_to_csr_f64,
    .mv_f32 = bsr_mv_f32,
    .mv_f64 = bsr_mv_f64,
    .nkernels = 1,
    .check = bsr_check,
    .size_summary = bsr_size_summary,
    .need = bsr_need,
    .unread = 1 << 2, /* presence bits (idx[2]) exist for exact round trips only */
    .finite_x = 1,    /* padding zeros inside the matrix are multiplied by x */
};
