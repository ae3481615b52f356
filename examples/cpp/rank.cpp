// examples/cpp/rank.cpp: examples/c/rank.c in C++17 — rank, convert to the pick's format, multiply
// SPDX-License-Identifier: BSD-3-Clause
//
// Usage: rank_cpp [FILE.mtx]   (no file: the 2D Poisson matrix of a 40 x 40 grid)
//
// spmv.h is C with extern "C" guards: a C++ program includes it as it is and links libspmv.  The
// exported model stays in its C translation unit (ranker.c).  Prints the lines rank.c prints.
#include <spmv.h>
#include <spmv_version.h>

#include <cmath>
#include <cstdio>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "mtx.h"
#include "ranker.h"

namespace {

void check(int rc, const spmv_err &err, const char *what) {
    if (rc != 0)
        throw std::runtime_error(std::string(what) + ": " +
                                 (err.msg[0] ? err.msg : spmv_strerror(rc)));
}

// A matrix in one storage format, its arrays owned by vectors.
struct Converted {
    spmv_fmt F{};
    std::vector<std::vector<int32_t>> idx;
    std::vector<std::vector<double>> val;

    Converted(const spmv_csr &A, const double *values, int format, const int32_t *param) {
        spmv_err err{};
        F.format = format;
        F.nrows = A.nrows;
        F.ncols = A.ncols;
        F.param[0] = param[0];
        F.param[1] = param[1];
        check(spmv_fmt_size(&A, &F, &err), err, "size");
        for (int s = 0; s < SPMV_MAXIDX; s++) {
            idx.emplace_back(static_cast<size_t>(F.nidx[s]));
            F.idx[s] = F.nidx[s] ? idx.back().data() : nullptr;
        }
        for (int s = 0; s < SPMV_MAXVAL; s++) {
            val.emplace_back(static_cast<size_t>(F.nval[s]));
            F.val[s] = F.nval[s] ? val.back().data() : nullptr;
        }
        check(spmv_fmt_fill_f64(&A, values, &F, &err), err, "fill");
    }
    Converted(const Converted &) = delete;
    Converted &operator=(const Converted &) = delete;

    std::vector<double> operator()(int kernel, const std::vector<double> &x) const {
        std::vector<double> y(static_cast<size_t>(F.nrows));
        spmv_err err{};
        check(spmv_fmt_mv_f64(&F, kernel, x.data(), y.data(), &err), err, "product");
        return y;
    }
};

int run(int argc, char **argv) {
    example_csr A{};
    char msg[160] = "";
    int rc = argc > 1 ? example_read_mtx(argv[1], &A, msg) : example_poisson2d(40, &A);
    if (rc != 0) throw std::runtime_error(msg[0] ? msg : spmv_strerror(rc));
    struct Free {
        example_csr *A;
        ~Free() { example_csr_free(A); }
    } free_A{&A};
    std::printf("library %s\n", spmv_version());
    std::printf("matrix %d %d %lld\n", A.nrows, A.ncols, static_cast<long long>(A.indptr[A.nrows]));

    // 1. Rank; the pick is the first CPU configuration that can serve A.
    const int n = ranker_count();
    std::vector<int> order(static_cast<size_t>(n));
    std::vector<double> ms(static_cast<size_t>(n));
    check(ranker_rank(A.nrows, A.ncols, A.indptr, A.indices, order.data(), ms.data()), spmv_err{},
          "ranking");
    spmv_err err{};
    spmv_config c{};
    const spmv_kernel_desc *k = nullptr;
    int pick = -1;
    for (int j : order) {
        if (!std::isfinite(ms[static_cast<size_t>(j)]) ||
            spmv_config_parse(ranker_config_id(j), &c, &err) != 0)
            continue;
        k = spmv_kernel_get(c.kernel);
        if (k->device == SPMV_DEV_CPU) {
            pick = j;
            break;
        }
    }
    if (pick < 0) throw std::runtime_error("no CPU configuration can serve this matrix");
    std::printf("pick %s\n", ranker_config_id(pick));
    std::printf("predicted_ms %.6g\n", ms[static_cast<size_t>(pick)]);

    // 2. Convert once, 3. multiply with the format's own kernel, check against CSR.
    const spmv_csr P{A.nrows, A.ncols, A.indptr, A.indices};
    const Converted M(P, A.values, k->format, c.param);
    std::printf("format %s\n", spmv_format_name(M.F.format));
    std::printf("bytes %lld\n", static_cast<long long>(spmv_fmt_bytes(&M.F, 8)));
    std::vector<double> x(static_cast<size_t>(A.ncols));
    for (size_t j = 0; j < x.size(); j++) x[j] = 1.0 + 0.25 * static_cast<double>(j % 7);
    const std::vector<double> y = M(k->kernel, x);
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
    return worst <= 1e-12 ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "rank_cpp: %s\n", e.what());
        return 2;
    }
}
