"""What one flow-fit checkpoint costs: 20 train steps each followed by a checkpoint of the Glow, its optimizer and a
step counter (config_l3_d3_w32, D=384, 32 pairs), per step in wall and CPU ms: tf.train.CheckpointManager.save
(eager, synchronous and async), a `Checkpoint.write` traced once (what flow_fitting now runs for a kept train
step), and the steps alone. `python bench/flow_checkpoint.py` (no flags).
"""
import pathlib, sys, time, tempfile
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import numpy as np, tensorflow as tf
import glow
from bert_flow_tf.calibration import flow_fitting
cfg = flow_fitting.FlowFitConfig()
opt = glow.AdamWeightDecay(learning_rate=1e-3, weight_decay_rate=0.01)
st = glow.ReusableTrainStep(cfg.glow_config(), 384, "original", opt)
x = tf.constant(np.random.default_rng(0).standard_normal([32, 384]).astype(np.float32))
st(x, x)
step = tf.Variable(0, dtype=tf.int64)
ck = tf.train.Checkpoint(flow=st.flow, optimizer=st.optimizer, step=step)
print("vars", len(ck.flow.variables), len(st.optimizer.variables))
for mode in ["sync", "async", "sync", "async"]:
  d = tempfile.mkdtemp()
  opts = tf.train.CheckpointOptions(experimental_enable_async_checkpoint=(mode == "async"))
  m = tf.train.CheckpointManager(ck, d, max_to_keep=2)
  t = time.perf_counter(); c = time.process_time()
  for i in range(1, 21):
    st(x, x)
    m.save(checkpoint_number=i, options=opts)
  ck.sync() if mode == "async" else None
  print(mode, "per save+step ms", (time.perf_counter() - t) / 20 * 1e3, "cpu", (time.process_time() - c) / 20 * 1e3)
t = time.perf_counter(); c = time.process_time()
for i in range(20): st(x, x)
print("step only ms", (time.perf_counter() - t) / 20 * 1e3, "cpu", (time.process_time() - c) / 20 * 1e3)
d = tempfile.mkdtemp()
@tf.function(input_signature=[tf.TensorSpec([], tf.string)])
def traced_write(prefix):
  return ck.write(prefix)
for r in range(2):
  t = time.perf_counter(); c = time.process_time()
  for i in range(1, 21):
    st(x, x)
    traced_write(tf.constant(f"{d}/ckpt-{i}"))
  print("traced write per save+step ms", (time.perf_counter() - t) / 20 * 1e3, "cpu", (time.process_time() - c) / 20 * 1e3)
import os; print(sorted(os.listdir(d))[:6])
ck2 = tf.train.Checkpoint(flow=glow.Glow(cfg.glow_config(), 384, init="original"), step=tf.Variable(0, dtype=tf.int64))
ck2.read(f"{d}/ckpt-20").expect_partial()
print("restored equal", all(np.array_equal(a.numpy(), b.numpy()) for a, b in zip(ck2.flow.variables, st.flow.variables)))
