// kernels/vec.cu: vector work around a product on the caller's vectors — alpha/beta, a locality
// order's gather and scatter, a timing's x made on the device, checks of a CSR matrix that lives
// on the device
// SPDX-License-Identifier: BSD-3-Clause
#include "kern.h"

template <typename T>
__global__ void axpby_kernel(int64_t n, T alpha, const T *__restrict__ t, T beta, T *y) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        /* BLAS's rules: beta == 0 does not read y, t == NULL (alpha == 0) does not read t */
        T v = t != nullptr ? alpha * t[i] : T(0);
        y[i] = beta == T(0) ? v : v + beta * y[i];
    }
}

extern "C" cudaError_t spmv_cuda_axpby(int elem_size, int64_t n, double alpha, const void *t,
                                       double beta, void *y, cudaStream_t s) {
    if (n <= 0) return cudaSuccess;
    const int bs = 256;
    unsigned blocks = spmv_cuda_blocks(n, bs);
    if (blocks > 65535u * 8) blocks = 65535u * 8; /* grid-stride past that */
    if (elem_size == 4)
        axpby_kernel<float>
            <<<blocks, bs, 0, s>>>(n, (float)alpha, (const float *)t, (float)beta, (float *)y);
    else
        axpby_kernel<double><<<blocks, bs, 0, s>>>(n, alpha, (const double *)t, beta, (double *)y);
    return cudaGetLastError();
}

/* x[i] = (2k + 1) / 2^23 - 1 for k the top 23 bits of a 64-bit mix of i (splitmix64's finaliser):
 * spread over (-1, 1), never 0 (an odd numerator over an even denominator), and exact in float32 and
 * float64 alike (23 significant bits), so that both value types time the same x. */
template <typename T> __global__ void fill_kernel(int64_t n, T *__restrict__ x) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        uint64_t z = (uint64_t)i + 0x9E3779B97F4A7C15ULL;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        z ^= z >> 31;
        x[i] = T((double)(2 * (int64_t)(z >> 41) + 1) * (1.0 / 8388608.0) - 1.0);
    }
}

template <typename T>
__global__ void gather_kernel(int64_t n, const int32_t *__restrict__ perm, const T *__restrict__ x,
                              T *__restrict__ xp) {
    for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < n;
         k += (int64_t)gridDim.x * blockDim.x)
        xp[k] = __ldg(x + __ldg(perm + k));
}

template <typename T>
__global__ void scatter_kernel(int64_t n, const int32_t *__restrict__ perm, T alpha,
                               const T *__restrict__ yp, T beta, T *__restrict__ y) {
    for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < n;
         k += (int64_t)gridDim.x * blockDim.x) {
        int32_t i = __ldg(perm + k);
        T v = alpha * yp[k];
        y[i] = beta == T(0) ? v : v + beta * y[i]; /* BLAS's rule: beta == 0 does not read y */
    }
}

static unsigned vec_blocks(int64_t n) {
    unsigned blocks = spmv_cuda_blocks(n, 256);
    return blocks > 65535u * 8 ? 65535u * 8 : blocks; /* grid-stride past that */
}

extern "C" cudaError_t spmv_cuda_fill(int elem_size, int64_t n, void *x, cudaStream_t s) {
    if (n <= 0) return cudaSuccess;
    if (elem_size == 4)
        fill_kernel<float><<<vec_blocks(n), 256, 0, s>>>(n, (float *)x);
    else
        fill_kernel<double><<<vec_blocks(n), 256, 0, s>>>(n, (double *)x);
    return cudaGetLastError();
}

extern "C" cudaError_t spmv_cuda_gather(int elem_size, int64_t n, const int32_t *perm,
                                        const void *x, void *xp, cudaStream_t s) {
    if (n <= 0) return cudaSuccess;
    if (elem_size == 4)
        gather_kernel<float><<<vec_blocks(n), 256, 0, s>>>(n, perm, (const float *)x, (float *)xp);
    else
        gather_kernel<double>
            <<<vec_blocks(n), 256, 0, s>>>(n, perm, (const double *)x, (double *)xp);
    return cudaGetLastError();
}

extern "C" cudaError_t spmv_cuda_scatter(int elem_size, int64_t n, const int32_t *perm,
                                         double alpha, const void *yp, double beta, void *y,
                                         cudaStream_t s) {
    if (n <= 0) return cudaSuccess;
    if (elem_size == 4)
        scatter_kernel<float><<<vec_blocks(n), 256, 0, s>>>(
            n, perm, (float)alpha, (const float *)yp, (float)beta, (float *)y);
    else
        scatter_kernel<double>
            <<<vec_blocks(n), 256, 0, s>>>(n, perm, alpha, (const double *)yp, beta, (double *)y);
    return cudaGetLastError();
}

/* The first bad entry of a device CSR, as (what, index) packed in bad[0..1]: what 1 = row_ptr[0] is
 * not 0, 2 = row_ptr decreases at index, 3 = row_ptr[nrows] is not nnz, 4 = col[index] out of
 * range.  atomicMin keeps the lowest code, then the lowest index, so the answer does not depend on
 * which thread saw it first. */
__global__ void csr_check_kernel(int32_t nrows, int32_t ncols, int64_t nnz,
                                 const int32_t *__restrict__ ptr, const int32_t *__restrict__ col,
                                 unsigned long long *bad) {
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (t == 0) {
        if (ptr[0] != 0) atomicMin(bad, (1ULL << 40));
        if ((int64_t)ptr[nrows] != nnz) atomicMin(bad, (3ULL << 40));
    }
    for (int64_t i = t; i < nrows; i += stride)
        if (ptr[i + 1] < ptr[i]) atomicMin(bad, (2ULL << 40) | (unsigned long long)(i + 1));
    for (int64_t k = t; k < nnz; k += stride)
        if (col[k] < 0 || col[k] >= ncols) atomicMin(bad, (4ULL << 40) | (unsigned long long)k);
}

extern "C" int spmv_cuda_csr_check(int32_t nrows, int32_t ncols, int64_t nnz, const int32_t *ptr,
                                   const int32_t *col, spmv_err *err) {
    unsigned long long *bad = nullptr, host = ~0ULL;
    int rc = spmv_cuda_malloc((void **)&bad, sizeof host, "the CSR check's answer", err);
    if (rc) return rc;
    rc = spmv_cuda_status(cudaMemcpy(bad, &host, sizeof host, cudaMemcpyHostToDevice),
                          "the CSR check", err);
    if (!rc) {
        int64_t work = nnz > nrows ? nnz : nrows;
        unsigned blocks = spmv_cuda_blocks(work, 256);
        if (blocks > 4096) blocks = 4096;
        csr_check_kernel<<<blocks, 256>>>(nrows, ncols, nnz, ptr, col, bad);
        rc = spmv_cuda_status(cudaGetLastError(), "the CSR check", err);
    }
    if (!rc)
        rc = spmv_cuda_status(cudaMemcpy(&host, bad, sizeof host, cudaMemcpyDeviceToHost),
                              "the CSR check", err);
    cudaFree(bad);
    if (rc || host == ~0ULL) return rc;
    int what = (int)(host >> 40);
    long long at = (long long)(host & ((1ULL << 40) - 1));
    static const char *const why[] = {"", "row_ptr[0] is not 0", "row_ptr decreases",
                                      "row_ptr[nrows] is not nnz",
                                      "a column index is outside [0, ncols)"};
    if (what < 1 || what > 4) what = 4;
    rc =
        spmv_cuda_fail(err, SPMV_EINVAL,
                       "The CSR matrix on the device is not valid: %s (index %lld)", why[what], at);
    if (err) err->where = at;
    return rc;
}
