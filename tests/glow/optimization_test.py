"""Tests of AdamWeightDecay against a numpy transcription of BERT's update rule."""
import numpy as np
import pytest
import tensorflow as tf

from glow import AdamWeightDecay, WarmupLinearDecay


def _reference_steps(params, grads_per_step, lrs, decayed, wd=0.01, b1=0.9, b2=0.999, eps=1e-6,
                     clip=1.0):
  """BERT's AdamWeightDecayOptimizer after tf.clip_by_global_norm, in numpy."""
  params = [p.astype(np.float64) for p in params]
  m = [np.zeros_like(p) for p in params]
  v = [np.zeros_like(p) for p in params]
  for grads, lr in zip(grads_per_step, lrs):
    norm = np.sqrt(sum(np.sum(g.astype(np.float64) ** 2) for g in grads))
    grads = [g * clip / max(norm, clip) for g in grads]
    for i, g in enumerate(grads):
      m[i] = b1 * m[i] + (1 - b1) * g
      v[i] = b2 * v[i] + (1 - b2) * g * g
      update = m[i] / (np.sqrt(v[i]) + eps) + (wd * params[i] if decayed[i] else 0.0)
      params[i] = params[i] - lr * update
  return params


def _run(optimizer, grads_per_step):
  rng = np.random.default_rng(0)
  init = [rng.standard_normal([3, 4]).astype(np.float32), rng.standard_normal([4]).astype(np.float32)]
  variables = [tf.Variable(init[0], name="dense/kernel"), tf.Variable(init[1], name="dense/bias")]
  for grads in grads_per_step:
    optimizer.apply_gradients(zip([tf.constant(g) for g in grads], variables))
  return init, [v.numpy() for v in variables]


def _grads(steps=3, scale=2.0):
  rng = np.random.default_rng(1)
  return [[scale * rng.standard_normal([3, 4]).astype(np.float32),
           scale * rng.standard_normal([4]).astype(np.float32)] for _ in range(steps)]


def test_constant_lr_matches_bert_update_with_clip_and_exclusions():
  grads = _grads()
  init, got = _run(AdamWeightDecay(learning_rate=0.1, weight_decay_rate=0.01), grads)
  want = _reference_steps(init, grads, [0.1] * 3, decayed=[True, False])
  for g, w in zip(got, want):  # float32 fused ResourceApplyAdam vs a float64 reference.
    np.testing.assert_allclose(g, w, rtol=1e-5, atol=2e-5)
  # The kernel decays, the bias (excluded by name) does not.
  assert not np.allclose(got[0], _reference_steps(init, grads, [0.1] * 3, [False, False])[0])


def test_first_step_has_no_bias_correction():
  init, got = _run(AdamWeightDecay(learning_rate=0.1, weight_decay_rate=0.0), _grads(steps=1))
  # Uncorrected: lr * 0.1 g / (sqrt(0.001) |g|) = 0.316 lr per weight (bias-corrected Adam: lr).
  np.testing.assert_allclose(np.abs(got[1] - init[1]), np.full(4, 0.1 * 0.1 / np.sqrt(0.001)),
                             rtol=1e-3)


def test_learning_rate_schedule_is_read_at_each_step():
  grads = _grads(steps=4)
  schedule = WarmupLinearDecay(0.1, num_train_steps=10, num_warmup_steps=2)
  optimizer = AdamWeightDecay(learning_rate=schedule)
  init, got = _run(optimizer, grads)
  lrs = [float(schedule(i)) for i in range(4)]  # 0, 0.05, 0.08, 0.07
  want = _reference_steps(init, grads, lrs, decayed=[True, False])
  for g, w in zip(got, want):
    np.testing.assert_allclose(g, w, rtol=1e-5, atol=2e-5)
  assert int(optimizer.iterations) == 4


def test_config_round_trip():
  optimizer = AdamWeightDecay(learning_rate=2e-5, exclude_from_weight_decay=["LayerNorm"])
  config = optimizer.get_config()
  assert config["weight_decay_rate"] == 0.01 and config["global_clipnorm"] == 1.0
  clone = AdamWeightDecay.from_config(config)
  assert clone.exclude_patterns == ("LayerNorm",) and clone.epsilon == 1e-6


@pytest.mark.distributed
def test_mirrored_strategy_applies_inside_strategy_run(cpu_strategy):
  assert cpu_strategy.num_replicas_in_sync == 2
  with cpu_strategy.scope():
    w = tf.Variable([1.0, -2.0], name="w")
    opt = AdamWeightDecay(learning_rate=0.1)
  x = tf.constant([[1.0, 2.0], [3.0, 4.0]])

  @tf.function
  def step(batch):
    def replica_fn(xb):
      with tf.GradientTape() as tape:
        loss = tf.reduce_sum(xb * w) / 2.0  # Summed over replicas: sum(x) . w / 2.
      opt.apply_gradients([(tape.gradient(loss, w), w)])
    cpu_strategy.run(replica_fn, args=(batch,))

  step(cpu_strategy.experimental_distribute_values_from_function(lambda ctx: x[ctx.replica_id_in_sync_group]))
  g = np.array([4.0, 6.0]) / 2.0
  g = g / max(np.linalg.norm(g), 1.0)
  m, v = 0.1 * g, 0.001 * g * g
  want = np.array([1.0, -2.0]) - 0.1 * (m / (np.sqrt(v) + 1e-6) + 0.01 * np.array([1.0, -2.0]))
  np.testing.assert_allclose(w.numpy(), want, rtol=1e-5)
