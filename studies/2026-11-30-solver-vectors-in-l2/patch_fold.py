"""Device-only probe patch: SPMV_PROBE_NOFOLD=1 turns the folded residual step off,
applied to the tree of aaa434b (run from its root; the
switches are for this study only and were never committed)."""
# SPDX-License-Identifier: BSD-3-Clause
from pathlib import Path

p = Path("kernels/krylov_cg.cu"); s = p.read_text()
old = "#define FOLD_PARTIALS_MAX 4096"
assert old in s
s = s.replace(old, "#include <cstdlib>\n#define FOLD_PARTIALS_MAX (getenv(\"SPMV_PROBE_NOFOLD\") ? 0 : 4096)", 1)
p.write_text(s)
print("patched fold")
