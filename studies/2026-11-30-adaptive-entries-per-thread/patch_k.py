"""Patch kernels/csr.cu for this study only (never committed): csr/adaptive's K from SPMV_PROBE_ADAPTIVE_K."""
# SPDX-License-Identifier: BSD-3-Clause
from pathlib import Path

p = Path("kernels/csr.cu")
s = p.read_text()
old = """static int32_t adaptive_width(int block) {
    int64_t w = (int64_t)block * ADAPTIVE_K;"""
new = """static int32_t adaptive_width(int block) {
    const char *probe_k = getenv("SPMV_PROBE_ADAPTIVE_K");
    int64_t w = (int64_t)block * (probe_k ? atoi(probe_k) : ADAPTIVE_K);"""
assert old in s, "kernels/csr.cu's adaptive_width changed: patch by hand"
p.write_text(s.replace(old, new))
