// tests/fuzz/fuzz_common.h: what the libFuzzer harnesses share — byte reader, modes, CSR decoders
// SPDX-License-Identifier: BSD-3-Clause
//
// Harnesses include only the public header: they call the core as any caller would.  Every array a
// harness hands to the core is allocated with exactly the length the contract gives it, so that
// AddressSanitizer reports a read one element past it.
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include "spmv.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- modes ---------------------------------------------------------------------------------- */

/* Calls that feed input the core once mishandled (issue 11), each behind a mode; all are on by
 * default since the core's hardening.  SPMV_FUZZ_MODES=name,name (or "" for none) narrows a run
 * to what is being investigated.
 *   raw_check   spmv_csr_check on indices exactly indices_len long (else padded past it: the
 *               check reads indices[] under an indptr that points past them before it notices
 *               that indptr later decreases)
 *   unchecked   spmv_features_compute and spmv_rank on a CSR that failed spmv_csr_check
 *               (indices as long as indptr[nrows] says)
 *   unchecked_fmt  spmv_fmt_size and spmv_design_rows on such a CSR (documented as
 *               "A must pass spmv_csr_check()": shows what that precondition leaves open)
 *   deep_trees  tree models whose depth is their node count (tens of thousands), predicted in a
 *               batch of rows that all take the same branch
 *   null_empty  NULL for arrays of length 0 where the contract allows it (indices when nnz = 0, a
 *               linear model's coef when ninputs = 0, ...): the core then computes NULL + 0, which
 *               C leaves undefined and UBSan reports */
enum {
    FZ_RAW_CHECK = 1,
    FZ_UNCHECKED = 2,
    FZ_UNCHECKED_FMT = 4,
    FZ_DEEP_TREES = 8,
    FZ_NULL_EMPTY = 16
};
#ifndef FZ_DEFAULT_MODES
#define FZ_DEFAULT_MODES "all"
#endif

static unsigned fz_modes;

static inline void fz_modes_init(void) {
    const char *s = getenv("SPMV_FUZZ_MODES");
    if (s == NULL) s = FZ_DEFAULT_MODES;
    static const struct {
        const char *name;
        unsigned bit;
    } names[] = {
        {"raw_check", FZ_RAW_CHECK},         {"unchecked", FZ_UNCHECKED},
        {"unchecked_fmt", FZ_UNCHECKED_FMT}, {"deep_trees", FZ_DEEP_TREES},
        {"null_empty", FZ_NULL_EMPTY},
    };
    fz_modes = 0;
    while (*s) {
        size_t n = strcspn(s, ",");
        if (n == 3 && strncmp(s, "all", 3) == 0) fz_modes = ~0u;
        for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
            if (strlen(names[k].name) == n && strncmp(s, names[k].name, n) == 0)
                fz_modes |= names[k].bit;
        s += n + (s[n] == ',');
    }
    fprintf(stderr, "fuzz modes:");
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if (fz_modes & names[k].bit) fprintf(stderr, " %s", names[k].name);
    fprintf(stderr, "%s\n", fz_modes ? "" : " (none)");
}

/* A finding: libFuzzer saves the input on abort. */
#define FZ_ASSERT(cond, ...)                                                                       \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FUZZ FINDING %s:%d: %s: ", __FILE__, __LINE__, #cond);                \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* A failing call must say so in err too. */
#define FZ_ERR_AGREES(rc, e)                                                                       \
    FZ_ASSERT((rc) == 0 || (e).code == (rc), "rc %d, err.code %d", (rc), (e).code)

/* ---- bytes in --------------------------------------------------------------------------------- */

/* Reads past the end give zeros: every input decodes to something. */
typedef struct {
    const uint8_t *p;
    size_t n, i;
} fz_in;

static inline uint8_t fz_u8(fz_in *in) { return in->i < in->n ? in->p[in->i++] : 0; }
/* Little-endian; one call per statement, since the order of calls within an expression is not
 * specified. */
static inline uint16_t fz_u16(fz_in *in) {
    uint16_t lo = fz_u8(in);
    return (uint16_t)(lo | fz_u8(in) << 8);
}
static inline uint32_t fz_u32(fz_in *in) {
    uint32_t lo = fz_u16(in);
    return lo | (uint32_t)fz_u16(in) << 16;
}
static inline int fz_left(const fz_in *in) { return in->i < in->n; }

/* An index mostly in [lo, hi), now and then any int32 (byte 255). */
static inline int32_t fz_idx(fz_in *in, int64_t lo, int64_t hi) {
    uint8_t b = fz_u8(in);
    if (b == 255) return (int32_t)fz_u32(in);
    return hi > lo ? (int32_t)(lo + b % (hi - lo)) : (int32_t)lo;
}

/* A double: tame ones are finite with |v| <= 4; wild ones include inf, nan, extremes, raw bits. */
static inline double fz_double(fz_in *in, int tame) {
    static const double t[16] = {0, 1,  -1, 0.5, -0.5, 2,    -2,   0.25,
                                 3, -3, 4,  -4,  1.5,  -1.5, 0.75, -0.25};
    uint8_t b = fz_u8(in);
    if (tame) return t[b & 15];
    static const double w[12] = {INFINITY,
                                 -INFINITY,
                                 NAN,
                                 1e300,
                                 -1e300,
                                 1e-300,
                                 5e-324,
                                 -0.0,
                                 1.7976931348623157e308,
                                 2.2250738585072014e-308,
                                 1e10,
                                 -1e10};
    if (b < 12) return w[b];
    if (b < 24) {
        uint64_t u = fz_u32(in);
        u |= (uint64_t)fz_u32(in) << 32;
        double d;
        memcpy(&d, &u, sizeof d);
        return d;
    }
    return t[b & 15] * (double)(1 + (b >> 4));
}

/* Exactly n elements (malloc(0) for none: ASan flags any access). */
static inline void *fz_alloc(int64_t n, size_t size) {
    void *p = malloc((size_t)n * size);
    if (p == NULL && n > 0) abort();
    return p;
}

/* ---- CSR ---------------------------------------------------------------------------------------- */

typedef struct {
    spmv_csr A;
    int32_t *indptr, *indices;
    int64_t nnz;
} fz_csr;

static inline void fz_csr_free(fz_csr *c) {
    free(c->indptr);
    free(c->indices);
    memset(c, 0, sizeof *c);
}

/* A valid CSR (sorted, distinct, in range) from a compact program, so that small inputs make large
 * or structured matrices.  Header: flags (bit 0: ncols up to 2^20), nrows, ncols.  Then one op per
 * row (rows after the input ends are empty); op >> 6:
 *   0  explicit row of op & 63 entries, each a column gap byte (255: a 16-bit gap follows)
 *   1  the previous row shifted by (op & 63) - 32 columns
 *   2  the previous row shifted by an int8 for this and the next op & 63 rows (bands)
 *   3  a long row: (op & 63 + 1) * 16 entries from a 16-bit start with stride 1 + byte % 8 */
static inline void fz_csr_decode(fz_in *in, int32_t max_rows, int64_t max_nnz, fz_csr *c) {
    uint8_t flags = fz_u8(in);
    int32_t nrows = 1 + fz_u16(in) % max_rows;
    int32_t ncols = 1 + (int32_t)((flags & 1) ? fz_u32(in) % (1u << 20) : fz_u16(in) % 4096u);
    int32_t *ip = fz_alloc((int64_t)nrows + 1, sizeof(int32_t));
    int32_t *buf = fz_alloc(max_nnz, sizeof(int32_t));
    int64_t nnz = 0, prev0 = 0, prev1 = 0; /* the previous row is buf[prev0 .. prev1) */
    int32_t repeat = 0, rshift = 0;
    ip[0] = 0;
#define PUSH(col)                                                                                  \
    do {                                                                                           \
        if (nnz < max_nnz) buf[nnz++] = (col);                                                     \
    } while (0)
    for (int32_t i = 0; i < nrows; i++) {
        int64_t start = nnz;
        int32_t shift = 0, copy = 0;
        if (repeat > 0) {
            repeat--;
            shift = rshift;
            copy = 1;
        } else if (fz_left(in)) {
            uint8_t op = fz_u8(in);
            int32_t arg = op & 63;
            switch (op >> 6) {
            case 0: {
                int64_t col = -1;
                for (int32_t k = 0; k < arg; k++) {
                    int64_t gap = fz_u8(in);
                    if (gap == 255) gap = fz_u16(in);
                    col += 1 + gap;
                    if (col >= ncols) break;
                    PUSH((int32_t)col);
                }
                break;
            }
            case 1:
                shift = arg - 32;
                copy = 1;
                break;
            case 2:
                rshift = (int8_t)fz_u8(in);
                repeat = arg;
                shift = rshift;
                copy = 1;
                break;
            default: {
                int64_t col = fz_u16(in) % ncols, stride = 1 + fz_u8(in) % 8;
                for (int32_t k = 0; k < (arg + 1) * 16 && col < ncols; k++, col += stride)
                    PUSH((int32_t)col);
            }
            }
        }
        if (copy)
            for (int64_t p = prev0; p < prev1; p++) {
                int64_t col = (int64_t)buf[p] + shift;
                if (col >= 0 && col < ncols) PUSH((int32_t)col);
            }
        ip[i + 1] = (int32_t)nnz;
        prev0 = start;
        prev1 = nnz;
    }
#undef PUSH
    c->indices = fz_alloc(nnz, sizeof(int32_t));
    if (nnz) memcpy(c->indices, buf, (size_t)nnz * sizeof(int32_t));
    free(buf);
    c->indptr = ip;
    c->nnz = nnz;
    c->A.nrows = nrows;
    c->A.ncols = ncols;
    c->A.indptr = ip;
    c->A.indices = c->indices;
}

/* GPU properties: the H100's mostly, else anything (the callee must refuse non-positive ones). */
static inline void fz_props(fz_in *in, spmv_gpu_props *p) {
    spmv_gpu_props_h100(p);
    if (fz_u8(in) < 224) return;
    p->sm_count = (int32_t)fz_u32(in);
    p->threads_per_sm = (int32_t)fz_u32(in);
    p->warp_size = (int32_t)fz_u32(in);
}

/* Format parameters: mostly ones the format accepts, now and then any int32. */
static inline void fz_fmt_params(fz_in *in, int format, int32_t param[2]) {
    uint8_t b = fz_u8(in), v = fz_u8(in);
    param[0] = param[1] = 0;
    if (b >= 224) {
        param[0] = (int32_t)fz_u32(in);
        param[1] = (int32_t)fz_u32(in);
        return;
    }
    switch (format) {
    case SPMV_FMT_CSR: /* its order (the matrix's own, or a locality order of a square matrix) and
                          its values (as they are, or a table's indices of 8 or 16 bits) */
        param[0] = b & 1;
        param[1] = (int32_t[]){0, 8, 16}[v % 3];
        break;
    case SPMV_FMT_SELL:
        param[0] = 1 << (b % 11);
        param[1] = v % 4 == 0 ? 1 : param[0] * (1 + v % 8);
        break;
    case SPMV_FMT_BRO_ELL:
        param[0] = 1 << (b % 11);
        param[1] = (int32_t[]){0, 8, 16, 32}[v % 4];
        break;
    case SPMV_FMT_HYB:
        param[0] = (int32_t)(b % 66) - 1;
        break;
    case SPMV_FMT_BSR:
        param[0] = 1 + b % 32;
        break;
    case SPMV_FMT_CIDX:
        param[0] = b & 1 ? 16 : 8;
        break;
    case SPMV_FMT_JAD: /* its values as they are, or a table's indices of 8 or 16 bits */
        param[0] = (int32_t[]){0, 8, 16}[b % 3];
        break;
    default:
        break;
    }
}

static inline double fz_max_fill(fz_in *in) {
    static const double t[8] = {0, 1, 1.5, 2, 3, 20, 100, -1};
    return t[fz_u8(in) % 8];
}

#endif /* FUZZ_COMMON_H */
