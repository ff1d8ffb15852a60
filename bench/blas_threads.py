"""numpy's linear algebra at the all-tables job's sizes (17,000 x 384 float64, what a fit set's baselines and
isotropy decompose), best of 3 seconds each. Run it twice to compare OpenBLAS thread counts:
`python bench/blas_threads.py` and `OPENBLAS_NUM_THREADS=1 python bench/blas_threads.py`.
"""
import time, numpy as np
x = np.random.default_rng(0).standard_normal([17000, 384])
c = np.cov(x, rowvar=False)
for name, f in [("cov", lambda: np.cov(x, rowvar=False)), ("xtx", lambda: x.T @ x), ("eigvalsh", lambda: np.linalg.eigvalsh(c)), ("eigh", lambda: np.linalg.eigh(c)), ("svd", lambda: np.linalg.svd(c))]:
  ts = []
  for _ in range(3):
    t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
  print(name, "%.3f" % min(ts))
