"""Binary search with int8 rescoring over a corpus held as codes (`corpus_codes.CorpusCodes`): the numpy side of
the binary search SavedModel (`binary_search_model`).

`search_codes` ranks a query q against the corpus in two passes:
  1. Hamming distance between q's sign bits (centred and turned by the corpus's sign rotation, as its words are:
     `corpus_codes`) and each corpus vector's words; the `candidates` nearest (equal distances: the lower index
     first).
  2. Rescoring (rescore=True): cosine of q (float32) and each candidate's codes read back to the middle of their
     buckets (`corpus_codes.dequantize`); the top_k of those, best first (equal scores: the Hamming-nearer first).
     Without rescoring, the top_k of pass 1 with score 1 - 2 hamming / D' (the cosine of the centred, rotated
     +-1 sign vectors).

Every binary search (this one, `ivf_index`, the SavedModel, ExportedEncoder.search) takes its precision check,
its `candidates` default and its refusal of candidates < top_k from here. The SavedModel computes the same in its
graph; `code_search.semantic_search` calls this unless an inverted-file index (`ivf_index`) is asked for.

Legend: n = queries, M = corpus vectors, D' = width, W = 64-bit words per vector, C = candidates.
"""
import numpy as np

from bert_flow_tf import search
from bert_flow_tf.quantization import corpus_codes

DEFAULT_CANDIDATES = 100  # the Hamming-nearest rescored when a search names none (at least top_k: `candidates_for`)
SEARCH_PRECISIONS = ("float32", "binary")


def check_search_precision(precision):
  """Returns precision if it is one of SEARCH_PRECISIONS, else raises ValueError naming them (every search's check)."""
  if precision not in SEARCH_PRECISIONS:
    raise ValueError(f"search precision {precision!r} is not supported; use one of {', '.join(SEARCH_PRECISIONS)}")
  return precision


def candidates_for(top_k, candidates):
  """The candidates every binary search rescores: None -> max(DEFAULT_CANDIDATES, top_k); an int is checked
  (`check_search_args`: one below top_k is an error, on every search path). Returns int."""
  if candidates is None:
    candidates = max(DEFAULT_CANDIDATES, search.check_top_k(top_k))
  return check_search_args(top_k, candidates)[1]


def check_search_args(top_k, candidates):
  """(top_k, candidates) as Python ints (`search.check_top_k`); ValueError unless 1 <= top_k <= candidates."""
  top_k, candidates = search.check_top_k(top_k), search.check_top_k(candidates, "candidates")
  if candidates < top_k:
    raise ValueError(f"candidates ({candidates}) must be at least top_k ({top_k}): the rescored set holds the "
                     "results")
  return top_k, candidates


def hamming(query_words, corpus_words):
  """int32 [n, M]: differing bits between int64 [n, W] and int64 [M, W] words."""
  distance = np.zeros([len(query_words), len(corpus_words)], np.int32)
  query_words, corpus_words = query_words.view(np.uint64), corpus_words.view(np.uint64)  # signed: |x|'s bits
  for w in range(corpus_words.shape[1]):
    distance += np.bitwise_count(query_words[:, w:w + 1] ^ corpus_words[None, :, w])
  return distance


def nearest(distance, k):
  """int64 [n, min(k, M)]: per row the indices of the k smallest int distances [n, M], nearest first, the lower
  index first on ties (as tf.math.top_k of -distance)."""
  k = min(k, distance.shape[1])
  key = distance.astype(np.int64) * distance.shape[1] + np.arange(distance.shape[1])  # unique per row
  if k < distance.shape[1]:
    key = np.take_along_axis(key, np.argpartition(key, k - 1, axis=1)[:, :k], axis=1)
  return np.sort(key, axis=1)[:, :k] % distance.shape[1]


def search_codes(query_vectors, corpus, top_k=10, candidates=DEFAULT_CANDIDATES, rescore=True):
  """Binary search with int8 rescoring (see the module notes).

  Args:
    query_vectors: float [n, D'] (or [D]), calibrated and truncated as the corpus.
    corpus: corpus_codes.CorpusCodes, finished.
    top_k: int >= 1.
    candidates: int >= top_k, the Hamming-nearest vectors rescored.
    rescore: bool.

  Returns:
    list of n lists of {"corpus_id": int, "score": float}, best first (min(top_k, M) each).
  """
  top_k, candidates = check_search_args(top_k, candidates)
  q = np.atleast_2d(np.asarray(query_vectors, np.float32))
  if q.shape[1] != corpus.dim:
    raise ValueError(f"query vectors of width {q.shape[1]} against a corpus of width {corpus.dim}")
  distance = hamming(corpus_codes.sign_words(q, corpus.centre, corpus.rotation), corpus.words)    # [n, M]
  if not rescore:
    ids = nearest(distance, top_k)
    scores = 1 - 2 * np.take_along_axis(distance, ids, axis=1) / corpus.dim
  else:
    cand = nearest(distance, candidates)                                              # [n, C]
    order, scores = rescore_codes(q, corpus.codes[cand], corpus.ranges, top_k)
    ids = np.take_along_axis(cand, order, axis=1)
  return [[{"corpus_id": int(i), "score": float(s)} for i, s in zip(row_ids, row_scores)]
          for row_ids, row_scores in zip(ids, scores)]


def rescore_codes(q, codes, ranges, top_k):
  """The rescoring pass: float [n, D'] queries and their candidates' int8 codes [n, C, D'] (Hamming-nearest first)
  -> (order int64 [n, k], scores float32 [n, k]): the candidates of the top_k cosines of q and the codes read back
  to their bucket middles, best first (equal scores: the earlier candidate), k = min(top_k, C)."""
  vectors = search.normalize(corpus_codes.dequantize(codes, ranges))                             # [n, C, D']
  cosine = np.einsum("nd,ncd->nc", search.normalize(q), vectors)                   # [n, C]
  order = np.argsort(-cosine, axis=1, kind="stable")[:, :top_k]
  return order, np.take_along_axis(cosine, order, axis=1)
