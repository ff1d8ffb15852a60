"""Table 1: exact numbers on a hand-made embedding matrix, wordfreq ranks on a tiny vocab, the matrix of a model."""
import math

import numpy as np
import pytest

from bert_flow_tf import loaders
from bert_flow_tf.analysis import word_frequency
from bert_flow_tf.loaders import tfhub
from tests.embedding.tiny_model import tiny_model

# Six 2-D "word embeddings"; rows 0, 1 are the two most frequent words, rows 4, 5 the next two, rows 2, 3 are not
# ranked (they still count as neighbours). Distances worked out by hand:
#   row 0 (1, 0):  to 1 sqrt2, to 2 2, to 3 sqrt5, to 4 sqrt20, to 5 sqrt89   -> 2-NN: 1, 2 (dots 0, -1)
#   row 1 (0, 1):  to 0 sqrt2, to 2 sqrt2, to 3 3, ...                        -> 2-NN: 0, 2 (dots 0, 0)
#   row 4 (3, 4):  to 0 sqrt20, to 1 sqrt18, to 2 sqrt32, to 3 sqrt45, to 5 5 -> 2-NN: 1, 0 (dots 4, 3)
#   row 5 (6, 8):  to 4 5, to 1 sqrt85, to 0 sqrt89, ...                      -> 2-NN: 4, 1 (dots 50, 8)
MATRIX = np.array([[1., 0.], [0., 1.], [-1., 0.], [0., -2.], [3., 4.], [6., 8.]])
RANKS = np.array([0, 1, -1, -1, 2, 3])
BUCKETS = ((0, 2), (2, 4))


def test_frequency_table_gives_the_hand_computed_numbers():
  table = word_frequency.frequency_table(MATRIX, RANKS, BUCKETS, ks=(1, 2))
  s2 = math.sqrt(2)
  expected = {
      "num_words": [2, 2],
      "mean_norm": [1., 7.5],
      "knn_l2_k1": [s2, (math.sqrt(18) + 5) / 2],
      "knn_l2_k2": [(3 * s2 + 2) / 4, (math.sqrt(18) + math.sqrt(20) + 5 + math.sqrt(85)) / 4],
      "knn_dot_k1": [0., (4 + 50) / 2],
      "knn_dot_k2": [-0.25, (4 + 3 + 50 + 8) / 4],
  }
  assert table["buckets"] == [[0, 2], [2, 4]]
  for key, values in expected.items():
    np.testing.assert_allclose(table[key], values, rtol=0, atol=1e-12, err_msg=key)


def test_an_empty_bucket_gives_none():
  table = word_frequency.frequency_table(MATRIX, RANKS, ((0, 2), (10, 20)), ks=(1,))
  assert table["num_words"] == [2, 0] and table["mean_norm"][1] is None and table["knn_l2_k1"][1] is None


def test_nearest_neighbours_is_the_same_in_any_chunking_and_never_the_word_itself():
  rng = np.random.default_rng(0)
  matrix = rng.normal(size=(50, 8))
  whole = word_frequency.nearest_neighbours(matrix, np.arange(50), 4, chunk_size=512)
  chunked = word_frequency.nearest_neighbours(matrix, np.arange(50), 4, chunk_size=7)
  np.testing.assert_array_equal(whole[0], chunked[0])
  brute = np.sort(np.linalg.norm(matrix[:, None] - matrix[None], axis=-1) + np.diag([np.inf] * 50), axis=1)[:, :4]
  np.testing.assert_allclose(whole[0], brute, atol=1e-12)
  with pytest.raises(ValueError, match="k=50"):
    word_frequency.nearest_neighbours(matrix, [0], 50)


def test_frequency_ranks_sort_by_frequency_then_id_and_skip_zero():
  ranks = word_frequency.frequency_ranks([0.1, 0., 0.5, 0.1, 0.2])
  np.testing.assert_array_equal(ranks, [2, -1, 0, 3, 1])


def test_only_whole_words_with_a_wordfreq_frequency_are_ranked():
  vocab = ["[PAD]", "[unused0]", "[CLS]", "dog", "##s", "1990", "the", ",", "qxzvbnkj", "##the"]
  frequencies = word_frequency.word_frequencies(vocab)
  assert [t for t, f in zip(vocab, frequencies) if f > 0] == ["dog", "the"]
  np.testing.assert_array_equal(word_frequency.frequency_ranks(frequencies), [-1] * 3 + [1, -1, -1, 0] + [-1] * 3)


def test_table1_reads_the_word_embeddings_of_our_encoder(tmp_path):
  model = tiny_model(tmp_path / "model")
  matrix = word_frequency.word_embedding_matrix(model)
  np.testing.assert_array_equal(matrix, model.encoder.embeddings.word_embeddings.numpy())
  table = word_frequency.table1(model, buckets=((0, 2), (2, 7)), ks=(1, 3))
  assert table["examples"][0] == ["the", "a"]           # the two most frequent English words of the vocab
  assert table["num_words"] == [2, 5]                    # 7 words: "." and the [..] tokens are not ranked
  ranks = word_frequency.frequency_ranks(word_frequency.word_frequencies(
      [line for line in (tmp_path / "model" / "vocab.txt").read_text().split("\n") if line]))
  assert table["knn_l2_k3"] == word_frequency.frequency_table(matrix, ranks, ((0, 2), (2, 7)), (1, 3))["knn_l2_k3"]


@pytest.mark.slow
def test_the_word_embeddings_of_a_tfhub_encoder(tmp_path):
  model = tiny_model(tmp_path / "model")
  matrix = word_frequency.word_embedding_matrix(model)
  tfhub.save_hub_encoder(model.encoder, str(tmp_path / "hub"), vocab_file=model.vocab_file)
  hub = loaders.load_model(str(tmp_path / "hub"))
  np.testing.assert_array_equal(word_frequency.word_embedding_matrix(hub), matrix)


def test_markdown_puts_the_papers_numbers_beside_ours():
  values = np.arange(4) / 8
  table = {"buckets": [list(b) for b in word_frequency.BUCKETS], "num_words": [100, 400, 4500, 5000],
           **{key: list(values) for key in word_frequency.ROW_NAMES}}
  text = word_frequency.table1_markdown(table)
  assert "| rank of word frequency | [0, 100) | [100, 500) | [500, 5K) | [5K, 10K) |" in text
  assert "| Mean l2-norm | 0.00 / 0.95 | 0.12 / 1.04 | 0.25 / 1.22 | 0.38 / 1.45 |" in text
  assert "| Mean k-NN dot-product (k=7) | 0.00 / 0.72 | 0.12 / 0.90 | 0.25 / 1.17 | 0.38 / 1.60 |" in text
  table["buckets"][3] = [5000, 6000]  # not the paper's buckets: ours alone
  assert "| Mean l2-norm | 0.00 | 0.12 | 0.25 | 0.38 |" in word_frequency.table1_markdown(table)
