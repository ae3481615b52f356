// Probe: CG's direction map and residual step, variants, timed back to back (events around 200 launches).
#include <cub/block/block_reduce.cuh>
#include <cstdio>
#include <vector>
#define BS 256
struct S_t { double alpha, beta; int pending, first; unsigned count; double tot[2]; };

template <int K> __device__ void finish(double (&acc)[K], S_t *S, double *part) {
    typedef cub::BlockReduce<double, BS> BR;
    __shared__ typename BR::TempStorage tmp;
    __shared__ bool last;
    for (int k = 0; k < K; k++) { double s = BR(tmp).Sum(acc[k]); __syncthreads(); if (threadIdx.x == 0) part[k * gridDim.x + blockIdx.x] = s; }
    if (threadIdx.x == 0) { __threadfence(); unsigned d = atomicAdd(&S->count, 1u); last = d == gridDim.x - 1; }
    __syncthreads();
    if (!last) return;
    for (int k = 0; k < K; k++) { double s = 0; for (unsigned i = threadIdx.x; i < gridDim.x; i += BS) s += __ldcg(&part[k * gridDim.x + i]); s = BR(tmp).Sum(s); __syncthreads(); if (threadIdx.x == 0) S->tot[k] = s; }
    if (threadIdx.x == 0) S->count = 0;
}
// M0: as kernels/krylov_cg.cu's CgDir through map_kernel
struct Dir0 { const double *z; double *p, *x;
  __device__ void operator()(int64_t i, const S_t *S) const { double pi = p[i]; if (S->pending) x[i] += S->alpha * pi; p[i] = S->first ? z[i] : z[i] + S->beta * pi; } };
__global__ void m0(int64_t n, Dir0 f, const S_t *S) { for (int64_t i = blockIdx.x * (int64_t)BS + threadIdx.x; i < n; i += (int64_t)gridDim.x * BS) f(i, S); }
// M1: scalars read once, restrict
__global__ void m1(int64_t n, const double *__restrict__ z, double *__restrict__ p, double *__restrict__ x, const S_t *S) {
  const double a = S->pending ? S->alpha : 0.0, b = S->first ? 0.0 : S->beta;
  for (int64_t i = blockIdx.x * (int64_t)BS + threadIdx.x; i < n; i += (int64_t)gridDim.x * BS) { double pi = p[i]; x[i] += a * pi; p[i] = z[i] + b * pi; } }
// M3: two elements a thread, 16-byte accesses (n even here)
__global__ void m3(int64_t n2, const double2 *__restrict__ z, double2 *__restrict__ p, double2 *__restrict__ x, const S_t *S) {
  const double a = S->pending ? S->alpha : 0.0, b = S->first ? 0.0 : S->beta;
  for (int64_t i = blockIdx.x * (int64_t)BS + threadIdx.x; i < n2; i += (int64_t)gridDim.x * BS) {
    double2 pi = p[i], xi = x[i], zi = z[i];
    xi.x += a * pi.x; xi.y += a * pi.y; x[i] = xi; p[i] = make_double2(zi.x + b * pi.x, zi.y + b * pi.y); } }
// M4: unroll U grid-stride elements, loads first
template <int U> __global__ void m4(int64_t n, const double *__restrict__ z, double *__restrict__ p, double *__restrict__ x, const S_t *S) {
  const double a = S->pending ? S->alpha : 0.0, b = S->first ? 0.0 : S->beta;
  const int64_t st = (int64_t)gridDim.x * BS;
  for (int64_t i0 = blockIdx.x * (int64_t)BS + threadIdx.x; i0 < n; i0 += U * st) {
    double pi[U], xi[U], zi[U];
#pragma unroll
    for (int u = 0; u < U; u++) if (i0 + u * st < n) { pi[u] = p[i0 + u * st]; xi[u] = x[i0 + u * st]; zi[u] = z[i0 + u * st]; }
#pragma unroll
    for (int u = 0; u < U; u++) if (i0 + u * st < n) { x[i0 + u * st] = xi[u] + a * pi[u]; p[i0 + u * st] = zi[u] + b * pi[u]; } } }
// Residual step R0: as CgStep through reduce_kernel<2>
struct Step0 { double *r; const double *q; const S_t *S;
  __device__ void operator()(int64_t i, double (&acc)[2]) const { double ri = r[i] - S->alpha * q[i]; r[i] = ri; acc[0] += ri * ri; acc[1] += ri * ri; } };
__global__ void r0(int64_t n, Step0 f, S_t *S, double *part) { double acc[2] = {0, 0}; for (int64_t i = blockIdx.x * (int64_t)BS + threadIdx.x; i < n; i += (int64_t)gridDim.x * BS) f(i, acc); finish<2>(acc, S, part); }
__global__ void r1(int64_t n, double *__restrict__ r, const double *__restrict__ q, S_t *S, double *part) {
  const double a = S->alpha; double acc[2] = {0, 0};
  for (int64_t i = blockIdx.x * (int64_t)BS + threadIdx.x; i < n; i += (int64_t)gridDim.x * BS) { double ri = r[i] - a * q[i]; r[i] = ri; acc[0] += ri * ri; acc[1] += ri * ri; }
  finish<2>(acc, S, part); }
template <int U> __global__ void r4(int64_t n, double *__restrict__ r, const double *__restrict__ q, S_t *S, double *part) {
  const double a = S->alpha; double acc[2] = {0, 0}; const int64_t st = (int64_t)gridDim.x * BS;
  for (int64_t i0 = blockIdx.x * (int64_t)BS + threadIdx.x; i0 < n; i0 += U * st) {
    double ri[U], qi[U];
#pragma unroll
    for (int u = 0; u < U; u++) if (i0 + u * st < n) { ri[u] = r[i0 + u * st]; qi[u] = q[i0 + u * st]; }
#pragma unroll
    for (int u = 0; u < U; u++) if (i0 + u * st < n) { double v = ri[u] - a * qi[u]; r[i0 + u * st] = v; acc[0] += v * v; acc[1] += v * v; } }
  finish<2>(acc, S, part); }
__global__ void r3(int64_t n2, double2 *__restrict__ r, const double2 *__restrict__ q, S_t *S, double *part) {
  const double a = S->alpha; double acc[2] = {0, 0};
  for (int64_t i = blockIdx.x * (int64_t)BS + threadIdx.x; i < n2; i += (int64_t)gridDim.x * BS) { double2 ri = r[i], qi = q[i]; ri.x -= a * qi.x; ri.y -= a * qi.y; r[i] = ri; acc[0] += ri.x * ri.x + ri.y * ri.y; acc[1] += ri.x * ri.x + ri.y * ri.y; }
  finish<2>(acc, S, part); }

template <class L> float timeit(L launch, int reps) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  for (int i = 0; i < 20; i++) launch();
  cudaEventRecord(a); for (int i = 0; i < reps; i++) launch(); cudaEventRecord(b); cudaEventSynchronize(b);
  float ms; cudaEventElapsedTime(&ms, a, b); return ms * 1e3f / reps; }
template <class K> unsigned occ_grid(K k, int64_t n, int sms, unsigned cap) {
  int per = 0; cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, k, BS, 0);
  int64_t g = (n + BS - 1) / BS; if (cap == 0) return (unsigned)g; int64_t w = (int64_t)per * sms; if (g > cap) g = cap; if (w < g) g = w; return (unsigned)g; }
__global__ void fill(int64_t n, double *a, unsigned seed) { for (int64_t i = blockIdx.x * (int64_t)BS + threadIdx.x; i < n; i += (int64_t)gridDim.x * BS) { unsigned h = (unsigned)i * 2654435761u ^ seed; a[i] = 1.0 + (h % 1000) * 1e-3; } }
int main(int argc, char **argv) {
  int mode = argc > 1 ? atoi(argv[1]) : 0; // 0 plain, 1 slab+random, 2 slab+random+window
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  for (int64_t n : {(int64_t)1000000, (int64_t)1960000, (int64_t)4000000, (int64_t)9000000}) {
    double *z, *p, *x, *part, *slab = 0; S_t *S; size_t B = n * sizeof(double);
    if (mode == 0) { cudaMalloc(&z, B); cudaMalloc(&p, B); cudaMalloc(&x, B); cudaMemset(z, 0, B); cudaMemset(p, 0, B); cudaMemset(x, 0, B); }
    else { size_t st = (B + 511) / 512 * 512; cudaMalloc(&slab, 6 * st); p = slab; z = (double *)((char *)slab + st); x = (double *)((char *)slab + 3 * st);
      fill<<<1024, BS>>>(n, p, 1); fill<<<1024, BS>>>(n, z, 2); fill<<<1024, BS>>>(n, x, 3); fill<<<1024, BS>>>(n, (double *)((char *)slab + 2 * st), 4);
      if (mode == 2) { size_t mx = 0; cudaDeviceGetAttribute((int *)&mx, cudaDevAttrMaxPersistingL2CacheSize, 0); cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, mx); size_t now; cudaDeviceGetLimit(&now, cudaLimitPersistingL2CacheSize);
        cudaStreamAttrValue a = {}; a.accessPolicyWindow.base_ptr = slab; a.accessPolicyWindow.num_bytes = 4 * st; a.accessPolicyWindow.hitRatio = now >= 4 * st ? 1.f : (float)now / (4.0 * st);
        a.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting; a.accessPolicyWindow.missProp = cudaAccessPropertyStreaming; cudaStreamSetAttribute(0, cudaStreamAttributeAccessPolicyWindow, &a);
        printf("window %zu bytes, set-aside %zu, hitRatio %.3f\n", 4 * st, now, a.accessPolicyWindow.hitRatio); } }
    cudaMalloc(&part, 1 << 20); cudaMalloc(&S, sizeof(S_t));
    S_t h = {1e-3, 0.5, 1, 0, 0, {0, 0}}; cudaMemcpy(S, &h, sizeof h, cudaMemcpyHostToDevice);
    double mb5 = 5.0 * B / 1e6, mb3 = 3.0 * B / 1e6;
    for (unsigned cap : {1024u}) {
      unsigned g0 = occ_grid(m0, n, sms, cap), g1 = occ_grid(m1, n, sms, cap), g3 = occ_grid(m3, n / 2, sms, cap), g4 = occ_grid(m4<4>, n, sms, cap), g42 = occ_grid(m4<2>, n, sms, cap);
      float t0 = timeit([&] { m0<<<g0, BS>>>(n, Dir0{z, p, x}, S); }, 200);
      float t1 = timeit([&] { m1<<<g1, BS>>>(n, z, p, x, S); }, 200);
      float t3 = timeit([&] { m3<<<g3, BS>>>(n / 2, (double2 *)z, (double2 *)p, (double2 *)x, S); }, 200);
      float t4 = timeit([&] { m4<4><<<g4, BS>>>(n, z, p, x, S); }, 200);
      float t42 = timeit([&] { m4<2><<<g42, BS>>>(n, z, p, x, S); }, 200);
      printf("n %lld cap %u dir (5 vec-passes %.0f MB): m0 %.2f us (g %u, %.0f GB/s) m1 %.2f (%.0f) m3-double2 %.2f (%.0f) m4u4 %.2f (%.0f) m4u2 %.2f (%.0f)\n",
             (long long)n, cap, mb5, t0, g0, mb5 / t0 * 1e3, t1, mb5 / t1 * 1e3, t3, mb5 / t3 * 1e3, t4, mb5 / t4 * 1e3, t42, mb5 / t42 * 1e3);
      unsigned c = 1024u; // partials buffer: the reduction keeps at most 1024 blocks
      unsigned h0 = occ_grid(r0, n, sms, c), h1 = occ_grid(r1, n, sms, c), h3 = occ_grid(r3, n / 2, sms, c), h4 = occ_grid(r4<4>, n, sms, c), h42 = occ_grid(r4<2>, n, sms, c);
      float s0 = timeit([&] { r0<<<h0, BS>>>(n, Step0{p, z, S}, S, part); }, 200);
      float s1 = timeit([&] { r1<<<h1, BS>>>(n, p, z, S, part); }, 200);
      float s3 = timeit([&] { r3<<<h3, BS>>>(n / 2, (double2 *)p, (double2 *)z, S, part); }, 200);
      float s4 = timeit([&] { r4<4><<<h4, BS>>>(n, p, z, S, part); }, 200);
      float s42 = timeit([&] { r4<2><<<h42, BS>>>(n, p, z, S, part); }, 200);
      printf("n %lld cap %u step (3 vec-passes %.0f MB): r0 %.2f us (g %u, %.0f GB/s) r1 %.2f (%.0f) r3-double2 %.2f (%.0f) r4u4 %.2f (%.0f) r4u2 %.2f (%.0f)\n",
             (long long)n, c, mb3, s0, h0, mb3 / s0 * 1e3, s1, mb3 / s1 * 1e3, s3, mb3 / s3 * 1e3, s4, mb3 / s4 * 1e3, s42, mb3 / s42 * 1e3);
    }
    if (mode == 0) { cudaFree(z); cudaFree(p); cudaFree(x); } else cudaFree(slab); cudaFree(part); cudaFree(S);
    if (mode == 2) { cudaStreamAttrValue a = {}; cudaStreamSetAttribute(0, cudaStreamAttributeAccessPolicyWindow, &a); cudaCtxResetPersistingL2Cache(); }
  }
  printf("%s\n", cudaGetErrorString(cudaDeviceSynchronize()));
}
