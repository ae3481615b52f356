// Probe: what does timing each product between its own events (behind a gate) add, against
// back-to-back runs timed as a whole?  Empty kernel and a streaming kernel at several sizes.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("ERR %s line %d: %s\n", #x, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)

__device__ unsigned long long gns() { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
__global__ void gate(volatile int *open) { unsigned long long t0 = gns(); while (open[0] == 0) if (gns() - t0 > 200000000ULL) { open[1] = 1; return; } }
__global__ void nop() {}
__global__ void stream(const int4 *__restrict__ a, long n16, float *__restrict__ y, long ny) {
    long t = blockIdx.x * (long)blockDim.x + threadIdx.x, st = (long)gridDim.x * blockDim.x;
    int s = 0;
    for (long i = t; i < n16; i += 4 * st) {
        int4 v[4];
#pragma unroll
        for (int u = 0; u < 4; u++) v[u] = i + u * st < n16 ? __ldg(a + i + u * st) : make_int4(0, 0, 0, 0);
#pragma unroll
        for (int u = 0; u < 4; u++) s += v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    for (long i = t; i < ny; i += st) y[i] = (float)(s + i);
}

int main() {
    int *g; CK(cudaHostAlloc(&g, 8, cudaHostAllocMapped)); int *gd; CK(cudaHostGetDevicePointer(&gd, g, 0));
    cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const int B = 32;
    std::vector<cudaEvent_t> ev(2 * B + 2);
    for (auto &e : ev) CK(cudaEventCreate(&e));
    size_t maxb = 200u << 20; int4 *a; float *y; CK(cudaMalloc(&a, maxb)); CK(cudaMalloc(&y, 64u << 20));
    CK(cudaMemset(a, 1, maxb));
    int sm; CK(cudaDeviceGetAttribute(&sm, cudaDevAttrMultiProcessorCount, 0));
    double mbs[] = {0, 2, 5, 10, 20, 40, 80, 160};
    printf("MB  per-event-median_us  back-to-back_us(events around %d)  graph_us  per-event-minus-b2b\n", B);
    for (double mb : mbs) {
        long n16 = (long)(mb * 1e6 * 0.95 / 16), ny = (long)(mb * 1e6 * 0.05 / 4);
        int grid = sm * 8, bs = 256;
        auto launch = [&]() { if (mb == 0) nop<<<1, 32, 0, s>>>(); else stream<<<grid, bs, 0, s>>>(a, n16, y, ny); };
        for (int w = 0; w < 20; w++) launch();
        CK(cudaStreamSynchronize(s));
        std::vector<double> pe, bb, gr;
        for (int rep = 0; rep < 10; rep++) {
            // A: each between its own events, behind the gate (kernels/plan.cu's way)
            g[0] = g[1] = 0; __sync_synchronize();
            gate<<<1, 1, 0, s>>>((volatile int *)gd);
            for (int k = 0; k < B; k++) { CK(cudaEventRecord(ev[2 * k], s)); launch(); CK(cudaEventRecord(ev[2 * k + 1], s)); }
            __sync_synchronize(); g[0] = 1; CK(cudaStreamSynchronize(s));
            for (int k = 0; k < B; k++) { float ms; CK(cudaEventElapsedTime(&ms, ev[2 * k], ev[2 * k + 1])); pe.push_back(ms * 1e3); }
            // B: B back to back between two events, behind the gate
            g[0] = g[1] = 0; __sync_synchronize();
            gate<<<1, 1, 0, s>>>((volatile int *)gd);
            CK(cudaEventRecord(ev[2 * B], s)); for (int k = 0; k < B; k++) launch(); CK(cudaEventRecord(ev[2 * B + 1], s));
            __sync_synchronize(); g[0] = 1; CK(cudaStreamSynchronize(s));
            { float ms; CK(cudaEventElapsedTime(&ms, ev[2 * B], ev[2 * B + 1])); bb.push_back(ms * 1e3 / B); }
        }
        // C: a graph of B launches
        cudaGraph_t gph; cudaGraphExec_t ge;
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal)); for (int k = 0; k < B; k++) launch(); CK(cudaStreamEndCapture(s, &gph));
        CK(cudaGraphInstantiate(&ge, gph, 0));
        CK(cudaGraphLaunch(ge, s)); CK(cudaStreamSynchronize(s));
        for (int rep = 0; rep < 10; rep++) {
            CK(cudaEventRecord(ev[0], s)); CK(cudaGraphLaunch(ge, s)); CK(cudaEventRecord(ev[1], s)); CK(cudaStreamSynchronize(s));
            float ms; CK(cudaEventElapsedTime(&ms, ev[0], ev[1])); gr.push_back(ms * 1e3 / B);
        }
        auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
        printf("%5.0f  %8.2f  %8.2f  %8.2f  %6.2f\n", mb, med(pe), med(bb), med(gr), med(pe) - med(bb));
    }
    printf("late flag %d\n", g[1]);
    return 0;
}
