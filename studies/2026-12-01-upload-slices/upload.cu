// Probe: uploading a host array of B bytes: pageable cudaMemcpy against kernels/matrix.cu's staging
// (two page-locked slices of S bytes, allocated per upload, filled by the host's threads), S in 0.5-4 MB.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <omp.h>
#include <vector>
static double now() { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
static void copy_threads(void *dst, const void *src, long bytes) {
    const long piece = 1L << 18, n = (bytes + piece - 1) / piece;
#pragma omp parallel for schedule(static)
    for (long k = 0; k < n; k++) { long o = k * piece, b = bytes - o < piece ? bytes - o : piece; memcpy((char *)dst + o, (const char *)src + o, b); }
}
static double staged(void *dst, const char *src, long bytes, long slice) {
    double t0 = now();
    char *buf; cudaEvent_t ev[2]; int busy[2] = {0, 0};
    cudaHostAlloc((void **)&buf, 2 * slice, cudaHostAllocDefault);
    for (int k = 0; k < 2; k++) cudaEventCreateWithFlags(&ev[k], cudaEventDisableTiming);
    for (long off = 0, k = 0; off < bytes; off += slice, k ^= 1) {
        long b = std::min(slice, bytes - off);
        if (busy[k]) cudaEventSynchronize(ev[k]);
        copy_threads(buf + k * slice, src + off, b);
        cudaMemcpyAsync((char *)dst + off, buf + k * slice, b, cudaMemcpyHostToDevice, 0);
        cudaEventRecord(ev[k], 0); busy[k] = 1;
    }
    for (int k = 0; k < 2; k++) { if (busy[k]) cudaEventSynchronize(ev[k]); cudaEventDestroy(ev[k]); }
    cudaFreeHost(buf);
    return now() - t0;
}
int main() {
    printf("omp threads %d\n", omp_get_max_threads());
    cudaFree(0);
    for (long mb : {20L, 40L, 60L, 120L, 240L}) {
        long bytes = mb << 20;
        char *src = (char *)malloc(bytes); for (long i = 0; i < bytes; i += 4096) src[i] = (char)i; memset(src, 1, bytes);
        void *dst; cudaMalloc(&dst, bytes);
        const long slices[] = {1L << 19, 1L << 20, 1L << 21, 1L << 22};
        std::vector<double> tp, ts[4];
        for (int r = 0; r < 7; r++) {
            double t0 = now(); cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice); tp.push_back(now() - t0);
            for (int s = 0; s < 4; s++) ts[s].push_back(staged(dst, src, bytes, slices[s]));
        }
        auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
        auto lo = [](std::vector<double> v) { return *std::min_element(v.begin(), v.end()); };
        auto hi = [](std::vector<double> v) { return *std::max_element(v.begin(), v.end()); };
        printf("%4ld MB: pageable %.2f ms [%.2f-%.2f]", mb, med(tp), lo(tp), hi(tp));
        for (int s = 0; s < 4; s++) printf(" | slices %.1f MB %.2f [%.2f-%.2f]", slices[s] / 1048576.0, med(ts[s]), lo(ts[s]), hi(ts[s]));
        printf("\n");
        cudaFree(dst); free(src);
    }
    double t0 = now(); char *b; for (int i = 0; i < 5; i++) { cudaHostAlloc((void **)&b, 2L << 20, 0); cudaFreeHost(b); }
    printf("cudaHostAlloc+Free of 2 MB: %.2f ms each\n", (now() - t0) / 5);
    printf("%s\n", cudaGetErrorString(cudaDeviceSynchronize()));
}
