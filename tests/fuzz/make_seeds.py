#!/usr/bin/env python3
# tests/fuzz/make_seeds.py: writes the small seed corpora of tests/fuzz/corpus/ (rerun after a change of encoding)
# SPDX-License-Identifier: BSD-3-Clause
"""Each seed follows the byte layout its harness decodes (see the harness's header comment and
fuzz_common.h); inputs that end early read as zeros, so a seed only spells out its start.  A
seeded random tail gives the fuzzer varied material without making the corpus large."""
import os
import random
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
rng = random.Random(11)


def u16(v):
    return struct.pack("<H", v)


def tail(n):
    return bytes(rng.randrange(256) for _ in range(n))


def band(nrows, ncols, width=3):
    """fz_csr_decode program: one explicit row of `width` adjacent columns, then the band."""
    return bytes([0]) + u16(nrows - 1) + u16(ncols - 1) + bytes([width] + [0] * width) + \
        bytes([0x80 | 63, 1]) + bytes([0x80 | 63, 1]) * ((nrows - 1) // 64)


def irregular(nrows, ncols):
    """Explicit rows of varied length, a long row, and shifted copies."""
    return bytes([0]) + u16(nrows - 1) + u16(ncols - 1) + bytes(
        [0x02, 0, 5, 0x00, 0xC3]) + u16(3) + bytes([1, 0x41, 0x05, 1, 1, 1, 255]) + u16(200) + bytes([0, 0x5F])


def write(harness, name, data):
    d = os.path.join(HERE, "corpus", harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# fuzz_csr_features: byte 0 (bit 0: raw path, bit 1: err NULL, bit 2: lookups), GPU props byte.
write("csr_features", "band", bytes([0, 0]) + band(200, 200))
write("csr_features", "irregular", bytes([4, 0]) + irregular(40, 300) + tail(8))
write("csr_features", "raw", bytes([1, 0, 0]) + u16(15) + u16(15) + tail(60))
write("csr_features", "raw-odd-sizes", bytes([1, 0, 0x70]) + tail(40))

# fuzz_convert: sel, format byte, two parameter bytes, max_fill, value mode, 4 seed bytes, CSR.
params = {3: (3, 1), 4: (2, 0), 5: (2, 0), 8: (1, 0)}  # sell C=8 sigma=16, bro_ell h=4, hyb K=1, bsr b=2
for f, name in enumerate(["csr", "coo", "ell", "sell", "bro_ell", "hyb", "dia", "jad", "bsr"]):
    p = params.get(f, (0, 0))
    mat = band(64, 64) if f in (2, 6, 7) else irregular(70, 90)
    write("convert", name, bytes([0, f, p[0], p[1], 0, 0]) + tail(4) + mat)

# fuzz_model: sel (bit 0: tame), extra columns byte, then the model: kind byte (kind - 1),
# groups, inputs, ...
for kind, name in enumerate(["linear", "trees", "knn", "svm", "formula", "cascade"]):
    write("model", name, bytes([1, 0, kind, 1, 2]) + tail(120))


# mmread: [kind][nrows][ncols][nentries][err] then the body text (fuzz_mmread.c)
for name, head, body in [
        ("real", bytes([0, 4, 4, 3, 0]), b"1 1 1.5\n2 3 -2e3\n% c\n\n4 4 1D-2\n"),
        ("integer", bytes([2, 3, 3, 2, 0]), b"1 1 7\n3 2 -9223372036854775807\n"),
        ("pattern", bytes([4, 5, 5, 2, 0]), b"1 2\n5 5 3.5\n"),
        ("array", bytes([1, 2, 2, 4, 0]), b"1\n2.5\n-inf\nnan\n"),
        ("crlf", bytes([0, 2, 2, 1, 0]), b"  2\t1   +.5e+1 \r\n"),
        ("bad", bytes([0, 2, 2, 1, 0]), b"1 1 1,5\n2 2 0x1p3 9\n\x00")]:
    write("mmread", name, head + body)


# cidx, appended last so that the seeds above keep their bytes: bits 8 and 16 (bit 0 of the parameter byte),
# on irregular rows and on rows of columns 30,000 apart in 500,000 columns (escape chunks for both).
wide = bytes([1]) + u16(39) + struct.pack("<I", 499_999) + bytes([8]) + (bytes([255]) + u16(30_000)) * 8 + \
    bytes([0x40 | 33]) * 20 + bytes([0xC0 | 3]) + u16(9) + bytes([5])
for b, bits in ((0, 8), (1, 16)):
    write("convert", f"cidx-bits{bits}", bytes([0, 9, b, 0, 0, 0]) + tail(4) + irregular(70, 90))
    write("convert", f"cidx-bits{bits}-wide", bytes([0, 9, b, 0, 0, 0]) + tail(4) + wide)
