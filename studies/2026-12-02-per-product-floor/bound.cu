// Probe: the fastest a kernel can move each kernels_floor pair's bytes when timed as the floor
// benchmark times a product: each launch between its own pair of events, a batch of 32 queued
// behind a gate (kernels/plan.cu's timed_batch), median of 96.  The kernel only streams: it reads
// (bytes - y) with 16-byte loads, four in flight a thread, and writes y's bytes, no gathers and
// no dependent loads.  Whatever an SpMV kernel adds to that, it cannot take less time than this
// kernel does on the same bytes, so its time bounds the benchmark's eff_frac from above.
//
// Input (stdin): lines "matrix dtype nrows floor_bytes fewest_bytes", fewest_bytes being the
// fewest any configuration of the pair moves (the table formats move less than CSR's floor).
// Output (stdout): one CSV row a pair, shape and load kind, bytes streamed: the median per-event
// time and the per-product time in runs of 16 back to back (also between two events, gated).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

#define CK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s, line %d: %s\n", #x, __LINE__, cudaGetErrorString(e_));            \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static __device__ unsigned long long gpu_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* Holds the stream until the host has queued the batch (open[0]); says in open[1] if it gave up. */
__global__ void gate(volatile int *open) {
    unsigned long long t0 = gpu_ns();
    while (open[0] == 0)
        if (gpu_ns() - t0 > 200000000ULL) {
            open[1] = 1;
            return;
        }
}

/* EVICT: loads marked evict-first (__ldcs), as our kernels load their matrix; otherwise __ldg,
 * which lets the bytes stay in the L2 from one product to the next. */
template <bool EVICT>
__global__ void stream(const int4 *__restrict__ a, long long n16, int4 *__restrict__ y,
                       long long ny16) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long s = (long long)gridDim.x * blockDim.x, i = t;
    int acc = 0;
    for (; i + 3 * s < n16; i += 4 * s) {
        int4 v[4];
#pragma unroll
        for (int u = 0; u < 4; u++) v[u] = EVICT ? __ldcs(a + i + u * s) : __ldg(a + i + u * s);
#pragma unroll
        for (int u = 0; u < 4; u++) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    for (; i < n16; i += s) {
        int4 v = EVICT ? __ldcs(a + i) : __ldg(a + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    for (long long j = t; j < ny16; j += s) y[j] = make_int4(acc, (int)j, acc, 1);
}

struct Timer {
    cudaStream_t s;
    int *gate_host, *gate_dev;
    cudaEvent_t ev[64];
};

/* Median per-product microseconds over `batches` gated batches of 32 timings, each timing a run of
 * `run` launches between its own events. */
template <class F> static double timed(Timer &T, F launch, int run, int batches) {
    std::vector<double> us;
    for (int b = 0; b < batches; b++) {
        T.gate_host[0] = T.gate_host[1] = 0;
        __sync_synchronize();
        gate<<<1, 1, 0, T.s>>>((volatile int *)T.gate_dev);
        for (int k = 0; k < 32; k++) {
            CK(cudaEventRecord(T.ev[2 * k], T.s));
            for (int r = 0; r < run; r++) launch();
            CK(cudaEventRecord(T.ev[2 * k + 1], T.s));
        }
        __sync_synchronize();
        T.gate_host[0] = 1;
        CK(cudaStreamSynchronize(T.s));
        CK(cudaGetLastError());
        if (T.gate_host[1]) {
            b--; /* the gate gave up before the batch was queued: time it again */
            continue;
        }
        for (int k = 0; k < 32; k++) {
            float ms;
            CK(cudaEventElapsedTime(&ms, T.ev[2 * k], T.ev[2 * k + 1]));
            us.push_back(ms * 1e3 / run);
        }
    }
    std::sort(us.begin(), us.end());
    return us[us.size() / 2];
}

int main() {
    Timer T;
    CK(cudaHostAlloc(&T.gate_host, 8, cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer(&T.gate_dev, T.gate_host, 0));
    CK(cudaStreamCreateWithFlags(&T.s, cudaStreamNonBlocking));
    for (auto &e : T.ev) CK(cudaEventCreate(&e));
    int sm;
    CK(cudaDeviceGetAttribute(&sm, cudaDevAttrMultiProcessorCount, 0));

    /* the copy bandwidth as the benchmark measures it: 1 GiB device to device, read + write */
    size_t big = 1ull << 30;
    void *c0, *c1;
    CK(cudaMalloc(&c0, big));
    CK(cudaMalloc(&c1, big));
    CK(cudaMemset(c0, 1, big));
    std::vector<double> cms;
    for (int r = 0; r < 20; r++) {
        CK(cudaEventRecord(T.ev[0], T.s));
        CK(cudaMemcpyAsync(c1, c0, big, cudaMemcpyDeviceToDevice, T.s));
        CK(cudaEventRecord(T.ev[1], T.s));
        CK(cudaEventSynchronize(T.ev[1]));
        float ms;
        CK(cudaEventElapsedTime(&ms, T.ev[0], T.ev[1]));
        cms.push_back(ms);
    }
    std::sort(cms.begin(), cms.end());
    double copy_gbs = 2.0 * big / (cms[cms.size() / 2] * 1e-3) / 1e9;
    CK(cudaFree(c0));
    CK(cudaFree(c1));

    size_t abytes = 256ull << 20, ybytes = 64ull << 20;
    int4 *a, *y;
    CK(cudaMalloc(&a, abytes));
    CK(cudaMalloc(&y, ybytes));
    CK(cudaMemset(a, 3, abytes));
    /* an empty launch, timed the same way: what a product costs before it moves a byte */
    double empty_us = timed(
        T, [&] { stream<true><<<1, 32, 0, T.s>>>(a, 0, y, 0); }, 1, 3);
    printf("copy_gbs,%.1f\nempty_us,%.3f\nsms,%d\n", copy_gbs, empty_us, sm);
    printf("matrix,dtype,nrows,floor_bytes,which,bytes,load,grid,event_us,b2b_us\n");

    char name[512], dtype[16];
    long long nrows, floor_b, fewest;
    while (scanf("%511s %15s %lld %lld %lld", name, dtype, &nrows, &floor_b, &fewest) == 5) {
        long long yb = nrows * (strcmp(dtype, "float32") == 0 ? 4 : 8);
        long long sizes[2] = {floor_b, fewest};
        for (int w = 0; w < 2; w++) {
            if (w == 1 && fewest >= floor_b) break; /* no configuration moves less than CSR */
            long long n16 = (sizes[w] - yb) / 16, ny16 = (yb + 15) / 16;
            if (n16 < 0 || n16 * 16 > (long long)abytes || ny16 * 16 > (long long)ybytes) {
                fprintf(stderr, "%s %s: %lld bytes do not fit the probe's buffers\n", name, dtype,
                        sizes[w]);
                continue;
            }
            /* three shapes: a few waves of big blocks, many small blocks, one 16-byte load a thread */
            long long grids[3] = {sm * 4, sm * 16, std::max(1LL, (n16 + 255) / 256)};
            for (int evict = 0; evict < 2; evict++)
                for (long long g : grids) {
                    int bs = g == sm * 4 ? 512 : 256;
                    auto launch = [&] {
                        if (evict)
                            stream<true><<<(unsigned)g, bs, 0, T.s>>>(a, n16, y, ny16);
                        else
                            stream<false><<<(unsigned)g, bs, 0, T.s>>>(a, n16, y, ny16);
                    };
                    for (int k = 0; k < 5; k++) launch();
                    double ev = timed(T, launch, 1, 3), bb = timed(T, launch, 16, 1);
                    printf("%s,%s,%lld,%lld,%s,%lld,%s,%lld,%.3f,%.3f\n", name, dtype, nrows,
                           floor_b, w ? "fewest" : "floor", sizes[w], evict ? "evict_first" : "ldg",
                           g, ev, bb);
                }
        }
        fflush(stdout);
    }
    return 0;
}
