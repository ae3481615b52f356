// csrc/vtab.c: value tables — a format's values stored as 8- or 16-bit indices into a table of the
// matrix's distinct values
// SPDX-License-Identifier: BSD-3-Clause
//
// Why: at scale a product is bound by the bytes it moves, and a float64 value is 8 of CSR's 12 bytes
// an entry.  Many matrices hold few distinct values (graph adjacencies and Laplacians, stencils,
// incidence matrices: a handful; scaled or assembled ones a few hundred), and then an entry's
// value is one or two bytes of index, the table staying in cache.  The layout a format keeps, for
// `bits` = 8 or 16 and nnz entries in its storage order:
//   table[len = min(2^bits, nnz)] = the distinct values, ascending as unsigned integers of their
//     bits (so 0.0 and -0.0, or two NaNs of other payloads, are distinct, and the product reads
//     back exactly the values converted), then zeros;
//   words[ceil(nnz * bits / 32)] = entry q's index in bits (q * bits) % 32 .. of word
//     q * bits / 32, i.e. a uint8 (bits 8) or uint16 (bits 16) array on a little-endian machine,
//     as the CUDA kernels read it; the bits past entry nnz - 1 are 0.
// Both sizes depend on bits and nnz alone, so a size query needs no values; a matrix with more than
// 2^bits distinct values is refused when it is filled (SPMV_ENOTAPPLICABLE).
#include "spmv_internal.h"

#include <stdlib.h>
#include <string.h>

int spmv_vtab_size(const char *fmt, int32_t bits, int64_t nnz, int64_t ndistinct, int64_t *len,
                   int64_t *words, spmv_err *err) {
    if (bits != 0 && bits != 8 && bits != 16)
        return spmv_fail(err, SPMV_EINVAL, -1, bits, 16,
                         "The 'vals' parameter of %s must be 0 (values as they are), 8 or 16 (an "
                         "index of that many bits into a table of the distinct values). Got %d "
                         "instead.",
                         fmt, (int)bits);
    int64_t cap = (int64_t)1 << bits;
    if (bits && ndistinct > cap)
        return spmv_fail(err, SPMV_ENOTAPPLICABLE, -1, ndistinct, cap,
                         "vals=%d indexes at most %lld distinct values; this matrix has more: use "
                         "%s",
                         (int)bits, (long long)cap, bits == 8 ? "vals=16 or vals=0" : "vals=0");
    *len = bits ? (nnz < cap ? nnz : cap) : nnz;
    *words = bits ? (nnz * bits + 31) / 32 : 0;
    return SPMV_OK;
}

/* Entry p's bits, the key a value is known by. */
static uint64_t key_at(const void *v, int es, int64_t p) {
    if (es == 4) {
        uint32_t u;
        memcpy(&u, (const char *)v + 4 * p, 4);
        return u;
    }
    uint64_t u;
    memcpy(&u, (const char *)v + 8 * p, 8);
    return u;
}

/* An open-addressing set of keys (2^logcap slots, linear probing), each with its rank once sorted. */
typedef struct {
    uint64_t *key;
    int32_t *rank; /* -1: empty */
    int logcap;
} vtab_set;

static int64_t set_slot(const vtab_set *S, uint64_t k) {
    uint64_t mask = ((uint64_t)1 << S->logcap) - 1;
    uint64_t h = (k * 0x9E3779B97F4A7C15ull) >> (64 - S->logcap);
    while (S->rank[h] >= 0 && S->key[h] != k) h = (h + 1) & mask;
    return (int64_t)h;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The distinct keys of v[0, nnz), at most 2^bits of them, into S (rank 0: present) and found[];
 * SPMV_ENOTAPPLICABLE at one more. */
static int collect(const void *v, int es, int64_t nnz, int32_t bits, vtab_set *S, uint64_t *found,
                   int64_t *nfound, const char *fmt, spmv_err *err) {
    int64_t cap = (int64_t)1 << bits, n = 0;
    for (int64_t p = 0; p < nnz; p++) {
        uint64_t k = key_at(v, es, p);
        int64_t h = set_slot(S, k);
        if (S->rank[h] >= 0) continue;
        if (n == cap) {
            int64_t len, words;
            return spmv_vtab_size(fmt, bits, nnz, cap + 1, &len, &words, err);
        }
        S->key[h] = k;
        S->rank[h] = 0;
        found[n++] = k;
    }
    *nfound = n;
    return SPMV_OK;
}

int spmv_vtab_fill(const void *stored, int es, int64_t nnz, int32_t bits, void *tab, int32_t *words,
                   const char *fmt, spmv_err *err) {
    int64_t cap = (int64_t)1 << bits, ntab, nw;
    int rc = spmv_vtab_size(fmt, bits, nnz, 0, &ntab, &nw, err);
    if (rc || bits == 0) return rc;
    vtab_set S = {NULL, NULL, bits + 1}; /* at most half full */
    uint64_t *found = (uint64_t *)spmv_malloc(cap, sizeof(uint64_t), err);
    S.key = found ? (uint64_t *)spmv_malloc((int64_t)1 << S.logcap, sizeof(uint64_t), err) : NULL;
    S.rank = S.key ? (int32_t *)spmv_malloc((int64_t)1 << S.logcap, sizeof(int32_t), err) : NULL;
    rc = found && S.key && S.rank ? SPMV_OK : SPMV_ENOMEM;
    int64_t n = 0;
    if (rc == SPMV_OK) {
        memset(S.rank, 0xff, sizeof(int32_t) * ((size_t)1 << S.logcap));
        rc = collect(stored, es, nnz, bits, &S, found, &n, fmt, err);
    }
    if (rc == SPMV_OK) {
        qsort(found, (size_t)n, sizeof(uint64_t), cmp_u64);
        if (ntab > 0) memset(tab, 0, (size_t)(ntab * es)); /* tab is NULL for no entries */
        for (int64_t i = 0; i < n; i++) {
            S.rank[set_slot(&S, found[i])] = (int32_t)i;
            if (es == 4) {
                uint32_t u = (uint32_t)found[i];
                memcpy((char *)tab + 4 * i, &u, 4);
            } else {
                memcpy((char *)tab + 8 * i, &found[i], 8);
            }
        }
        /* word by word, so that threads never share one */
        const int per = 32 / bits;
#pragma omp parallel for schedule(static) if (nnz > SPMV_OMP_MIN_WORK)
        for (int64_t w = 0; w < nw; w++) {
            uint32_t word = 0;
            for (int j = 0; j < per && w * per + j < nnz; j++) {
                uint32_t r = (uint32_t)S.rank[set_slot(&S, key_at(stored, es, w * per + j))];
                word |= r << (j * bits);
            }
            words[w] = (int32_t)word;
        }
    }
    spmv_free(found);
    spmv_free(S.key);
    spmv_free(S.rank);
    return rc;
}

int spmv_vtab_check(const int32_t *words, int64_t nnz, int32_t bits, const char *fmt,
                    spmv_err *err) {
    int64_t ntab, nw;
    int rc = spmv_vtab_size(fmt, bits, nnz, 0, &ntab, &nw, err);
    if (rc || bits == 0) return rc; /* no table, no indices */
    for (int64_t q = 0; q < nnz; q++) {
        uint32_t r = spmv_vtab_get(words, q, bits);
        if (r >= (uint64_t)ntab)
            return spmv_fail(err, SPMV_EINDEX, q, r, ntab,
                             "%s: value index %u of entry %lld is past the table's %lld values",
                             fmt, r, (long long)q, (long long)ntab);
    }
    for (int64_t q = nnz; q < nw * (32 / bits); q++)
        if (spmv_vtab_get(words, q, bits) != 0)
            return spmv_fail(err, SPMV_EINDEX, q, spmv_vtab_get(words, q, bits), 0,
                             "%s: value index slot %lld is past nnz = %lld and must hold 0", fmt,
                             (long long)q, (long long)nnz);
    return SPMV_OK;
}
