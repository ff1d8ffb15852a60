"""The Beam pipeline on Beam's FnApi runner with 2 worker processes (a real runner, the tiny model, 600 sentences).

One pipeline run (module fixture) over files holding 600 distinct sentences, duplicates and empty lines, into a
store that already holds 300 of them (the other 300 make 4 shards a quantity); every bundle runs twice
(`direct_runner_bundle_repeat`), as a retried bundle would. Skipped when apache_beam is not installed (it is an
optional extra: requirements-beam.txt).
"""
import os
import random

import numpy as np
import pytest

from tests import beam as beam_tests

beam_tests.require_apache_beam()

# pylint: disable=g-import-not-at-top,wrong-import-position
from bert_flow_tf import loaders
from bert_flow_tf.beam import filesystem
from bert_flow_tf.beam import local_runner
from bert_flow_tf.beam import pipeline
from bert_flow_tf.embedding import store_files
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from bert_flow_tf.embedding.store import EmbeddingStore
from bert_flow_tf.embedding.store_files import sentence_keys
from bert_flow_tf.modeling import pooling as pooling_lib
from tests.embedding.engine_vectors import engine_vectors
from tests.tiny_runs import REPO, tiny_model_dir

POOLING = "first-last-avg"   # two quantities: mean-1 and mean-3
MAX_LEN = 16
WORDS = ["a", "man", "dog", "runs", "plays", "the", "guitar", ".", "x", "zebra"]


def _sentences(n, seed=0):
  rng = random.Random(seed)
  out = set()
  while len(out) < n:
    out.add(" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 20))))
  return sorted(out)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
  """Runs the pipeline once; returns (model_dir, cache_dir, sentences, prefilled, summary)."""
  tmp = tmp_path_factory.mktemp("beam")
  model_dir = tiny_model_dir(tmp)
  sentences = _sentences(600)
  rng = random.Random(1)
  prefilled = rng.sample(sentences, 300)
  cache_dir = str(tmp / "cache")
  # Half the sentences are in the store already (written by the store itself).
  embedder = SentenceEmbedder(loaders.load_model(model_dir=model_dir), POOLING, max_seq_length=MAX_LEN)
  EmbeddingStore(embedder, cache_dir, batch_size=64).vectors(prefilled, embedder.pooling_spec, show_progress=False)
  # Two files (a glob), with duplicates across and within them, empty and whitespace-only lines.
  (tmp / "in").mkdir()
  (tmp / "in" / "a.txt").write_text("\n".join(sentences[:360] + ["", "   "] + sentences[:10]) + "\n")
  (tmp / "in" / "b.txt").write_text("\n".join(sentences[330:] + [""]) + "\n")
  # The worker processes import bert_flow_tf from the repository root (what `python -m bert_flow_tf.beam` sets).
  old_path = os.environ.get("PYTHONPATH")
  os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (REPO, old_path) if p)
  try:
    summary = pipeline.embed_files(
        str(tmp / "in" / "*.txt"), cache_dir, {"model_dir": model_dir}, [POOLING], max_seq_length=MAX_LEN,
        batch_size=32, shard_size=90, inference_batch_size=64, intra_op_threads=1,
        options=local_runner.options(2, ["--direct_runner_bundle_repeat=1"]))
  finally:
    if old_path is None:
      del os.environ["PYTHONPATH"]
    else:
      os.environ["PYTHONPATH"] = old_path
  return model_dir, cache_dir, sentences, prefilled, summary


def _shard_keys(folder, name):
  return {path: store_files.read_keys(path) for path in store_files.shard_paths(folder, name)}


@pytest.mark.slow
def test_the_store_then_serves_every_sentence_without_bert_with_embedder_vectors(run):
  model_dir, cache_dir, sentences, _, summary = run
  embedder = SentenceEmbedder(loaders.load_model(model_dir=model_dir), POOLING, max_seq_length=MAX_LEN)
  store = EmbeddingStore(embedder, cache_dir, batch_size=64)      # what run_flow.py --cache_dir opens
  assert store.folder == summary["folder"]
  got = store.vectors(sentences, embedder.pooling_spec, show_progress=False)
  assert store.encoded == 0                                          # no BERT work
  want = engine_vectors(embedder, sentences, 64)
  assert np.max(np.abs(got - want)) <= 1e-6


@pytest.mark.slow
def test_only_the_unstored_half_is_embedded_once_into_distinct_atomic_shards(run):
  _, _, sentences, prefilled, summary = run
  folder = summary["folder"]
  assert summary["names"] == sorted(pooling_lib.quantities(pooling_lib.resolve(POOLING, 3)))
  beam_keys = None
  for name in summary["names"]:
    files = os.listdir(os.path.join(folder, name))
    assert all(f.endswith(".npz") for f in files), files             # no temporary file left behind
    keys = _shard_keys(folder, name)
    stored = np.concatenate(list(keys.values()))
    assert len(stored) == len(set(stored.tolist())) == len(sentences)  # each sentence once, none twice
    new = np.concatenate([k for path, k in keys.items()
                          if not set(k.tolist()) & set(sentence_keys(prefilled).tolist())])
    if beam_keys is None:
      beam_keys = new
    # The same shard names (hashes of the same keys) in every quantity's folder.
    assert sorted(os.path.basename(p) for p in keys) == sorted(
        os.path.basename(p) for p in _shard_keys(folder, summary["names"][0]))
  unstored = sorted(set(sentences) - set(prefilled))
  assert sorted(beam_keys.tolist()) == sorted(sentence_keys(unstored).tolist())
  assert summary["empty_lines"] > 0 and summary["duplicates"] > 0 and summary["already_stored"] > 0


def test_writing_a_shard_twice_through_beams_filesystems_keeps_one_file(tmp_path):
  keys = np.sort(sentence_keys(["a", "b", "c"]))
  vectors = np.arange(6, dtype=np.float32).reshape(3, 2)
  first = store_files.write_shard(str(tmp_path), "mean-1", keys, vectors, filesystem.BEAM_FILES)
  assert store_files.write_shard(str(tmp_path), "mean-1", keys, vectors, filesystem.BEAM_FILES) == first
  assert os.listdir(tmp_path / "mean-1") == [os.path.basename(first)] == [store_files.shard_name(keys)]
  np.testing.assert_array_equal(store_files.read_keys(first, filesystem.BEAM_FILES), keys)
  np.testing.assert_array_equal(store_files.shard_member(first, "vectors"), vectors)   # what the store reads
  with pytest.raises(ValueError, match="sorted"):
    store_files.write_shard(str(tmp_path), "mean-1", keys[::-1], vectors, filesystem.BEAM_FILES)
  (tmp_path / "mean-1" / os.path.basename(first)).write_bytes(b"not a zip file")
  assert pipeline._stored_keys(("mean-1", first)) == []   # pylint: disable=protected-access  # embedded again
