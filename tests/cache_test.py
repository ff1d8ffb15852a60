"""EmbeddingCache: vectors are reused, and a corrupt or mismatched file is rebuilt, never used."""
import numpy as np
import pytest

from bert_flow_tf import loaders
from bert_flow_tf.embedding.cache import EmbeddingCache, cache_key, model_fingerprint
from bert_flow_tf.modeling.config import BertConfig
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from bert_flow_tf.modeling.bert_encoder import BertEncoder

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "man", "dog", "runs", "plays", "the", "guitar", "."]
SENTENCES = ["a man plays the guitar .", "the dog runs .", "a man plays the guitar .", ""]


@pytest.fixture
def encoder(tmp_path):
  vocab = tmp_path / "model" / "vocab.txt"
  vocab.parent.mkdir()
  vocab.write_text("\n".join(VOCAB) + "\n")
  config = BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=24, max_position_embeddings=64, type_vocab_size=2)
  model = loaders.LoadedModel(BertEncoder(config).build_variables(), 2, 16, str(vocab), True,
                              str(vocab.parent), "hf", config)
  return SentenceEmbedder(model, "last-avg", max_seq_length=16)


class _Counting:
  """Counts how many sentences reach the real encoder."""

  def __init__(self, encoder):
    self.embedder, self.count = encoder, 0
    self.dim, self.pooling, self.max_seq_length = encoder.dim, encoder.pooling, encoder.max_seq_length

  def encode(self, sentences, batch_size):
    self.count += len(sentences)
    return self.embedder.encode(sentences, batch_size=batch_size)


def test_vectors_are_cached_and_reused(tmp_path, encoder):
  counting = _Counting(encoder)
  cache = EmbeddingCache(counting, str(tmp_path / "model"), str(tmp_path / "cache"))
  first = cache.embed(SENTENCES)
  assert first.shape == (4, 16) and counting.count == 3          # duplicates encoded once
  np.testing.assert_array_equal(first[0], first[2])
  np.testing.assert_allclose(first, encoder.encode(SENTENCES), atol=1e-6)
  again = EmbeddingCache(counting, str(tmp_path / "model"), str(tmp_path / "cache")).embed(SENTENCES)
  assert counting.count == 3
  np.testing.assert_array_equal(first, again)


def test_corrupt_or_mismatched_files_are_rebuilt(tmp_path, encoder, caplog):
  counting = _Counting(encoder)
  cache = EmbeddingCache(counting, str(tmp_path / "model"), str(tmp_path / "cache"))
  want = cache.embed(SENTENCES)
  (path,) = list((tmp_path / "cache").iterdir())
  path.write_bytes(b"not a zip file")
  np.testing.assert_array_equal(cache.embed(SENTENCES), want)
  assert counting.count == 6 and "unreadable" in caplog.text
  with np.load(path) as f:
    key, vectors = f["key"], f["embeddings"]
  np.savez(path, key=key, embeddings=np.full_like(vectors, np.nan))
  np.testing.assert_array_equal(cache.embed(SENTENCES), want)
  assert counting.count == 9 and "does not match" in caplog.text


def test_key_depends_on_model_files_pooling_length_and_sentences(tmp_path):
  (tmp_path / "m").mkdir()
  (tmp_path / "m" / "w.bin").write_bytes(b"1")
  before = model_fingerprint(str(tmp_path / "m"))
  base = cache_key(before, "last-avg", 64, ["a", "b"])
  assert base != cache_key(before, "emb-avg", 64, ["a", "b"])
  assert base != cache_key(before, "last-avg", 32, ["a", "b"])
  assert base != cache_key(before, "last-avg", 64, ["a", "c"])
  (tmp_path / "m" / "w.bin").write_bytes(b"22")
  assert model_fingerprint(str(tmp_path / "m")) != before
