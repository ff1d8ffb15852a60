"""SentenceEmbedder on the real MiniLM (order, buckets, empty lines) and reading sentence files."""
import numpy as np
import pytest
import tensorflow as tf

from bert_flow_tf.utils import io_utils
from bert_flow_tf import loaders
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from tests.embedding.engine_vectors import engine_vectors

SENTENCES = ["A man is playing a guitar.", "", "   ", "Three dogs run across a snowy field near the river.",
             "word " * 80, "A woman slices an onion.", "Hi."]


@pytest.fixture(scope="module")
def minilm(minilm_dir):
  return loaders.load_model(str(minilm_dir))


@pytest.mark.slow
def test_bucketed_batches_equal_one_sentence_at_full_length(minilm):
  enc = SentenceEmbedder(minilm, "first-last-avg", max_seq_length=64)
  got = engine_vectors(enc, SENTENCES, 3)
  for i, sentence in enumerate(SENTENCES):
    inputs = enc.tokenizer(tf.constant([sentence]), 64)
    want = enc.embed_inputs(inputs).numpy()[0]
    np.testing.assert_allclose(got[i], want, atol=1e-5, err_msg=repr(sentence))
  # Empty and whitespace-only lines are both "[CLS] [SEP]".
  np.testing.assert_array_equal(got[1], got[2])
  assert np.all(np.isfinite(got))


def test_read_lines_errors(tmp_path):
  with pytest.raises(FileNotFoundError, match="missing.txt"):
    io_utils.read_lines(str(tmp_path / "missing.txt"))
  path = tmp_path / "crlf.txt"
  path.write_bytes(b"one\r\ntwo\r\n")
  assert io_utils.read_lines(str(path)) == ["one", "two"]
