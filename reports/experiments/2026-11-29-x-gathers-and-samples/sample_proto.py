"""Does a sample of rows rank the formats as the whole matrix does? Per stored record: measure
every format on a row sample (blocks of rows, columns shifted so diagonals keep their offsets),
take the sample's fastest, judge it in the stored full measurements."""
import json, sys, time
import numpy as np
import scipy.sparse as sp
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[3] / "tools"))
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from sample_proto_lib import row_sample  # noqa: E402
from model_eval import measure
from clspmv.device import select_device
from clspmv.bench.sources import resolve
from clspmv.matrix import canonical_csr
from clspmv.precision import resolve as presolve


dev = select_device(sys.argv[1])
share = float(sys.argv[2]); min_e = int(sys.argv[3]); blocks = int(sys.argv[4])
prec = presolve(np.float64, np.float64)
ratios = []
for path in sys.argv[5:]:
    for rec in json.load(open(path))["records"]:
        full = rec["measured_ms"]
        A = resolve(rec["matrix"], progress=False).load()
        csr = canonical_csr(A.tocsr().astype(np.float64)) if True else None
        t = time.perf_counter()
        S = row_sample(csr, share, min_e, blocks)
        S = canonical_csr(S)
        ms = measure(S, dev, prec)
        dt = time.perf_counter() - t
        ms = {k: v for k, v in ms.items() if k in full}
        pick = min(ms, key=ms.get)
        best = min(full, key=full.get)
        q = full[best] / full[pick]
        ratios.append(q)
        order_s = sorted(ms, key=ms.get)[:4]; order_f = sorted(full, key=full.get)[:4]
        print(f"{rec['matrix'][:44]:44s} sample {S.nnz/1e6:5.2f}M/{csr.nnz/1e6:5.2f}M pick={pick:11s} best={best:11s} q={q:.3f} "
              f"[{dt:4.1f}s] s:{' '.join(order_s)} | f:{' '.join(order_f)}", flush=True)
r = np.array(ratios)
print(f"geomean {np.exp(np.log(r).mean()):.3f} worst {r.min():.3f} within5 {np.mean(r >= 1/1.05):.2f}")
