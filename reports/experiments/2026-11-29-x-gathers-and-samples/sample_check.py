import sys, numpy as np
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[3] / "tools")); sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from model_eval import measure
from sample_proto_lib import row_sample
from clspmv.device import select_device
from clspmv.bench.sources import resolve
from clspmv.canonical import canonical_csr
from clspmv.precision import resolve as presolve
dev = select_device("1:0"); prec = presolve(np.float64, np.float64)
A = canonical_csr(resolve(sys.argv[1], progress=False).load().tocsr().astype(np.float64))
for share in [1.0, 0.5, 0.25]:
    S = A if share == 1.0 else canonical_csr(row_sample(A, share, 0, 8))
    ms = measure(S, dev, prec)
    print(share, " ".join(f"{k}={v:.3f}" for k, v in sorted(ms.items(), key=lambda i: i[1])[:6]), flush=True)
