"""Cosine similarity (the project's one numpy cosine: row-wise and as a matrix) and exact top-k search over sentence
vectors. The methods encoders share are st_api.StApi.

`semantic_search` returns what sentence-transformers' `util.semantic_search` returns: per query, a list of
{"corpus_id": int, "score": float} by decreasing score; equal scores keep the lower corpus_id first (as
`tf.math.top_k` does, so the exported search model ranks the same way).

Both cosines divide by the same floored norm (`norms`: each L2 norm at least COSINE_EPS), so an all-zero row gives
0 instead of NaN.

Legend: n = queries (or pairs), m = corpus vectors, D = width, k = results per query.
"""
import numpy as np

COSINE_EPS = 1e-12


def norms(vectors):
  """The L2 norm of each row, floored at COSINE_EPS. float [n, D] -> [n] (the input's float dtype)."""
  return np.maximum(np.linalg.norm(vectors, axis=-1), COSINE_EPS)


def normalize(vectors):
  """Rows scaled to unit L2 norm (an all-zero row stays zero). float [n, D] -> np.float32 [n, D]."""
  vectors = np.asarray(vectors, np.float32)
  return vectors / norms(vectors)[..., None]


def cosine(a, b):
  """Row-wise cosine similarity, computed in float64 (the scores of evaluation).

  Args:
    a, b: arrays [n, D].

  Returns:
    float64 array [n]: cosine of a[i] and b[i].
  """
  a = np.asarray(a, np.float64)
  b = np.asarray(b, np.float64)
  if a.shape != b.shape or a.ndim != 2:
    raise ValueError(f"cosine needs two [N, D] arrays of the same shape, got {a.shape} and {b.shape}")
  return np.einsum("nd,nd->n", a, b) / (norms(a) * norms(b))


def cos_sim(a, b):
  """Cosine similarity of every row of `a` with every row of `b`.

  Args:
    a: float [n, D] or [D].
    b: float [m, D] or [D].

  Returns:
    np.float32 [n, m] (a [D] counts as [1, D]).
  """
  a, b = np.atleast_2d(a), np.atleast_2d(b)
  if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
    raise ValueError(f"cosine of vectors of shapes {list(a.shape)} and {list(b.shape)}: need [n, D] and [m, D] of "
                     "one width D")
  return normalize(a) @ normalize(b).T


def check_top_k(top_k, name="top_k"):
  """`top_k` as a Python int if it is an int >= 1 (numpy ints too, of any size), else ValueError in one line naming
  `name` (bools and floats are refused). A search answers min(top_k, corpus size) hits, as sentence-transformers."""
  if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1:
    raise ValueError(f"{name} must be an int >= 1, got {top_k!r}")
  return int(top_k)


def semantic_search(query_vectors, corpus_vectors, query_chunk_size=100, corpus_chunk_size=500000, top_k=10,
                    score_function=None):
  """Exact top-k: each query against every corpus vector, in sentence-transformers' `util.semantic_search` signature.

  Args:
    query_vectors: float [n, D] or [D].
    corpus_vectors: float [m, D].
    query_chunk_size, corpus_chunk_size: int >= 1, the queries and corpus vectors scored at a time (memory:
      query_chunk_size x corpus_chunk_size scores); the ranking does not depend on them (the scores' last float
      bits may: a matmul of another shape rounds differently).
    top_k: int >= 1; min(top_k, m) results per query.
    score_function: (a [q, D], b [c, D]) -> scores [q, c], higher is better; None: `cos_sim`.

  Returns:
    list of n lists of {"corpus_id": int, "score": float}, best first (equal scores: lower corpus_id first).
  """
  top_k = check_top_k(top_k)
  query_chunk_size = check_top_k(query_chunk_size, "query_chunk_size")
  corpus_chunk_size = check_top_k(corpus_chunk_size, "corpus_chunk_size")
  score_function = score_function or cos_sim
  queries, corpus = np.atleast_2d(query_vectors), np.atleast_2d(corpus_vectors)
  if not len(corpus):
    return [[] for _ in queries]  # as sentence-transformers: no corpus vectors, no hits
  k = min(top_k, len(corpus))
  results = []
  for q in range(0, len(queries), query_chunk_size):
    scores, ids = [], []                                                    # the best k of each corpus chunk
    for c in range(0, len(corpus), corpus_chunk_size):
      chunk = np.asarray(score_function(queries[q:q + query_chunk_size], corpus[c:c + corpus_chunk_size]))
      best = np.argsort(-chunk, axis=1, kind="stable")[:, :k]              # [q, <= k]
      scores.append(np.take_along_axis(chunk, best, axis=1))
      ids.append(best + c)
    scores, ids = np.concatenate(scores, axis=1), np.concatenate(ids, axis=1)
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]              # chunks in corpus order: ties stay
    results += [[{"corpus_id": int(i), "score": float(s)} for i, s in zip(row_ids[o], row_scores[o])]
                for row_ids, row_scores, o in zip(ids, scores, order)]
  return results
