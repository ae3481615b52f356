// kernels/jad.cu: JAD on the GPU — one thread per permuted row, across the jagged diagonals
// SPDX-License-Identifier: BSD-3-Clause
//
// Thread r takes permuted row r, whose entry k sits at jd_ptr[k] + r: consecutive threads read
// consecutive slots of each jagged diagonal, so the column and value streams coalesce with no
// padding at all.  Rows are sorted by length, so diagonal lengths never grow with k and row r's
// length is the number of diagonals longer than r: a binary search over jd_ptr (shared by the
// whole warp, so L1 hits) finds it first, and the loop over the row's entries then has no
// data-dependent exit and keeps several loads in flight.  Row sums run in diagonal order:
// deterministic.  With vals = 8 or 16 (csrc/vtab.c) a slot's value is its index's entry of the
// table: the index stream coalesces like the columns, the table (a few hundred values at most on
// the matrices it suits) stays in L1.
#include "dot.cuh"
#include "kern.h"

/* DOT: w . y too (A square), into d (kernels/dot.cuh); every thread reaches its finish. */
template <typename T, bool DOT, int VB>
__global__ void __launch_bounds__(1024)
    jad_row_kernel(int32_t nrows, int32_t njd, const int32_t *__restrict__ perm,
                   const int32_t *__restrict__ jd_ptr, const int32_t *__restrict__ col,
                   const T *__restrict__ val, const void *__restrict__ vix, const T *__restrict__ x,
                   T *__restrict__ y, spmv_cuda_dot d) {
    int64_t r64 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    double acc = 0;
    if (r64 < nrows) {
        int32_t r = (int32_t)r64, len = 0, hi = njd;
        while (len < hi) { /* first diagonal not longer than r */
            int32_t mid = len + (hi - len) / 2;
            if (__ldg(jd_ptr + mid + 1) - __ldg(jd_ptr + mid) > r)
                len = mid + 1;
            else
                hi = mid;
        }
        T sum = 0;
#pragma unroll 4
        for (int32_t k = 0; k < len; k++) {
            int32_t q = __ldg(jd_ptr + k) + r; /* < jd_ptr[k+1] <= nnz: fits int32 */
            sum += spmv_value<T, VB, true>(val, vix, q) * __ldg(x + __ldcs(col + q));
        }
        acc = spmv_row_store<DOT>(y, x, d, __ldg(perm + r), sum);
    } else if (!DOT) {
        return;
    }
    if (DOT) spmv_dot_partial(acc, d);
}

template <typename T, int VB>
static void jad_launch_vb(const spmv_dfmt *D, const spmv_launch *L, const T *x, T *y,
                          const spmv_cuda_dot *d, cudaStream_t s) {
    const unsigned g = spmv_cuda_blocks(D->nrows, L->block);
    const int32_t njd = (int32_t)D->scalar[0];
    const T *val = (const T *)D->val[0];
    if (d)
        jad_row_kernel<T, true, VB><<<g, L->block, 0, s>>>(D->nrows, njd, D->idx[0], D->idx[1],
                                                           D->idx[2], val, D->idx[3], x, y, *d);
    else
        jad_row_kernel<T, false, VB><<<g, L->block, 0, s>>>(
            D->nrows, njd, D->idx[0], D->idx[1], D->idx[2], val, D->idx[3], x, y, spmv_cuda_dot{});
}

template <typename T>
static cudaError_t jad_launch(const spmv_dfmt *D, const spmv_launch *L, const void *aux, const T *x,
                              T *y, const spmv_cuda_dot *d, cudaStream_t s) {
    (void)aux;
    spmv_by_vals(D->param[0],
                 [&](auto vb) { jad_launch_vb<T, decltype(vb)::value>(D, L, x, y, d, s); });
    return cudaGetLastError();
}

static int64_t row_blocks(const spmv_dfmt *D, const spmv_launch *L) {
    return spmv_cuda_blocks(D->nrows, L->block);
}

SPMV_CUDA_KERNEL_DOT(jad, NULL, NULL, jad_launch, row_blocks);

/* ---- Device conversion from a resident CSR (kernels/convert.cu dispatches) ---- */

// Device conversion to JAD — a stable radix sort of the rows by length, jagged diagonal lengths by
// binary searches in the sorted lengths, one thread per entry
//
// Layout: csrc/jad.c.  The host's stable counting sort by descending length is a stable radix sort
// of (longest row - length) carrying the row numbers: equal lengths keep ascending rows.  Jagged
// diagonal k holds the rows longer than k: the sorted keys below longest - k, found by a binary
// search; jd_ptr is their exclusive sum.  Entry j of row i goes to jd_ptr[j] + (i's position).
#include "convert.cuh"
#include <cub/cub.cuh>

__global__ void jad_keys_kernel(int32_t n, int32_t maxlen, const int32_t *__restrict__ ptr,
                                uint32_t *__restrict__ keys, int32_t *__restrict__ rows) {
    SPMV_CONV_LOOP(i, n) {
        keys[i] = (uint32_t)(maxlen - (ptr[i + 1] - ptr[i]));
        rows[i] = (int32_t)i;
    }
}

/* In one pass: cnt[k] = rows longer than k (keys below maxlen - k in the ascending keys),
 * cnt[njd] = 0, and the inverse permutation. */
__global__ void jad_count_inverse_kernel(int32_t n, int32_t njd,
                                         const uint32_t *__restrict__ sorted,
                                         const int32_t *__restrict__ perm,
                                         int32_t *__restrict__ cnt, int32_t *__restrict__ inv) {
    int64_t work = (int64_t)njd + 1 > n ? (int64_t)njd + 1 : n;
    SPMV_CONV_LOOP(q, work) {
        if (q < n) inv[perm[q]] = (int32_t)q;
        if (q <= njd) {
            int32_t c = 0;
            if (q < njd) {
                /* the first position with sorted >= njd - q */
                c = spmv_conv_lower_bound(sorted, 0, n, (uint32_t)(njd - q));
            }
            cnt[q] = c;
        }
    }
}

/* VB 0: the value to its slot; 8 or 16: its index in tab[ntab] to slot q (spmv_conv_vtab_put). */
template <typename T, typename K, int VB>
__global__ void jad_fill_kernel(int64_t nnz, const int32_t *__restrict__ ptr,
                                const int32_t *__restrict__ rid, const int32_t *__restrict__ col,
                                const T *__restrict__ val, const int32_t *__restrict__ inv,
                                const int32_t *__restrict__ jd, int32_t *__restrict__ jcol,
                                T *__restrict__ jv, void *__restrict__ vix,
                                const K *__restrict__ tab, int32_t ntab) {
    SPMV_CONV_LOOP(p, nnz) {
        int32_t i = rid[p];
        int64_t q = (int64_t)jd[p - ptr[i]] + inv[i];
        jcol[q] = col[p];
        if constexpr (VB == 0) {
            jv[q] = val[p];
        } else {
            spmv_conv_vtab_put<VB>(tab, ntab, val[p], vix, q);
        }
    }
}

template <typename T, typename K>
static int jad_fill(spmv_conv *C, int32_t vals, const int32_t *inv, const int32_t *jd,
                    spmv_err *err) {
    int64_t nnz = C->nnz;
    unsigned g = spmv_conv_grid(nnz, 256);
    const void *vtab = nullptr;
    int32_t ntab = 0;
    int rc = vals ? spmv_conv_vtab(C, vals, "jad", &vtab, &ntab, err) : SPMV_OK;
    if (rc) return rc;
    const K *tab = static_cast<const K *>(vtab);
    const T *val = static_cast<const T *>(C->val);
    int32_t *jcol = (int32_t *)C->dev[2];
    T *jv = static_cast<T *>(C->dev[SPMV_MAXIDX]);
    if (vals == 8)
        jad_fill_kernel<T, K, 8><<<g, 256, 0, C->s>>>(nnz, C->ptr, C->rid, C->col, val, inv, jd,
                                                      jcol, nullptr, C->dev[3], tab, ntab);
    else if (vals == 16)
        jad_fill_kernel<T, K, 16><<<g, 256, 0, C->s>>>(nnz, C->ptr, C->rid, C->col, val, inv, jd,
                                                       jcol, nullptr, C->dev[3], tab, ntab);
    else
        jad_fill_kernel<T, K, 0><<<g, 256, 0, C->s>>>(nnz, C->ptr, C->rid, C->col, val, inv, jd,
                                                      jcol, jv, nullptr, nullptr, 0);
    return spmv_conv_launched("JAD fill", err);
}

__global__ void jad_iota_kernel(int32_t n, int32_t *__restrict__ perm) {
    SPMV_CONV_LOOP(i, n) perm[i] = (int32_t)i;
}

int spmv_conv_jad(spmv_conv *C, spmv_err *err) {
    int32_t vals = C->D.param[0];
    int64_t ntab, nwords;
    spmv_err perr;
    int rc = spmv_vtab_size("jad", vals, C->nnz, 0, &ntab, &nwords, &perr);
    if (rc) return spmv_conv_param_fail(C, rc, &perr, err);
    rc = spmv_conv_read(C, nullptr, 0, err); /* the one wait: jd_ptr's length */
    if (rc) return rc;
    int32_t n = C->nrows, njd = C->maxlen;
    int64_t nnz = C->nnz;
    cudaStream_t s = C->s;
    C->D.scalar[0] = njd;
    rc = spmv_conv_out(C, 0, 0, n, "JAD perm", err);
    if (!rc) rc = spmv_conv_out(C, 0, 1, (int64_t)njd + 1, "JAD jd_ptr", err);
    if (!rc) rc = spmv_conv_out(C, 0, 2, nnz, "JAD col", err);
    if (!rc && vals) rc = spmv_conv_out(C, 0, 3, nwords, "JAD value indices", err);
    if (!rc) rc = spmv_conv_out(C, 1, 0, ntab, vals ? "JAD value table" : "JAD values", err);
    if (rc) return rc;
    int32_t *perm = (int32_t *)C->dev[0], *jd = (int32_t *)C->dev[1];
    if (njd == 0) { /* no entries: every row in place, one jd_ptr of 0 */
        jad_iota_kernel<<<spmv_conv_grid(n, 256), 256, 0, s>>>(n, perm);
        rc = spmv_conv_launched("JAD perm", err);
        return rc ? rc
                  : spmv_cuda_status(cudaMemsetAsync(jd, 0, sizeof(int32_t), s), "JAD jd_ptr", err);
    }
    uint32_t *keys = nullptr, *sorted = nullptr;
    int32_t *rows = nullptr, *cnt = nullptr, *inv = nullptr;
    rc = spmv_conv_tmp(C, (int64_t)n * 4, "JAD sort keys", (void **)&keys, err);
    if (!rc) rc = spmv_conv_tmp(C, (int64_t)n * 4, "JAD sorted keys", (void **)&sorted, err);
    if (!rc) rc = spmv_conv_tmp(C, (int64_t)n * 4, "JAD rows", (void **)&rows, err);
    if (!rc)
        rc = spmv_conv_tmp(C, ((int64_t)njd + 1) * 4, "JAD diagonal lengths", (void **)&cnt, err);
    if (!rc) rc = spmv_conv_tmp(C, (int64_t)n * 4, "JAD inverse perm", (void **)&inv, err);
    if (rc) return rc;
    jad_keys_kernel<<<spmv_conv_grid(n, 256), 256, 0, s>>>(n, njd, C->ptr, keys, rows);
    rc = spmv_conv_launched("JAD sort keys", err);
    int end_bit = spmv_conv_bits((uint64_t)njd);
    if (!rc)
        rc = spmv_conv_cub(
            C, "JAD row sort",
            [&](void *t, size_t &b) {
                return cub::DeviceRadixSort::SortPairs(t, b, keys, sorted, rows, perm, n, 0,
                                                       end_bit, s);
            },
            err);
    if (!rc) {
        int64_t work = (int64_t)njd + 1 > n ? (int64_t)njd + 1 : n;
        jad_count_inverse_kernel<<<spmv_conv_grid(work, 256), 256, 0, s>>>(n, njd, sorted, perm,
                                                                           cnt, inv);
        rc = spmv_conv_launched("JAD diagonal lengths", err);
    }
    if (!rc)
        rc = spmv_conv_cub(
            C, "JAD jd_ptr",
            [&](void *t, size_t &b) {
                return cub::DeviceScan::ExclusiveSum(t, b, cnt, jd, (int64_t)njd + 1, s);
            },
            err);
    if (!rc) rc = spmv_conv_rid(C, err);
    if (rc) return rc;
    return C->elem_size == 4 ? jad_fill<float, uint32_t>(C, vals, inv, jd, err)
                             : jad_fill<double, uint64_t>(C, vals, inv, jd, err);
}
