"""search.semantic_search in sentence-transformers' signature: chunking changes no ranking, ties keep corpus order."""
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
