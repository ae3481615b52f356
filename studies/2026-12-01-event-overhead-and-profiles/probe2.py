"""Probe (issue 47): per-event vs back-to-back timing of products, and csr/adaptive's stream with all of a
thread's entries loaded in one round (SPMV_PROBE_BATCH=8) against rounds of 4, on scaled real matrices."""
import csv, os, sys, time, collections
import numpy as np, scipy.sparse as sp
import pyspmv
from pyspmv.matrices.generators import scaled

here = os.path.dirname(os.path.abspath(__file__))
pairs = collections.defaultdict(list)
for r in csv.DictReader(open(os.path.join(here, "pairs.csv"))):
    pairs[r["matrix"]].append(r)
ADAPT = ["pyspmv/csr/adaptive/bs=128", "pyspmv/csr/adaptive/bs=256", "pyspmv/csr/adaptive/ept=4/bs=128",
         "pyspmv/csr/adaptive/ept=4/bs=256", "cusparse/csr/default"]
out = open(os.path.join(os.environ["OUT"], "probe2.csv"), "w")
w = csv.writer(out); w.writerow(["matrix", "dtype", "config", "mode", "median_ms", "q25_ms", "q75_ms", "floor_bytes", "copy_gbs", "prior_ms"])
t0 = time.time()
for m, rows in pairs.items():
    base, rest = m.rsplit("_x", 1)
    f = int("".join(ch for ch in rest.split("_")[0] if ch.isdigit()))
    mode = "tile" if "tile" in rest else "kron"
    seed = int(rest.rsplit("_r", 1)[1])
    A = scaled(pyspmv.load(os.path.join(here, "bases", base + ".mtx.gz")), f, mode=mode, density=min(0.3, 4.0 / f), seed=seed)
    for dt in ("float32", "float64"):
        rr = [r for r in rows if r["dtype"] == dt]
        if not rr:
            continue
        ids = list(dict.fromkeys([r["config"] for r in rr] + ADAPT))
        prior = {r["config"]: float(r["median_ms"]) for r in rr}
        res = {}
        for label, env in (("q0", {}), ("q1", {"SPMV_PROBE_QUADS": "1"}), ("q2", {"SPMV_PROBE_QUADS": "2"}), ("q0_again", {})):
            os.environ.pop("SPMV_PROBE_QUADS", None)
            os.environ.update(env)
            use = [c for c in ids if "adaptive" in c and "vals=" not in c]
            try:
                df = pyspmv.benchmark(A, use, device="cuda", dtype=dt, repeats=64, warmup=10, budget_s=0.05, progress=False,
                                      check=True, back_to_back=16)
            except Exception as e:
                print("FAIL", m, dt, label, repr(e)[:300]); continue
            for _, r in df[~df.status.isin(["ok", "not_applicable"])].iterrows():
                print("BAD", m, dt, label, r["config"], r["status"], r["note"][:200], flush=True)
            for _, r in df.iterrows():
                w.writerow([m, dt, r["config"], label, r["median_ms"], r["q25_ms"], r["q75_ms"], rr[0]["floor_bytes"], rr[0]["copy_gbs"], prior.get(r["config"], "")])
                res[(r["config"], label)] = r["median_ms"]
        out.flush()
        for q in ("q1", "q2", "q0_again"):
            r = [res[(c, q)] / res[(c, "q0")] for c in use if (c, q) in res and (c, "q0") in res]
            print(m[:40], dt, q, "median ratio %.3f" % np.median(r) if r else "-", flush=True)
print("probe done in %.0f s" % (time.time() - t0))
