"""Flow fitting on pairs: batch order, resume after a crash, NaN stop, saved flows."""
import dataclasses

import numpy as np
import pytest
import tensorflow as tf

import glow
from bert_flow_tf.calibration import fitted_flow
from bert_flow_tf.calibration import flow_fitting
from bert_flow_tf.calibration import pair_sources
from bert_flow_tf.data import order as order_lib
from tests import tiny


PROVENANCE = {"model": "m", "sentence_embedding_type": "last-avg", "max_seq_length": 64}


@pytest.fixture(scope="module")
def tiny_config(tmp_path_factory):
  path = tiny.write_glow_config(tmp_path_factory.mktemp("config") / "tiny.json", tiny.GLOW_DEEP)
  return flow_fitting.FlowFitConfig(flow_model_config=path, learning_rate=1e-2, num_train_epochs=1.0,
                                batch_size=8, save_checkpoints_steps=3, log_every_steps=2)


@pytest.fixture(scope="module")
def full_fit(tmp_path_factory, tiny_config):
  """(flow, summary, flow_dir) of one uninterrupted fit of `_pairs()` with PROVENANCE, shared by the resume and the
  fitted_flow.check tests (each fit traces a train step of its own: most of a fit's time)."""
  flow_dir = str(tmp_path_factory.mktemp("full") / "flow")
  flow, summary = flow_fitting.fit_flow(_pairs(), tiny_config, flow_dir, provenance=PROVENANCE)
  return flow, summary, flow_dir


def _pairs(n=100, d=16, seed=0):
  rng = np.random.default_rng(seed)
  scale = np.geomspace(10.0, 0.1, d)
  return pair_sources.CachedPairs((rng.normal(size=(n, d)) * scale).astype(np.float32),
                              (rng.normal(size=(n, d)) * scale).astype(np.float32))


class _Crash(Exception):
  pass


class _CrashingPairs(pair_sources.CachedPairs):
  """Raises on the `crash_at`-th batch request, like a process killed mid-fit."""

  def __init__(self, pairs, crash_at):
    super().__init__(pairs.a, pairs.b)
    self.calls, self.crash_at = 0, crash_at

  def batch(self, idx):
    self.calls += 1
    if self.calls == self.crash_at:
      raise _Crash()
    return super().batch(idx)


def test_batch_order_is_seeded_and_covers_every_pair_per_epoch():
  order = order_lib.batch_order(10, 4, 5, seed=3)
  assert order.shape == (5, 4)
  np.testing.assert_array_equal(order, order_lib.batch_order(10, 4, 5, seed=3))
  assert sorted(order.reshape(-1)[:10]) == list(range(10))
  assert order_lib.num_train_steps(8628, 32, 1.0) == 269
  assert order_lib.num_train_steps(19666, 32, 0.15) == 92


def _variables(flow):
  return [v.numpy() for v in flow.variables]


@pytest.mark.slow
def test_resume_after_crash_ends_where_an_uninterrupted_run_ends(tmp_path, tiny_config, full_fit):
  pairs = _pairs()
  full, summary, _ = full_fit
  assert summary["num_steps"] == 12 and summary["complete"]
  assert summary["last_loss"] < summary["first_loss"]
  with pytest.raises(_Crash):
    flow_fitting.fit_flow(_CrashingPairs(pairs, crash_at=8), tiny_config, str(tmp_path / "resumed"))
  assert tf.train.latest_checkpoint(str(tmp_path / "resumed")).endswith("ckpt-6")
  with pytest.raises(ValueError, match="did not finish"):
    fitted_flow.load_glow(str(tmp_path / "resumed"))
  resumed, summary = flow_fitting.fit_flow(pairs, tiny_config, str(tmp_path / "resumed"))
  assert summary["steps_done"] == 12
  for a, b in zip(_variables(full), _variables(resumed)):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
  loaded = fitted_flow.load_glow(str(tmp_path / "resumed"))
  x = pairs.a[:5]
  np.testing.assert_allclose(glow.transform(loaded, x), glow.transform(full, x), atol=1e-5)


def test_nan_loss_stops_and_keeps_the_last_good_checkpoint(tmp_path, tiny_config):
  pairs = _pairs()
  # With the fixed batch order, poison the rows that step 8 first touches: steps 1-7 are finite, so checkpoints
  # are saved at steps 3 and 6 (save_checkpoints_steps=3), and the fit must stop at step 8 keeping ckpt-6.
  order = order_lib.batch_order(len(pairs.a), tiny_config.batch_size, 12, tiny_config.seed)
  bad_rows = sorted(set(order[7]) - set(order[:7].reshape(-1)))
  assert bad_rows
  bad = pairs.a.copy()
  bad[bad_rows] = np.nan
  with pytest.raises(flow_fitting.FlowDivergedError, match="at step 8"):
    flow_fitting.fit_flow(pair_sources.CachedPairs(bad, pairs.b), tiny_config, str(tmp_path / "nan"))
  assert tf.train.latest_checkpoint(str(tmp_path / "nan")).endswith("ckpt-6")
  with pytest.raises(ValueError, match="did not finish"):
    fitted_flow.load_glow(str(tmp_path / "nan"))


def test_ddi_init_runs_on_the_first_batch(tmp_path, tiny_config):
  fit_config = dataclasses.replace(tiny_config, init="ddi")
  flow, summary = flow_fitting.fit_flow(_pairs(), fit_config, str(tmp_path / "ddi"))
  assert bool(flow.initialized.numpy()) and np.isfinite(summary["last_loss"])


def test_too_few_pairs_for_one_step(tmp_path, tiny_config):
  with pytest.raises(ValueError, match="less than one step"):
    flow_fitting.fit_flow(_pairs(n=4), tiny_config, str(tmp_path / "few"))


def test_fitted_flow_check_names_what_differs(tiny_config, full_fit):
  provenance, flow_dir = PROVENANCE, full_fit[2]
  info = fitted_flow.check(flow_dir, dim=16, fit_config=tiny_config, provenance={**provenance, "not_recorded": 1})
  assert info["complete"] and info["provenance"] == provenance
  with pytest.raises(ValueError, match=r"\(dim, max_seq_length differ\): max_seq_length=32 \(the flow was fitted "
                                       r"with 64\); dim=8 \(the flow was fitted with 16\)"):
    fitted_flow.check(flow_dir, dim=8, provenance={**provenance, "max_seq_length": 32})
  with pytest.raises(ValueError, match=r"\(fit differ\): fit.learning_rate=0.5 \(the flow was fitted with 0.01\)$"):
    fitted_flow.check(flow_dir, fit_config=dataclasses.replace(tiny_config, learning_rate=0.5))


@pytest.mark.slow
def test_fits_of_other_settings_in_one_process_equal_fits_with_new_objects(tmp_path, tiny_config):
  """Three fits through one TracedSteps: weight decay and init change (a trace of their own), then learning rate,
  seed, epochs and pairs change on the first fit's trace; each equals, bit for bit, the fit with a new Glow,
  optimizer and trace (traced_steps=None)."""
  first = dataclasses.replace(tiny_config, seed=7)
  fits = [(_pairs(seed=1), first),
          (_pairs(seed=3), dataclasses.replace(first, weight_decay_rate=0.0, init="ddi")),
          (_pairs(n=120, seed=2), dataclasses.replace(first, seed=8, learning_rate=3e-3,   # the first fit's trace
                                                      num_train_epochs=2.0))]                 # again
  fresh = [flow_fitting.fit_flow(pairs, config, str(tmp_path / f"fresh{i}"), traced_steps=None)
           for i, (pairs, config) in enumerate(fits)]
  traced = flow_fitting.TracedSteps()
  reused = [flow_fitting.fit_flow(pairs, config, str(tmp_path / f"reused{i}"), traced_steps=traced)
            for i, (pairs, config) in enumerate(fits)]
  assert [s.tracing_count() for s in traced.steps()] == [1, 1]  # fits 1 and 3 ran one trace, 2 another
  for i, ((flow_want, want), (flow_got, got)) in enumerate(zip(fresh, reused)):
    assert [got[k] for k in ("num_steps", "first_loss", "last_loss", "mean_loss_last_10pct")] == [
        want[k] for k in ("num_steps", "first_loss", "last_loss", "mean_loss_last_10pct")], i
    for a, b in zip(flow_want.variables, flow_got.variables):  # an earlier fit's flow is untouched by later ones
      np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=f"fit {i}: {a.name}")
  assert len({summary["last_loss"] for _, summary in fresh}) == len(fits)


def test_a_traced_step_refuses_a_fit_it_cannot_reproduce():
  config = glow.GlowConfig.load("config_l2_d2_w32")
  step = glow.ReusableTrainStep(config, 16, "original", glow.AdamWeightDecay(weight_decay_rate=0.01))
  with pytest.raises(ValueError, match=r"optimizer.weight_decay_rate=0.0 \(the trace has 0.01\)"):
    step.reset(glow.Glow(config, 16), glow.AdamWeightDecay(weight_decay_rate=0.0))
  with pytest.raises(ValueError, match=r"glow.init='ddi' \(the trace has 'original'\)"):
    step.reset(glow.Glow(config, 16, init="ddi"), glow.AdamWeightDecay())
  with pytest.raises(ValueError, match=r"optimizer.beta_2=0.98 \(the trace has 0.999\)"):
    step.reset(glow.Glow(config, 16), glow.AdamWeightDecay(beta_2=0.98))
  built, used = glow.Glow(config, 16), glow.AdamWeightDecay()
  used.build(built.trainable_variables)
  with pytest.raises(ValueError, match="the optimizer is built"):
    step.reset(built, used)
  dropout = dataclasses.replace(config, coupling_dropout=0.1)
  step = glow.ReusableTrainStep(dropout, 16, "original", glow.AdamWeightDecay())
  step.reset(glow.Glow(dropout, 16), glow.AdamWeightDecay())
  step(tf.zeros([2, 16]), tf.zeros([2, 16]))
  with pytest.raises(ValueError, match="coupling_dropout=0.1"):
    step.reset(glow.Glow(dropout, 16), glow.AdamWeightDecay())
