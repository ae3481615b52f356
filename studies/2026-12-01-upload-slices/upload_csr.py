"""pyspmv's own upload of a CSR (gpu.DeviceMatrix.upload_csr), the C core's staging, for comparison with upload.cu."""
import statistics, time, os
import pyspmv
from pyspmv.devices import gpu
from pyspmv.matrices.mmio import as_matrix
import cupy as cp
print("OMP_NUM_THREADS", os.environ.get("OMP_NUM_THREADS"), "cpus", os.cpu_count())
for size in (1000, 2000):
    M = as_matrix(pyspmv.generate("poisson2d", size).to_scipy().tocsr())
    mb = (M.indptr.nbytes + M.indices.nbytes + M.data.nbytes) / 2**20
    ts, us = [], []
    for r in range(7):
        cp.cuda.Device().synchronize(); t = time.perf_counter(); D = gpu.DeviceMatrix.upload_csr(M); cp.cuda.Device().synchronize()
        ts.append((time.perf_counter() - t) * 1e3); us.append(D.upload_ms); del D
    print(f"poisson {size}: {mb:.0f} MB in 3 arrays; upload_csr {statistics.median(ts):.2f} ms [{min(ts):.2f}-{max(ts):.2f}], upload_ms {statistics.median(us):.2f}")
