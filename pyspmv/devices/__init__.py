"""Running products: the CPU threads and this machine, the GPU module, SpMV calls and timed benchmarks."""
# SPDX-License-Identifier: BSD-3-Clause
