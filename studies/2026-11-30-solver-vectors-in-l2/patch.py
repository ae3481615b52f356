"""The switches this study's A/Bs turned, patched into the CUDA sources of the tree each ran on (from the tree's root:
``python patch.py modes|fold|prio``); for this study only, never committed.

- ``modes`` (tree 73509de, ``modes.py``): ``SPMV_PROBE_SEPARATE=1`` one allocation a vector, as before the slab;
  ``SPMV_PROBE_PAD=B`` B bytes between the slab's vectors; ``SPMV_PROBE_NOZERO=1`` no attribute where the window is
  empty; ``SPMV_PROBE_NONODE=1`` the window on the stream only, not on the graph's nodes.
- ``fold`` (tree aaa434b, ``fold_ab.py``): ``SPMV_PROBE_NOFOLD=1`` never folds ``p . q`` into the residual step.
- ``prio`` (tree 7af83fd, ``prio_ab.py``): ``SPMV_PROBE_NOPRIO=1`` the solver's stream at the least priority.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import sys
from pathlib import Path

PROBE = "#include <cstdlib>\nstatic int probe(const char *n) { const char *v = getenv(n); return v && *v == '1'; }\n"
SEPARATE = """    if (probe("SPMV_PROBE_SEPARATE")) {
        for (int i = 0; i < c; i++) { int r = spmv_cuda_malloc(order[i], stride, "v", err); if (r) return r; }
        k->slab = NULL;
        return SPMV_OK;
    }
    if (getenv("SPMV_PROBE_PAD")) stride += atoll(getenv("SPMV_PROBE_PAD"));
"""
PAD = '(vector_stride(k) + (getenv("SPMV_PROBE_PAD") ? atoll(getenv("SPMV_PROBE_PAD")) : 0)) * hot;'
FREE = """    if (k->slab == NULL) {
        void *vv[] = {k->b, k->x, k->r, k->z, k->q, k->p, k->rhat, k->phat, k->v, k->shat, k->t, k->u};
        for (void *e : vv) cudaFree(e);
    }
"""
NOZERO = '    if (probe("SPMV_PROBE_NOZERO") && v.accessPolicyWindow.num_bytes == 0) return SPMV_OK;\n'
NONODE = ('    if (probe("SPMV_PROBE_NONODE") || (probe("SPMV_PROBE_NOZERO") && k->l2_window.num_bytes == 0))\n'
          '        return cudaSuccess;\n')

#: switch: (file, text found, text put in its place) in order; each text must be found once.
EDITS: dict[str, list[tuple[str, str, str]]] = {
    "modes": [
        ("kernels/krylov_l2.cu", '#include "krylov.cuh"\n', '#include "krylov.cuh"\n' + PROBE),
        ("kernels/krylov_l2.cu", '    int rc = spmv_cuda_malloc(&k->slab,', SEPARATE + '    int rc = spmv_cuda_malloc(&k->slab,'),
        ("kernels/krylov_l2.cu", "    if (!k->l2 || hot == 0) return w;", "    if (!k->l2 || hot == 0 || k->slab == NULL) return w;"),
        ("kernels/krylov_l2.cu", "vector_stride(k) * hot;", PAD),
        ("kernels/krylov_l2.cu", "    return spmv_cuda_status(cudaStreamSetAttribute(",
         NOZERO + "    return spmv_cuda_status(cudaStreamSetAttribute("),
        ("kernels/krylov_l2.cu", "    size_t count = 0;\n", NONODE + "    size_t count = 0;\n"),
        ("kernels/krylov.cu", "    l2_release(k);\n", "    l2_release(k);\n" + FREE),
    ],
    "fold": [("kernels/krylov_cg.cu", "#define FOLD_PARTIALS_MAX 4096",
              '#include <cstdlib>\n#define FOLD_PARTIALS_MAX (getenv("SPMV_PROBE_NOFOLD") ? 0 : 4096)')],
    "prio": [("kernels/krylov.cu", "cudaStreamNonBlocking, greatest)",
              'cudaStreamNonBlocking, getenv("SPMV_PROBE_NOPRIO") ? least : greatest)')],
}


def main() -> None:
    for path, old, new in EDITS[sys.argv[1]]:
        p = Path(path)
        s = p.read_text()
        if s.count(old) != 1:
            raise SystemExit(f"{path}: {old!r} found {s.count(old)} times, not once: another tree than this switch's")
        p.write_text(s.replace(old, new))
    print("patched", sys.argv[1])


if __name__ == "__main__":
    main()
