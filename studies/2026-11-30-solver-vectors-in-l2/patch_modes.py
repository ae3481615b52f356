"""Device-only probe patch: env-selected layouts and attributes of the solver's L2 window,
applied to the tree of 73509de (run from its root; the
switches are for this study only and were never committed)."""
# SPDX-License-Identifier: BSD-3-Clause
from pathlib import Path

p = Path("kernels/krylov_l2.cu"); s = p.read_text()
s = s.replace('#include "krylov.cuh"', '#include "krylov.cuh"\n#include <cstdlib>\nstatic int probe(const char *n) { const char *v = getenv(n); return v && *v == \'1\'; }', 1)
old = '''    int64_t stride = vector_stride(k);
    int rc = spmv_cuda_malloc(&k->slab, stride * c, "the solver's vectors", err);'''
assert old in s
s = s.replace(old, '''    int64_t stride = vector_stride(k);
    if (probe("SPMV_PROBE_SEPARATE")) {
        for (int i = 0; i < c; i++) { int r = spmv_cuda_malloc(order[i], stride, "v", err); if (r) return r; }
        k->slab = NULL;
        return SPMV_OK;
    }
    if (getenv("SPMV_PROBE_PAD")) stride += atoll(getenv("SPMV_PROBE_PAD"));
    int rc = spmv_cuda_malloc(&k->slab, stride * c, "the solver's vectors", err);''', 1)
old = '''    if (!k->l2 || hot == 0) return w;'''
assert old in s
s = s.replace(old, '''    if (!k->l2 || hot == 0 || k->slab == NULL) return w;''', 1)
old = '''    int64_t bytes = vector_stride(k) * hot;'''
assert old in s
s = s.replace(old, '''    int64_t bytes = (vector_stride(k) + (getenv("SPMV_PROBE_PAD") ? atoll(getenv("SPMV_PROBE_PAD")) : 0)) * hot;''', 1)
old = '''    k->l2_window = v.accessPolicyWindow;
    return spmv_cuda_status('''
assert old in s
s = s.replace(old, '''    k->l2_window = v.accessPolicyWindow;
    if (probe("SPMV_PROBE_NOZERO") && v.accessPolicyWindow.num_bytes == 0) return SPMV_OK;
    return spmv_cuda_status(''', 1)
old = '''    size_t count = 0;
    cudaError_t e = cudaGraphGetNodes(g, NULL, &count);'''
assert old in s
s = s.replace(old, '''    if (probe("SPMV_PROBE_NONODE") || (probe("SPMV_PROBE_NOZERO") && k->l2_window.num_bytes == 0))
        return cudaSuccess;
    size_t count = 0;
    cudaError_t e = cudaGraphGetNodes(g, NULL, &count);''', 1)
p.write_text(s)
p = Path("kernels/krylov.cu"); s = p.read_text()
old = '''    l2_release(k);'''
assert old in s
s = s.replace(old, '''    l2_release(k);
    if (k->slab == NULL) {
        void *vv[] = {k->b, k->x, k->r, k->z, k->q, k->p, k->rhat, k->phat, k->v, k->shat, k->t, k->u};
        for (void *e : vv) cudaFree(e);
    }''', 1)
p.write_text(s)
print("patched")
