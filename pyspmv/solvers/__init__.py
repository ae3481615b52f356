"""Iterative solvers whose SpMV configuration is chosen while they run.

``x, info, rec = pyspmv.solvers.cg(A, b, rtol=1e-8, policy="async")``: CG, BiCGSTAB and restarted
GMRES in float32 and float64, with scipy.sparse.linalg's argument names and info codes, returning a
:class:`SolveRecord` of which configuration ran from which iteration and where the time went.
Policies (:data:`POLICIES`): ``fixed``, ``serial`` (rank, convert, iterate), ``async`` (rank and
convert on a helper thread beside the iterations, switch when ready: Gao et al.) and ``online``
(then time the first picks over a few iterations each and keep the fastest: Li & Suda).

Products run through the C core's kernels, which release the GIL for matrices past 50,000 stored
entries, so ranking and conversion proceed beside them; vector operations use BLAS through
``scipy.linalg.blas`` (the core has none; BLAS measured faster than NumPy's ufuncs, see
``benchmarks/solvers.py``).

``device="cuda"`` iterates on the GPU instead (:mod:`pyspmv.solvers.device`, ``kernels/krylov.cu``):
vectors and the recurrence's scalars stay on the device, the iterations run in C and CUDA, and Python
acts only between chunks of them (policy switches, callbacks). ``M`` preconditions on both devices
(``'jacobi'``, a matrix, a ``LinearOperator`` or a callable).
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

from .krylov import BREAKDOWN, BREAKDOWN_OMEGA, bicgstab, cg, gmres
from .record import SolveRecord
from .setup import expected_iterations
from .switching import DEFAULT_CONFIG, POLICIES

__all__ = ["BREAKDOWN", "BREAKDOWN_OMEGA", "DEFAULT_CONFIG", "POLICIES", "SolveRecord", "bicgstab", "cg",
           "expected_iterations", "gmres"]
