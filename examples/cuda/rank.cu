// examples/cuda/rank.cu: rank a matrix's GPU configurations, run the pick on the GPU with libspmv_cuda
// SPDX-License-Identifier: BSD-3-Clause
//
// Usage: rank_cuda [FILE.mtx]   (no file: the 2D Poisson matrix of a 40 x 40 grid)
//
// The model is the exported cuda default (ranker.c, compiled as C).  The pick (an own kernel or a
// cuSPARSE call) is parsed by libspmv, the CSR converted on the host to its format, and a plan
// made on the GPU (libspmv_cuda: upload, workspace, cuSPARSE handle); one product is checked
// against a plain CSR loop and the product is timed with CUDA events.  Prints "key value" lines as
// rank.c does; exit status 0 when the product agrees, 1 when not, 77 without a usable GPU.
#include <spmv.h>
#include <spmv_cuda.h>
#include <spmv_version.h>

#include <cmath>
#include <cstdio>
#include <numeric>
#include <vector>

#include "mtx.h"
#include "ranker.h"

static int fail(const char *what, int rc, const spmv_err &err) {
    std::fprintf(stderr, "rank_cuda: %s: %s\n", what, err.msg[0] ? err.msg : spmv_strerror(rc));
    return 2;
}

int main(int argc, char **argv) {
    spmv_err err{};
    int count = 0;
    int rc = spmv_cuda_device_count(&count, &err);
    if (rc != 0 || count < 1) {
        std::printf("no usable GPU: %s\n", err.msg);
        return 77;
    }
    example_csr A{};
    char msg[160] = "";
    rc = argc > 1 ? example_read_mtx(argv[1], &A, msg) : example_poisson2d(40, &A);
    if (rc != 0) {
        std::fprintf(stderr, "rank_cuda: %s\n", msg[0] ? msg : spmv_strerror(rc));
        return 2;
    }
    spmv_cuda_info info{};
    if (spmv_cuda_get_info(&info, &err) == 0) std::printf("device %s\n", info.name);
    std::printf("library %s\n", spmv_version());
    std::printf("matrix %d %d %lld\n", A.nrows, A.ncols, static_cast<long long>(A.indptr[A.nrows]));

    // 1. Rank; the pick is the first GPU configuration that can serve A.
    const int n = ranker_count();
    std::vector<int> order(static_cast<size_t>(n));
    std::vector<double> ms(static_cast<size_t>(n));
    rc = ranker_rank(A.nrows, A.ncols, A.indptr, A.indices, order.data(), ms.data());
    if (rc != 0) return fail("ranking", rc, err);
    spmv_config c{};
    const spmv_kernel_desc *k = nullptr;
    int pick = -1;
    for (int j : order) {
        if (!std::isfinite(ms[static_cast<size_t>(j)]) ||
            spmv_config_parse(ranker_config_id(j), &c, &err) != 0)
            continue;
        k = spmv_kernel_get(c.kernel);
        if (k->device == SPMV_DEV_CUDA) {
            pick = j;
            break;
        }
    }
    if (pick < 0) return fail("ranking", SPMV_ENOTAPPLICABLE, err);
    std::printf("pick %s\n", ranker_config_id(pick));
    std::printf("predicted_ms %.6g\n", ms[static_cast<size_t>(pick)]);

    // 2. Convert on the host to the pick's format.
    const spmv_csr P{A.nrows, A.ncols, A.indptr, A.indices};
    spmv_fmt F{};
    F.format = k->format;
    F.nrows = A.nrows;
    F.ncols = A.ncols;
    F.param[0] = c.param[0];
    F.param[1] = c.param[1];
    if ((rc = spmv_fmt_size(&P, &F, &err)) != 0) return fail("size", rc, err);
    std::vector<std::vector<int32_t>> idx(SPMV_MAXIDX);
    std::vector<std::vector<double>> val(SPMV_MAXVAL);
    for (int s = 0; s < SPMV_MAXIDX; s++) {
        idx[s].resize(static_cast<size_t>(F.nidx[s]));
        F.idx[s] = F.nidx[s] ? idx[s].data() : nullptr;
    }
    for (int s = 0; s < SPMV_MAXVAL; s++) {
        val[s].resize(static_cast<size_t>(F.nval[s]));
        F.val[s] = F.nval[s] ? val[s].data() : nullptr;
    }
    if ((rc = spmv_fmt_fill_f64(&P, A.values, &F, &err)) != 0) return fail("fill", rc, err);
    std::printf("format %s\n", spmv_format_name(F.format));

    // 3. A plan on the GPU, one checked product, then the product timed.
    spmv_cuda_plan *plan = nullptr;
    if ((rc = spmv_cuda_plan_create(&F, &c, 8, &plan, &err)) != 0) return fail("plan", rc, err);
    std::vector<double> x(static_cast<size_t>(A.ncols)), y(static_cast<size_t>(A.nrows));
    for (size_t j = 0; j < x.size(); j++) x[j] = 1.0 + 0.25 * static_cast<double>(j % 7);
    if ((rc = spmv_cuda_plan_mv(plan, x.data(), y.data(), &err)) != 0)
        return fail("product", rc, err);
    spmv_timing t{};
    if ((rc = spmv_cuda_plan_bench(plan, x.data(), nullptr, 10, 100, 0.2, &t, &err)) != 0)
        return fail("timing", rc, err);
    spmv_cuda_plan_free(plan);
    double worst = 0.0;
    for (int32_t i = 0; i < A.nrows; i++) {
        double ref = 0.0, mag = 0.0;
        for (int32_t p = A.indptr[i]; p < A.indptr[i + 1]; p++) {
            ref += A.values[p] * x[static_cast<size_t>(A.indices[p])];
            mag += std::fabs(A.values[p] * x[static_cast<size_t>(A.indices[p])]);
        }
        worst =
            std::fmax(worst, std::fabs(y[static_cast<size_t>(i)] - ref) / (mag > 0 ? mag : 1.0));
    }
    std::printf("ysum %.17g\n", std::accumulate(y.begin(), y.end(), 0.0));
    std::printf("max_rel_err %.3g\n", worst);
    std::printf("measured_ms %.6g\n", t.median_ms);
    example_csr_free(&A);
    return worst <= 1e-12 ? 0 : 1;
}
