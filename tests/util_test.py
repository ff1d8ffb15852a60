"""bert_flow_tf.util against what sentence-transformers' util returned on the same vectors (the fixture
tests/fixtures/st_util.json, written once by scripts/make_util_fixture.py with sentence-transformers itself)."""
import json
import pathlib

import numpy as np
import pytest

import bert_flow_tf
from bert_flow_tf import search
from bert_flow_tf import util
from tests import tiny_runs
from tests.embedding.tiny_model import SENTENCES

FIXTURE = json.loads((pathlib.Path(__file__).resolve().parent / "fixtures" / "st_util.json").read_text())
X = np.asarray(FIXTURE["embeddings"], np.float32)


def _same_pairs(got, want):
  """Equal [score, i, j] lists: the same pairs in the same order, scores to float32 rounding."""
  assert [(i, j) for _, i, j in got] == [(i, j) for _, i, j in want]
  np.testing.assert_allclose([s for s, _, _ in got], [s for s, _, _ in want], atol=1e-5)


def test_cos_sim_and_semantic_search():
  np.testing.assert_allclose(util.cos_sim(X[:10], X), FIXTURE["cos_sim"], atol=1e-5)
  got = util.semantic_search(X[:10], X, **FIXTURE["semantic_search"]["args"])
  for got_hits, want_hits in zip(got, FIXTURE["semantic_search"]["result"], strict=True):
    assert [h["corpus_id"] for h in got_hits] == [h["corpus_id"] for h in want_hits]
    np.testing.assert_allclose([h["score"] for h in got_hits], [h["score"] for h in want_hits], atol=1e-5)


@pytest.mark.parametrize("name", sorted(FIXTURE["similarity"]))
def test_similarity_matrices(name):
  got = getattr(util, name)(X[:10], X)
  assert got.dtype == np.float32 and got.shape == (10, 60)
  np.testing.assert_allclose(got, FIXTURE["similarity"][name], rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(getattr(util, name)(X[0].tolist(), X[:3]), got[:1, :3], rtol=1e-5, atol=1e-5)  # [D]


@pytest.mark.parametrize("name", sorted(FIXTURE["pairwise"]))
def test_pairwise_similarities(name):
  got = getattr(util, name)(X[:30], X[30:])
  assert got.dtype == np.float32 and got.shape == (30,)
  np.testing.assert_allclose(got, FIXTURE["pairwise"][name], rtol=1e-5, atol=1e-5)
  with pytest.raises(ValueError, match=r"similarity of vectors of shapes \[30, 8\] and \[29, 8\]: need \[n, D\]"):
    getattr(util, name)(X[:30], X[31:])


def test_angle_sim_at_an_odd_width_normalize_and_truncate_embeddings():
  np.testing.assert_allclose(util.pairwise_angle_sim(X[:30, :7], X[30:, :7]), FIXTURE["pairwise_angle_sim_odd_width"],
                             rtol=1e-5, atol=1e-5)
  unit = util.normalize_embeddings(X[:10])
  assert unit.dtype == np.float32
  np.testing.assert_allclose(unit, FIXTURE["normalize_embeddings"], atol=1e-6)
  np.testing.assert_allclose(util.normalize_embeddings(X[0]), unit[0], atol=1e-6)  # a [D] stays [D]
  np.testing.assert_array_equal(util.truncate_embeddings(X, 5), X[:, :5])
  np.testing.assert_array_equal(util.truncate_embeddings(X[:2], None), X[:2])
  np.testing.assert_array_equal(util.truncate_embeddings(X[:2], 8), X[:2])
  codes = util.quantize_embeddings(X[:10], "int8", calibration_embeddings=X)
  assert util.truncate_embeddings(codes, 3).dtype == np.int8  # the dtype it is given
  for bad in (0, 9, -1, 2.5):
    with pytest.raises(ValueError, match=f"truncate_dim must be an int in 1..8 \\(the embedding width\\), got {bad}"):
      util.truncate_embeddings(X, bad)


def test_sentence_transformers_other_names():
  assert util.pytorch_cos_sim is util.cos_sim and util.information_retrieval is util.semantic_search
  assert util.normalize_embeddings is search.normalize


@pytest.mark.parametrize("case", FIXTURE["paraphrase_mining"], ids=lambda c: json.dumps(c["args"]))
def test_paraphrase_mining_embeddings(case):
  _same_pairs(util.paraphrase_mining_embeddings(X, **case["args"]), case["result"])


@pytest.mark.parametrize("case", FIXTURE["community_detection"], ids=lambda c: json.dumps(c["args"]))
def test_community_detection(case):
  assert util.community_detection(X, **case["args"]) == case["result"]


@pytest.mark.parametrize("precision", ["int8", "uint8", "binary", "ubinary"])
def test_quantize_embeddings(precision):
  got = util.quantize_embeddings(X[:10], precision, calibration_embeddings=X)
  np.testing.assert_array_equal(got, FIXTURE["quantize_embeddings"][precision])


@pytest.mark.slow  # the tiny model's first encode
def test_paraphrase_mining_encodes_with_the_model(tmp_path):
  enc = bert_flow_tf.SentenceEncoder.from_pretrained(tiny_runs.tiny_model_dir(tmp_path), max_seq_length=16)
  got = util.paraphrase_mining(enc, SENTENCES, top_k=3)
  assert got and got == util.paraphrase_mining_embeddings(enc.encode(SENTENCES), top_k=3)
