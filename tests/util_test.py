"""bert_flow_tf.util against what sentence-transformers' util returned on the same vectors (the fixture
tests/fixtures/st_util.json, written once by scripts/make_util_fixture.py with sentence-transformers itself)."""
import json
import pathlib

import numpy as np
import pytest

import bert_flow_tf
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
