"""tools/fingerprint.py: a digest of what the shipped default models rank, to show a refactoring changed nothing.

``python tools/fingerprint.py`` prints one SHA-256 over the rankings (every configuration's id and score,
written with ``repr``) of the cpu and cuda defaults on 25 generated matrices, for float64 and float32, then a
line per device. Run it before and after a change that must not move a ranking: the digests are equal
to the byte or the change moved one. Nothing is measured (``estimate`` rankings, no GPU needed).
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import hashlib

import pyspmv

#: (kind, size) of the matrices ranked: each generator at sizes from a few rows to about 1e5 entries.
MATRICES = [(kind, n) for kind, sizes in {
    "poisson2d": (5, 12, 30, 70, 150), "poisson3d": (4, 8, 14, 20, 30), "random": (10, 100, 1000, 5000, 12000),
    "powerlaw": (10, 100, 1000, 5000, 12000), "banded": (10, 100, 1000, 5000, 20000)}.items()
    for n in sizes]


def digest(device: str) -> str:
    """The SHA-256 of the default model's rankings of :data:`MATRICES` on ``device``."""
    h = hashlib.sha256()
    for kind, n in MATRICES:
        A = pyspmv.generate(kind, n)
        for dtype in ("float64", "float32"):
            r = pyspmv.rank(A, device=device, dtype=dtype, estimate=True)
            h.update(repr([(c, float(s)) for c, s in r]).encode())
    return h.hexdigest()


def main() -> None:
    per = {d: digest(d) for d in ("cpu", "cuda")}
    print(hashlib.sha256("".join(per.values()).encode()).hexdigest())
    for d, v in per.items():
        print(f"{d}: {v}")


if __name__ == "__main__":
    main()
