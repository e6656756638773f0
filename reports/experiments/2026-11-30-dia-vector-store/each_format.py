import sys, subprocess, os
fmts = sys.argv[1].split(',')
code = r'''
import sys, numpy as np, scipy.sparse as sp, clspmv
d = clspmv.select_device('0:0')
dt = np.dtype(sys.argv[2])
A = sp.random(300, 300, density=0.05, format="csr", random_state=1, dtype=dt); A.setdiag(1.0)
M = clspmv.DeviceMatrix.from_scipy(A, format=sys.argv[1], device=d)
x = np.ones(300, dt); y = M @ x
print(float(abs(y - A @ x).max()), M.params)
'''
for f in fmts:
    for dt in ("float64", "float32"):
        r = subprocess.run([sys.executable, "-c", code, f, dt], capture_output=True, text=True, timeout=300)
        tail = (r.stdout.strip().splitlines() or [''])[-1][:100] if r.returncode == 0 else [l for l in r.stderr.splitlines() if 'ERROR' in l or 'Error' in l][-1:]
        print(f, dt, r.returncode, tail, flush=True)
