"""Device-only probe patch: SPMV_PROBE_NOPRIO=1 creates the solver's stream at the least priority,
applied to the tree of 7af83fd (run from its root; the
switches are for this study only and were never committed)."""
# SPDX-License-Identifier: BSD-3-Clause
from pathlib import Path

p = Path("kernels/krylov.cu"); s = p.read_text()
old = "cudaStreamCreateWithPriority(&k->s, cudaStreamNonBlocking, greatest)"
assert old in s
s = s.replace(old, "cudaStreamCreateWithPriority(&k->s, cudaStreamNonBlocking, getenv(\"SPMV_PROBE_NOPRIO\") ? least : greatest)", 1)
p.write_text(s)
print("patched prio")
