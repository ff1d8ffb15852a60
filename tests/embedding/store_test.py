"""EmbeddingStore: per-sentence quantities, each encoded once, reused across pooling_specs; corrupt shards rebuilt."""
import os

import numpy as np
import pytest

from bert_flow_tf.embedding import store_files
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from bert_flow_tf.embedding.store import EmbeddingStore
from bert_flow_tf.embedding.store_files import model_fingerprint
from bert_flow_tf.modeling import pooling as pooling_lib
from tests.embedding.engine_vectors import engine_vectors
from tests.embedding.tiny_model import SENTENCES, tiny_model


@pytest.fixture(scope="module")
def model(tmp_path_factory):
  """One tiny BERT for the module: its traces (the stores' and engine_vectors') are made once."""
  return tiny_model(tmp_path_factory.mktemp("model"))


_EMBEDDERS = {}


def embedder(model, name, max_seq_length=16):
  """The module's SentenceEmbedder of `model` for (name, max_seq_length), shared as SentenceEncoder shares its own
  across stores; a test that changes one makes its own."""
  key = (id(model), name, max_seq_length)
  if key not in _EMBEDDERS:
    _EMBEDDERS[key] = SentenceEmbedder(model, name, max_seq_length=max_seq_length)
  return _EMBEDDERS[key]


def shards(cache_dir):
  return sorted(os.path.relpath(os.path.join(d, f), cache_dir) for d, _, fs in os.walk(cache_dir) for f in fs
                if f.endswith(".npz"))


def test_each_distinct_sentence_is_encoded_once_and_kept_on_disk(tmp_path, model):
  store = EmbeddingStore(embedder(model, "first-last-avg"), str(tmp_path / "store"), batch_size=4)
  first = store.vectors(SENTENCES, pooling_lib.resolve("first-last-avg", 3))
  assert store.encoded == len(set(SENTENCES))                        # duplicates encoded once
  # Other batches (the store encodes each distinct sentence once) may round differently in the last bit.
  np.testing.assert_allclose(first, engine_vectors(embedder(model, "first-last-avg"), SENTENCES, 4), atol=1e-6)
  # A sentence shared by two lists (splits, datasets) is not encoded again, by this store or a new one.
  store.vectors(SENTENCES[:3] + ["a new one"], pooling_lib.resolve("first-last-avg", 3))
  assert store.encoded == len(set(SENTENCES)) + 1
  again = EmbeddingStore(embedder(model, "first-last-avg"), str(tmp_path / "store"), batch_size=4)
  np.testing.assert_array_equal(again.vectors(SENTENCES, pooling_lib.resolve("first-last-avg", 3)), first)
  assert again.encoded == 0
  assert {s.split(os.sep)[1] for s in shards(tmp_path / "store")} == {"mean-1", "mean-3"}


def test_a_pooling_needing_only_stored_quantities_runs_no_bert(tmp_path, model):
  store = EmbeddingStore(embedder(model, "first-last-avg"), str(tmp_path / "store"), batch_size=4)
  store.vectors(SENTENCES, pooling_lib.resolve("first-last-avg", 3))
  before = store.encoded
  last = store.vectors(SENTENCES, pooling_lib.resolve("last-avg", 3))
  assert store.encoded == before
  # Another graph (one quantity instead of two) may round differently in the last bit.
  np.testing.assert_allclose(last, engine_vectors(embedder(model, "last-avg"), SENTENCES, 4), atol=1e-6)
  store.vectors(SENTENCES, pooling_lib.resolve("emb-avg", 3))       # needs mean-0: encoded now, once
  assert store.encoded == 2 * before


def test_several_poolings_in_one_pass(tmp_path, model):
  store = EmbeddingStore(embedder(model, "last-avg"), None, batch_size=4)
  pooling_specs = [pooling_lib.resolve(n, 3) for n in ("emb-avg", "last-avg", "first-last-avg", "cls")]
  store.get(SENTENCES, {q for p in pooling_specs for q in pooling_lib.quantities(p)})
  assert store.encoded == len(set(SENTENCES))
  for p in pooling_specs:
    np.testing.assert_allclose(store.vectors(SENTENCES, p), engine_vectors(embedder(model, p.name), SENTENCES, 4),
                               atol=1e-6)
  assert store.encoded == len(set(SENTENCES))


def test_corrupt_or_non_finite_shards_are_rebuilt(tmp_path, model, caplog):
  cache_dir = tmp_path / "store"
  one = embedder(model, "last-avg")   # each fresh store below: a new store on the folder, the same embedder's traces
  store = EmbeddingStore(one, str(cache_dir), batch_size=4)
  want = store.vectors(SENTENCES, pooling_lib.resolve("last-avg", 3))
  (path,) = [cache_dir / s for s in shards(cache_dir)]
  first_value = store_files.shard_member(path, "vectors").offset     # its lowest byte: flipped, still finite

  def flip(data):
    return data[:first_value] + bytes([data[first_value] ^ 1]) + data[first_value + 1:]

  for corrupt in (lambda data: b"not a zip file", lambda data: data[:len(data) // 2], flip):  # garbage; a kill; a bit
    (path,) = [cache_dir / s for s in shards(cache_dir)]
    path.write_bytes(corrupt(path.read_bytes()))
    caplog.clear()
    fresh = EmbeddingStore(one, str(cache_dir), batch_size=4)
    np.testing.assert_array_equal(fresh.vectors(SENTENCES, pooling_lib.resolve("last-avg", 3)), want)
    assert fresh.encoded == len(set(SENTENCES)) and "unreadable" in caplog.text
  (path,) = [cache_dir / s for s in shards(cache_dir)]
  with np.load(path) as f:
    keys, vectors = f["keys"], f["vectors"]
  np.savez(path, keys=keys, vectors=np.full_like(vectors, np.nan))
  fresh = EmbeddingStore(one, str(cache_dir), batch_size=4)
  np.testing.assert_array_equal(fresh.vectors(SENTENCES, pooling_lib.resolve("last-avg", 3)), want)
  assert fresh.encoded == len(set(SENTENCES)) and "finite" in caplog.text


def test_ensure_stores_the_vectors_and_a_store_on_disk_holds_only_keys(tmp_path, model):
  cache_dir = str(tmp_path / "store")
  store = EmbeddingStore(embedder(model, "last-avg"), cache_dir, batch_size=4, shard_size=10)
  assert store.ensure(SENTENCES, ["mean-3"]) is None
  assert store.encoded == len(set(SENTENCES)) and len(shards(cache_dir)) == -(-len(set(SENTENCES)) // 10)
  fresh = EmbeddingStore(embedder(model, "last-avg"), cache_dir, batch_size=4)
  fresh.ensure(SENTENCES[::-1], ["mean-3"])
  assert fresh.encoded == 0
  assert all(isinstance(source, str) for source in fresh._quantity("mean-3").sources)  # shard paths, no vectors
  np.testing.assert_allclose(fresh.vectors(SENTENCES[::-1], pooling_lib.resolve("last-avg", 3)),
                             engine_vectors(embedder(model, "last-avg"), SENTENCES[::-1], 4), atol=1e-6)


def test_a_killed_encoding_keeps_its_finished_shards(tmp_path, model):
  cache_dir = str(tmp_path / "store")
  store = EmbeddingStore(SentenceEmbedder(model, "last-avg", max_seq_length=16), cache_dir, batch_size=4,
                         shard_size=10)
  calls = []
  real = store.embedder.encode_quantities

  def dies_on_the_third_shard(*args, **kwargs):
    calls.append(1)
    if len(calls) == 3:
      raise KeyboardInterrupt
    return real(*args, **kwargs)

  store.embedder.encode_quantities = dies_on_the_third_shard
  with pytest.raises(KeyboardInterrupt):
    store.get(SENTENCES, ["mean-3"])
  assert len(shards(cache_dir)) == 2
  rerun = EmbeddingStore(embedder(model, "last-avg"), cache_dir, batch_size=4, shard_size=10)
  rerun.get(SENTENCES, ["mean-3"])
  assert rerun.encoded == len(set(SENTENCES)) - 20


def test_the_store_key_covers_model_files_and_length(tmp_path):
  model = tiny_model(tmp_path / "model")     # its own: a file is added to its folder
  a = EmbeddingStore(embedder(model, "last-avg"), str(tmp_path / "s")).folder
  assert EmbeddingStore(embedder(model, "last-avg", 8), str(tmp_path / "s")).folder != a
  assert EmbeddingStore(embedder(model, "emb-avg"), str(tmp_path / "s")).folder == a   # pooling-independent
  before = model_fingerprint(model.source)
  (tmp_path / "model" / "weights.bin").write_bytes(b"1")
  assert model_fingerprint(model.source) != before
  assert EmbeddingStore(embedder(model, "last-avg"), str(tmp_path / "s")).folder != a
