# A/B in rounds: M @ x replayed (clspmv.replay) against the general path (the same matrix's copy
# with its replay turned off), beside MKL optimised and scipy; medians
import sys, time, numpy as np, clspmv
from clspmv.bench import generators, openmp
from clspmv.bench.mkl_optimised import OptimisedMkl
dev = clspmv.select_device(sys.argv[2]); R = int(sys.argv[3])
for spec in sys.argv[1].split(';'):
    A = generators.generate(spec); m = A.shape[0]
    x = np.random.default_rng(1).uniform(-1, 1, A.shape[1])
    replayed = clspmv.DeviceMatrix.from_scipy(A, device=dev)
    general = clspmv.DeviceMatrix.from_scipy(A, format=replayed.format, device=dev)
    general._replay = False
    assert np.allclose(replayed @ x, general @ x) and replayed._replay
    mk = OptimisedMkl(A, expected_calls=1000); out = np.empty(m)
    calls = {'general': lambda: general @ x, 'replay': lambda: replayed @ x,
             'mkl': lambda: mk.matvec(x, out), 'scipy': lambda: A @ x}
    res = {}
    with openmp.blocktime(0):
        for r in range(R + 3):
            names = list(calls); s = r % len(names)
            for nm in names[s:] + names[:s]:
                t = time.perf_counter_ns(); calls[nm](); dt = (time.perf_counter_ns() - t) / 1e3
                if r >= 3: res.setdefault(nm, []).append(dt)
    mk.close()
    med = {k: np.median(v) for k, v in res.items()}
    print('%-40s %-5s general %6.0f replay %6.0f mkl %6.0f us | replay/general %.2f  xMKL general %.2f replay %.2f'
          % (spec[:40], replayed.format, med['general'], med['replay'], med['mkl'], med['replay'] / med['general'],
             med['mkl'] / med['general'], med['mkl'] / med['replay']), flush=True)
