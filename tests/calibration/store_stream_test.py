"""Calibrations streamed from the store shard by shard equal the in-memory ones on the same pairs and vectors."""
import json
import os

import numpy as np
import pytest

import glow
from bert_flow_tf.calibration import baselines
from bert_flow_tf.calibration import fitted_flow
from bert_flow_tf.calibration import flow_fitting
from bert_flow_tf.calibration import pair_sources
from bert_flow_tf.calibration import store_stream
from bert_flow_tf.data import order as order_lib
from bert_flow_tf.data import pairs as pairs_lib
from bert_flow_tf.embedding import store as store_lib
from bert_flow_tf.modeling import pooling as pooling_lib

L, H = 3, 16


def _store(folder, sizes, seed=0):
  """A store folder with shards of `sizes` rows for mean-1 and mean-3 (random anisotropic vectors)."""
  rng = np.random.default_rng(seed)
  scale = np.geomspace(10.0, 0.1, H)
  for i, k in enumerate(sizes):
    keys = np.sort(store_lib.sentence_keys([f"shard {i} row {r}" for r in range(k)]))
    for name in ("mean-1", "mean-3"):
      os.makedirs(os.path.join(folder, name), exist_ok=True)
      np.savez(os.path.join(folder, name, store_lib.shard_name(keys)), keys=keys,
               vectors=(rng.normal(size=(k, H)) * scale + 3.0).astype(np.float32))
  return str(folder)


@pytest.fixture
def shards(tmp_path):
  return store_stream.StoreShards(_store(tmp_path / "store", [37, 50, 23, 41]), pooling_lib.resolve(
      "first-last-avg", L))


def test_pairs_are_consecutive_rows_of_a_shard_and_an_odd_last_row_goes_with_the_first():
  np.testing.assert_array_equal(pairs_lib.consecutive_pairs(5)[0], [0, 2, 4])
  np.testing.assert_array_equal(pairs_lib.consecutive_pairs(5)[1], [1, 3, 0])
  np.testing.assert_array_equal(pairs_lib.consecutive_pairs(4)[1], [1, 3])


def test_an_epoch_of_the_stream_sees_every_pair_once_mixed_across_shards(shards):
  pairs = store_stream.StreamedPairs(shards, shuffle_buffer=64)
  assert len(pairs) == 19 + 25 + 12 + 21
  ids = pairs.pair_ids(len(pairs) // 7, 7, seed=5)
  assert len(set(ids.ravel().tolist())) == ids.size                  # no pair twice within the epoch
  first_batch_shards = set((ids[0] >> 32).tolist())
  assert len(first_batch_shards) > 1                                 # the buffer mixes shards
  np.testing.assert_array_equal(ids, pairs.pair_ids(len(pairs) // 7, 7, seed=5))


def test_streamed_flow_fit_equals_the_in_memory_fit_on_the_same_order_of_pairs(shards, tmp_path):
  config_path = tmp_path / "tiny.json"
  config_path.write_text(json.dumps({"coupling": "additive", "coupling_width": 8, "n_levels": 2, "depth": 2,
                                     "permutation": True}))
  config = flow_fitting.FlowFitConfig(flow_model_config=str(config_path), learning_rate=1e-2, batch_size=8,
                                  save_checkpoints_steps=4, log_every_steps=2)
  streamed = store_stream.StreamedPairs(shards, shuffle_buffer=32)
  flow_s, summary_s = flow_fitting.fit_flow(streamed, config, str(tmp_path / "streamed"))
  num_steps = summary_s["num_steps"]
  # The same pairs in memory, placed so that the fit's own seeded order visits them in the stream's order
  # (one epoch: every row of the order is distinct).
  ids = streamed.pair_ids(num_steps, config.batch_size, config.seed).ravel()
  vectors = [shards.read(i) for i in range(len(shards))]
  a = np.stack([vectors[i >> 32][i & 0xFFFFFFFF] for i in ids])
  b = np.stack([vectors[i >> 32][pairs_lib.consecutive_pairs(len(vectors[i >> 32]))[1][(i & 0xFFFFFFFF) // 2]]
                for i in ids])
  order = order_lib.batch_order(len(streamed), config.batch_size, num_steps, config.seed).ravel()
  rows_a, rows_b = np.zeros([len(streamed), shards.dim], np.float32), np.zeros([len(streamed), shards.dim],
                                                                               np.float32)
  rows_a[order], rows_b[order] = a, b
  flow_m, summary_m = flow_fitting.fit_flow(pair_sources.CachedPairs(rows_a, rows_b), config, str(tmp_path / "memory"))
  assert summary_m["num_steps"] == num_steps
  np.testing.assert_allclose(summary_s["first_loss"], summary_m["first_loss"], rtol=1e-6)
  np.testing.assert_allclose(summary_s["last_loss"], summary_m["last_loss"], rtol=1e-6)
  x = np.concatenate(vectors)
  np.testing.assert_allclose(glow.transform(flow_s, x), glow.transform(flow_m, x), atol=1e-5)


def test_a_streamed_fit_resumed_from_its_checkpoint_ends_where_an_uninterrupted_one_does(shards, tmp_path):
  config_path = tmp_path / "tiny.json"
  config_path.write_text(json.dumps({"coupling_width": 8, "n_levels": 2, "depth": 1}))
  config = flow_fitting.FlowFitConfig(flow_model_config=str(config_path), batch_size=8, save_checkpoints_steps=3)
  _, whole = flow_fitting.fit_flow(store_stream.StreamedPairs(shards, 32), config, str(tmp_path / "whole"))
  short = flow_fitting.FlowFitConfig(**{**config.__dict__, "num_train_epochs": 0.5})
  flow_fitting.fit_flow(store_stream.StreamedPairs(shards, 32), short, str(tmp_path / "resumed"))
  # The full fit resumes from the half-epoch run's last checkpoint (its step count is the full one's).
  with open(tmp_path / "resumed" / fitted_flow.INFO_FILE, encoding="utf-8") as f:
    assert json.load(f)["steps_done"] < whole["num_steps"]
  _, resumed = flow_fitting.fit_flow(store_stream.StreamedPairs(shards, 32), config, str(tmp_path / "resumed"))
  assert resumed["last_loss"] == pytest.approx(whole["last_loss"], rel=1e-6)


def test_streamed_whitening_equals_whitening_in_memory(shards):
  x = np.concatenate([shards.read(i) for i in range(len(shards))])
  for k in (None, 5):
    streamed, memory = store_stream.fit_whitening(shards, k), baselines.Whitening(k).fit(x)
    np.testing.assert_allclose(streamed.mu, memory.mu, rtol=1e-12)
    np.testing.assert_allclose(streamed.transform(x), memory.transform(x), atol=1e-8)


def test_shards_missing_in_one_quantity_are_refused(tmp_path):
  folder = _store(tmp_path / "store", [5, 6])
  os.remove(os.path.join(folder, "mean-3", sorted(os.listdir(os.path.join(folder, "mean-3")))[0]))
  with pytest.raises(ValueError, match="not those of"):
    store_stream.StoreShards(folder, pooling_lib.resolve("first-last-avg", L))
  assert len(store_stream.StoreShards(folder, pooling_lib.resolve("last-avg", L))) == 1   # mean-3 alone


def test_shards_restricted_to_keys_read_only_those_rows_in_their_order(tmp_path):
  folder = _store(tmp_path / "store", [37, 50])
  everything = store_stream.StoreShards(folder, pooling_lib.resolve("first-last-avg", L))
  stored = [np.load(os.path.join(folder, "mean-1", s))["keys"] for s in everything.shards]
  wanted = np.sort(np.concatenate([stored[0][3:9], stored[1][::7], store_lib.sentence_keys(["not stored"])]))
  some = store_stream.StoreShards(folder, everything.pooling, keys=wanted)
  for i in range(2):
    rows = np.flatnonzero(np.isin(stored[i], wanted))
    np.testing.assert_array_equal(some.read(i), everything.read(i)[rows])
  assert some.rows.tolist() == [6, 8]
  with pytest.raises(ValueError, match="any of the 1 sentences"):
    store_stream.StoreShards(folder, everything.pooling, keys=store_lib.sentence_keys(["not stored"]))
