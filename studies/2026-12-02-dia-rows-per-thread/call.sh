# As it ran on the device: .device/mc.py is sanitize.py here (then without its last two matrices),
# .device/ab_dia.py is ab_dia.py (which imported copy_bandwidth from pyspmv.devices.gpu, the same
# function as benchmarks/_internal.gpu).
set -u
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target .device/bk .device/whl/*.whl
export PYTHONPATH=$PWD/.device/bk PATH=$PWD/.device/bk/bin:$PATH
python3 -m pip install -q --no-build-isolation --no-deps . 2>&1 | tail -3
export PYTHONPATH=
echo "== tests, rpt 4 (whole GPU suite)"
SPMV_PROBE_DIA_RPT=4 timeout 150 python3 -P -m pytest -m gpu tests/test_gpu.py tests/test_gpu_solvers.py -q -x -p no:cacheprovider 2>&1 | tail -2
echo "== tests, rpt 2"
SPMV_PROBE_DIA_RPT=2 timeout 90 python3 -P -m pytest -m gpu tests/test_gpu.py -k "every_config_matches or streams_past" -q -x -p no:cacheprovider 2>&1 | tail -2
cd /tmp
CS=/usr/local/cuda/bin/compute-sanitizer
for r in 4 2; do for tool in memcheck racecheck; do
  echo "== $tool rpt $r"
  SPMV_PROBE_DIA_RPT=$r timeout 120 $CS --tool $tool --print-limit 5 python3 $R/.device/mc.py 2>&1 | grep -v Warn | tail -3
done; done
echo "== A/B"
timeout 280 python3 $R/.device/ab_dia.py $OUT 2>&1 | grep -v Warn | tail -40
