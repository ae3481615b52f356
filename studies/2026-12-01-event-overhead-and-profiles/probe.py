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
out = open(os.path.join(os.environ["OUT"], "probe.csv"), "w")
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
        for label, env in (("ev_nb4", {}), ("b2b_nb4", {"SPMV_PROBE_RUN": "16"}), ("ev_nb8", {"SPMV_PROBE_BATCH": "8"}),
                           ("b2b_nb8", {"SPMV_PROBE_RUN": "16", "SPMV_PROBE_BATCH": "8"}), ("ev_nb4_again", {})):
            os.environ.pop("SPMV_PROBE_RUN", None); os.environ.pop("SPMV_PROBE_BATCH", None)
            os.environ.update(env)
            use = ids if "nb8" not in label else [c for c in ids if "adaptive" in c and "ept=" not in c]
            try:
                df = pyspmv.benchmark(A, use, device="cuda", dtype=dt, repeats=64, warmup=10, budget_s=0.05, progress=False,
                                      check=(label != "b2b_nb4"))
            except Exception as e:
                print("FAIL", m, dt, label, repr(e)[:300]); continue
            for _, r in df.iterrows():
                w.writerow([m, dt, r["config"], label, r["median_ms"], r["q25_ms"], r["q75_ms"], rr[0]["floor_bytes"], rr[0]["copy_gbs"], prior.get(r["config"], "")])
                res[(r["config"], label)] = r["median_ms"]
        out.flush()
        best = min((v, k) for k, v in res.items() if k[1] == "ev_nb4")
        bb = min((v, k) for k, v in res.items() if k[1] == "b2b_nb4")
        nb8 = [(res.get((c, "ev_nb4")), res.get((c, "ev_nb8"))) for c in ids if (c, "ev_nb8") in res]
        fb = float(rr[0]["floor_bytes"]); cb = float(rr[0]["copy_gbs"])
        print(f"{m[:40]:40s} {dt} floor {fb/1e6:6.1f}MB best ev {best[0]*1e3:6.1f}us ({fb/best[0]/1e-3/1e9/cb:.3f}) {best[1][0][7:]:30s} "
              f"b2b {bb[0]*1e3:6.1f}us ({fb/bb[0]/1e-3/1e9/cb:.3f}) nb8/nb4 " + " ".join(f"{b/a:.3f}" for a, b in nb8 if a and b), flush=True)
print("probe done in %.0f s" % (time.time() - t0))
