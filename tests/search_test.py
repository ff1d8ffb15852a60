"""search.semantic_search in sentence-transformers' signature: chunking changes no ranking, ties keep corpus order."""
import re

import numpy as np
import pytest

from bert_flow_tf import search
from bert_flow_tf import similarity


def test_chunks_give_the_unchunked_answer_with_ties_in_corpus_order():
  rng = np.random.default_rng(0)
  corpus = rng.standard_normal([50, 8]).astype(np.float32)
  corpus[[7, 31, 44]] = corpus[3]                      # four equal vectors: equal scores for every query
  queries = np.concatenate([corpus[3:4], rng.standard_normal([6, 8]).astype(np.float32)])
  want = search.semantic_search(queries, corpus, top_k=6)
  assert [hit["corpus_id"] for hit in want[0][:4]] == [3, 7, 31, 44]
  scores = search.cos_sim(queries, corpus)
  for row, hits in zip(scores, want):
    assert [hit["corpus_id"] for hit in hits] == list(np.argsort(-row, kind="stable")[:6])
  ids = lambda hits: [[hit["corpus_id"] for hit in row] for row in hits]
  for query_chunk, corpus_chunk in ((1, 1), (3, 7), (100, 500000)):
    got = search.semantic_search(queries, corpus, query_chunk, corpus_chunk, top_k=6)
    assert ids(got) == ids(want)
    np.testing.assert_allclose([[h["score"] for h in row] for row in got],  # a matmul of another shape rounds
                               [[h["score"] for h in row] for row in want], atol=1e-6)
  assert search.semantic_search(queries, corpus, top_k=6) == want


def test_score_function_and_bad_arguments():
  a = np.array([[1.0, 0.0]], np.float32)
  corpus = np.array([[2.0, 0.0], [0.0, 1.0], [1.0, 0.0]], np.float32)
  hits = search.semantic_search(a, corpus, top_k=2, score_function=lambda x, y: similarity.matrix("euclidean", x, y))
  assert hits == [[{"corpus_id": 2, "score": 0.0}, {"corpus_id": 0, "score": -1.0}]]
  for kwargs, name in ((dict(top_k=0), "top_k"), (dict(query_chunk_size=0), "query_chunk_size"),
                       (dict(corpus_chunk_size=1.5), "corpus_chunk_size")):
    with pytest.raises(ValueError, match=f"{name} must be an int >= 1"):
      search.semantic_search(a, corpus, **kwargs)


def test_top_k_is_a_python_int_of_any_size_and_never_more_than_the_corpus():
  corpus = np.eye(3, dtype=np.float32)
  for top_k in (3, 2 ** 31, 2 ** 64, np.int64(2 ** 40), np.uint64(2 ** 63)):
    assert type(search.check_top_k(top_k)) is int and search.check_top_k(top_k) == top_k
    assert [h["corpus_id"] for h in search.semantic_search(corpus[:1], corpus, top_k=top_k)[0]] == [0, 1, 2]
  for top_k in (0, -1, True, 2.0, np.float64(2), "2", None):
    with pytest.raises(ValueError, match=f"^top_k must be an int >= 1, got {re.escape(repr(top_k))}$"):
      search.check_top_k(top_k)
