"""OpenMP's wait policy for the core's threads, set before the core loads the OpenMP runtime:
``pyspmv/__init__.py`` imports this module before anything that imports ``pyspmv._core``."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import os

#: OpenMP threads waiting for work sleep instead of spinning (``OMP_WAIT_POLICY=passive``) unless the
#: environment says otherwise. Under libgomp's default (each waiting thread spins for about 3 ms
#: first), a product on a machine where other work runs waits at its closing barrier for a thread
#: the scheduler took away, while the spinning threads keep the cores that thread needs: on the
#: 2-core dev VM beside other processes, products of 0.01 to 0.13 ms took 8 to 18 ms; passive, 0.03
#: to 0.27 ms (benchmarks/results/busy_machine.md). A short spin (``GOMP_SPINCOUNT=10000``, about
#: 0.1 ms) did no better there: up to 9.9x the quiet time (busy_machine_spin10k.md). Passive, each
#: threaded product pays for waking its threads, about 0.04 ms on the idle VM, so that there one
#: thread beat two up to about 250,000 entries: the kernels start their threads from that size on
#: (``SPMV_OMP_MIN_WORK``; benchmarks/results/omp_wait.md). ``OMP_WAIT_POLICY=active`` spins without
#: end, which a machine of one's own can afford; a build with ``-Dc_args=-DSPMV_OMP_MIN_WORK=4000``
#: then threads products from 4,000 entries, 1.85x faster from 4,000 to 200,000 in geometric mean
#: (omp_wait_4000.md). libgomp and
#: LLVM's libomp read the variable once, when the runtime is loaded: one that another library loaded
#: before pyspmv keeps its own policy. Child processes inherit the variable.
WAIT_POLICY = os.environ.setdefault("OMP_WAIT_POLICY", "passive")
