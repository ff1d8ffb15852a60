"""Calibrations streamed from the store shard by shard equal the in-memory ones on the same pairs and vectors, and
count each distinct sentence once whatever the store's history (two writers, a re-encoded corrupt shard)."""
import json
import os
import subprocess
import sys
import time

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
from bert_flow_tf import loaders
from bert_flow_tf.embedding import store_files as store_lib
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from bert_flow_tf.embedding.store import EmbeddingStore
from bert_flow_tf.modeling import pooling as pooling_lib
from tests import tiny_runs
from tests.embedding.tiny_model import SENTENCES

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


@pytest.mark.slow  # two flow fits: 3.6 to 3.9 s on a quiet 2-core CPU
def test_streamed_flow_fit_equals_the_in_memory_fit_on_the_same_order_of_pairs(shards, tmp_path):
  config_path = tmp_path / "tiny.json"
  config_path.write_text(json.dumps({"coupling": "additive", "coupling_width": 8, "n_levels": 2, "depth": 2,
                                     "permutation": True}))
  fit_config = flow_fitting.FlowFitConfig(flow_model_config=str(config_path), learning_rate=1e-2, batch_size=8,
                                          save_checkpoints_steps=4, log_every_steps=2)
  streamed = store_stream.StreamedPairs(shards, shuffle_buffer=32)
  flow_s, summary_s = flow_fitting.fit_flow(streamed, fit_config, str(tmp_path / "streamed"))
  num_steps = summary_s["num_steps"]
  # The same pairs in memory, placed so that the fit's own seeded order visits them in the stream's order
  # (one epoch: every row of the order is distinct).
  ids = streamed.pair_ids(num_steps, fit_config.batch_size, fit_config.seed).ravel()
  vectors = [shards.read(i) for i in range(len(shards))]
  a = np.stack([vectors[i >> 32][i & 0xFFFFFFFF] for i in ids])
  b = np.stack([vectors[i >> 32][pairs_lib.consecutive_pairs(len(vectors[i >> 32]))[1][(i & 0xFFFFFFFF) // 2]]
                for i in ids])
  order = order_lib.batch_order(len(streamed), fit_config.batch_size, num_steps, fit_config.seed).ravel()
  rows_a, rows_b = np.zeros([len(streamed), shards.dim], np.float32), np.zeros([len(streamed), shards.dim],
                                                                               np.float32)
  rows_a[order], rows_b[order] = a, b
  flow_m, summary_m = flow_fitting.fit_flow(pair_sources.CachedPairs(rows_a, rows_b), fit_config,
                                            str(tmp_path / "memory"))
  assert summary_m["num_steps"] == num_steps
  np.testing.assert_allclose(summary_s["first_loss"], summary_m["first_loss"], rtol=1e-6)
  np.testing.assert_allclose(summary_s["last_loss"], summary_m["last_loss"], rtol=1e-6)
  x = np.concatenate(vectors)
  np.testing.assert_allclose(glow.transform(flow_s, x), glow.transform(flow_m, x), atol=1e-5)


def test_a_streamed_fit_resumed_from_its_checkpoint_ends_where_an_uninterrupted_one_does(shards, tmp_path):
  config_path = tmp_path / "tiny.json"
  config_path.write_text(json.dumps({"coupling_width": 8, "n_levels": 2, "depth": 1}))
  fit_config = flow_fitting.FlowFitConfig(flow_model_config=str(config_path), batch_size=8, save_checkpoints_steps=3)
  _, whole = flow_fitting.fit_flow(store_stream.StreamedPairs(shards, 32), fit_config, str(tmp_path / "whole"))
  short = flow_fitting.FlowFitConfig(**{**fit_config.__dict__, "num_train_epochs": 0.5})
  flow_fitting.fit_flow(store_stream.StreamedPairs(shards, 32), short, str(tmp_path / "resumed"))
  # The full fit resumes from the half-epoch run's last checkpoint (its step count is the full one's).
  with open(tmp_path / "resumed" / fitted_flow.INFO_FILE, encoding="utf-8") as f:
    assert json.load(f)["steps_done"] < whole["num_steps"]
  _, resumed = flow_fitting.fit_flow(store_stream.StreamedPairs(shards, 32), fit_config, str(tmp_path / "resumed"))
  assert resumed["last_loss"] == pytest.approx(whole["last_loss"], rel=1e-6)


def test_streamed_whitening_equals_whitening_in_memory(shards):
  x = np.concatenate([shards.read(i) for i in range(len(shards))])
  for k in (None, 5):
    streamed, memory = store_stream.fit_whitening(shards, k), baselines.Whitening(k).fit(x)
    np.testing.assert_allclose(streamed.mu, memory.mu, rtol=1e-12)
    np.testing.assert_allclose(streamed.transform(x), memory.transform(x), atol=1e-8)


def test_sentences_missing_in_one_quantity_are_not_read_and_a_fit_set_missing_them_is_refused(tmp_path):
  folder = _store(tmp_path / "store", [5, 6])
  gone = sorted(os.listdir(os.path.join(folder, "mean-3")))[0]
  kept = [s for s in os.listdir(os.path.join(folder, "mean-3")) if s != gone]
  os.remove(os.path.join(folder, "mean-3", gone))
  both = store_stream.StoreShards(folder, pooling_lib.resolve("first-last-avg", L))
  assert both.shards == kept and int(both.rows.sum()) == len(store_lib.read_keys(os.path.join(folder, "mean-3",
                                                                                                  kept[0])))
  assert store_stream.StoreShards(folder, pooling_lib.resolve("last-avg", L)).rows.tolist() == both.rows.tolist()
  sentences = [f"shard {i} row {r}" for i, k in enumerate([5, 6]) for r in range(k)]
  with pytest.raises(ValueError, match=r"5 of the 11 fit sentences are not stored for mean-1, mean-3"):
    store_stream.fit_set(folder, pooling_lib.resolve("first-last-avg", L), sentences)


def test_shards_restricted_to_keys_read_only_those_rows_in_their_order(tmp_path):
  folder = _store(tmp_path / "store", [37, 50])
  everything = store_stream.StoreShards(folder, pooling_lib.resolve("first-last-avg", L))
  stored = [np.load(os.path.join(folder, "mean-1", s))["keys"] for s in everything.shards]
  wanted = np.sort(np.concatenate([stored[0][3:9], stored[1][::7], store_lib.sentence_keys(["not stored"])]))
  some = store_stream.StoreShards(folder, everything.pooling_spec, keys=wanted)
  for i in range(2):
    rows = np.flatnonzero(np.isin(stored[i], wanted))
    np.testing.assert_array_equal(some.read(i), everything.read(i)[rows])
  assert some.rows.tolist() == [6, 8]
  with pytest.raises(ValueError, match="any of the 1 sentences"):
    store_stream.StoreShards(folder, everything.pooling_spec, keys=store_lib.sentence_keys(["not stored"]))


def _tiny_store(model_dir, cache_dir, shard_size=16384):
  embedder = SentenceEmbedder(loaders.load_model(model_dir=model_dir), "first-last-avg", max_seq_length=16)
  return EmbeddingStore(embedder, cache_dir, batch_size=8, shard_size=shard_size)


def _check_counts_each_sentence_once(store, sentences):
  """The fit set of `sentences` in `store` holds each distinct one once, with the store's own vectors."""
  pooling_spec = store.embedder.pooling_spec
  fit = store_stream.fit_set(store.folder, pooling_spec, sentences)
  distinct = sorted(set(sentences))
  assert int(fit.rows.sum()) == len(distinct)
  read = np.concatenate([fit.read(i) for i in range(len(fit))])
  # The rows in the fit set's order: shard by shard, each shard's keys in file order.
  keys = np.concatenate([store_lib.read_keys(os.path.join(store.folder, fit.names[0], s)) for s in fit.shards])
  by_key = dict(zip(store_lib.sentence_keys(distinct).tolist(), store.vectors(distinct, pooling_spec,
                                                                              show_progress=False)))
  order = [k for k in keys.tolist() if k in by_key]
  seen = set()
  order = [k for k in order if not (k in seen or seen.add(k))]
  np.testing.assert_array_equal(read, np.stack([by_key[k] for k in order]))
  assert len(store_stream.StreamedPairs(fit)) == sum(len(pairs_lib.consecutive_pairs(int(k))[0]) for k in fit.rows)
  return fit


_FILL = """
import os, sys, time
from bert_flow_tf import loaders
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from bert_flow_tf.embedding.store import EmbeddingStore
model_dir, cache_dir, sentences, ready, go = sys.argv[1:]
embedder = SentenceEmbedder(loaders.load_model(model_dir=model_dir), "first-last-avg", max_seq_length=16)
store = EmbeddingStore(embedder, cache_dir, batch_size=8, shard_size=7)
store.ensure([], ["mean-1", "mean-3"], show_progress=False)   # opens the store: what it holds now
open(ready, "w").close()
while not os.path.exists(go):
  time.sleep(0.05)
with open(sentences, encoding="utf-8") as f:
  store.ensure(f.read().split("\\n"), ["mean-1", "mean-3"], show_progress=False)
"""


@pytest.mark.slow  # two processes, each importing TensorFlow
def test_two_processes_filling_one_store_with_shared_sentences_count_each_once(tmp_path):
  model_dir = tiny_runs.tiny_model_dir(tmp_path)
  cache_dir = str(tmp_path / "store")
  halves = [SENTENCES[:15], SENTENCES[8:]]                       # 7 sentences in both
  procs = []
  for i, half in enumerate(halves):
    (tmp_path / f"s{i}.txt").write_text("\n".join(half), encoding="utf-8")
    procs.append(subprocess.Popen(
        [sys.executable, "-c", _FILL, model_dir, cache_dir, str(tmp_path / f"s{i}.txt"), str(tmp_path / f"ready{i}"),
         str(tmp_path / "go")], cwd=tiny_runs.REPO, env=dict(os.environ, PYTHONPATH=tiny_runs.REPO),
        stderr=subprocess.PIPE, text=True))
  deadline = time.time() + 300
  while not all((tmp_path / f"ready{i}").exists() for i in range(2)):   # both opened the store before either wrote
    assert time.time() < deadline and all(p.poll() is None for p in procs), [p.communicate() for p in procs]
    time.sleep(0.1)
  (tmp_path / "go").touch()
  for p in procs:
    _, err = p.communicate(timeout=300)
    assert p.returncode == 0, err[-3000:]
  store = _tiny_store(model_dir, cache_dir)
  stored = np.concatenate([store_lib.read_keys(p) for p in store_lib.shard_paths(store.folder, "mean-1")])
  assert len(stored) > len(set(stored.tolist())) == len(set(SENTENCES))   # the shared sentences are stored twice
  _check_counts_each_sentence_once(store, SENTENCES)
  assert store.encoded == 0


def test_a_re_encoded_corrupt_shard_of_one_quantity_still_pairs_with_the_other(tmp_path):
  model_dir = tiny_runs.tiny_model_dir(tmp_path)
  cache_dir = str(tmp_path / "store")
  store = _tiny_store(model_dir, cache_dir, shard_size=6)
  store.ensure(SENTENCES, ["mean-1", "mean-3"], show_progress=False)
  corrupt = store_lib.shard_paths(store.folder, "mean-1")[1]
  lost = store_lib.read_keys(corrupt)
  with open(corrupt, "r+b") as f:                                # a bit flipped in the middle of the file
    f.seek(os.path.getsize(corrupt) // 2)
    byte = f.read(1)
    f.seek(-1, os.SEEK_CUR)
    f.write(bytes([byte[0] ^ 0x10]))
  fresh = _tiny_store(model_dir, cache_dir, shard_size=6)
  # Some of the lost sentences first, then all: mean-1 gets shards that mean-3 has under other names.
  lost_sentences = [s for s in sorted(set(SENTENCES)) if store_lib.sentence_keys([s])[0] in lost.tolist()]
  fresh.ensure(lost_sentences[:2], ["mean-1", "mean-3"], show_progress=False)
  fresh.ensure(SENTENCES, ["mean-1", "mean-3"], show_progress=False)
  assert fresh.encoded == len(lost)
  names = [sorted(os.path.basename(p) for p in store_lib.shard_paths(fresh.folder, q)) for q in ("mean-1", "mean-3")]
  assert names[0] != names[1]
  _check_counts_each_sentence_once(fresh, SENTENCES)
