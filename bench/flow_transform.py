"""glow.transform over 9 fitted flows of one kind (config_l3_d3_w32, D=384, seeded), 10 calls of 300 vectors
each, as the all-tables job's evaluation calls it; prints wall and CPU seconds and saves the outputs (to compare
two checkouts bit for bit). `python bench/flow_transform.py CHECKOUT_DIR OUT.npy`.
"""
import sys, time
sys.path.insert(0, sys.argv[1])
import numpy as np, tensorflow as tf
import glow
import tf_keras; tf_keras.utils.set_random_seed(0)
cfg = glow.GlowConfig.load("config_l3_d3_w32")
flows = [glow.Glow(cfg, 384, seed=s) for s in range(9)]
x = np.random.default_rng(0).standard_normal([3000, 384]).astype(np.float32)
t, c = time.perf_counter(), time.process_time()
outs = [glow.transform(f, x[i * 300:(i + 1) * 300]) for f in flows for i in range(10)]
print(sys.argv[1], "9 flows x 10 calls of 300 vectors: wall %.2f s, CPU %.2f s" % (time.perf_counter() - t, time.process_time() - c))
np.save(sys.argv[2], np.concatenate(outs))
