"""An inverted-file index over a corpus's sign words and int8 codes: coarse lists, the codes stored list by list.

Built from a finished `corpus_codes.CorpusCodes` alone (so a corpus streamed a block at a time builds it without
its fp32 vectors): the int8 codes are read back to their bucket middles (`corpus_codes.dequantize`) and
  centroids  float32 [L, D']  unit length: spherical k-means (cosine assignment, mean then normalise) fitted on a
                              uniform sample of SAMPLE_PER_LIST vectors a list, FIT_ITERATIONS rounds (numpy/BLAS)
  lists                       each corpus vector goes to the centroid of largest cosine
  ids        int32 [M]        the corpus id at each stored position: by list, ascending within a list
  offsets    int64 [L + 1]    list l holds the positions offsets[l] .. offsets[l + 1] - 1
  words, codes                the corpus's sign words (centre and rotation: `corpus_codes`) and int8 codes in that
                              order
A query probes the `nprobe` lists of largest cosine with its float vector (more, in the same order, until they
hold `candidates` vectors), takes the `candidates` Hamming-nearest of their vectors (equal distances: the lower
corpus id first) and rescores them with the int8 codes as `hamming_search.search_codes` does. With
nprobe = L every vector is scanned and the results are the exact scan's.

`search_index` is the numpy search; `quantization.ivf_probe` computes the same in the SavedModel's graph.

Legend: n = queries, M = corpus vectors, D' = width, W = 64-bit words a vector, L = lists, N = probed vectors,
C = candidates.
"""
import dataclasses

import numpy as np

from bert_flow_tf import search
from bert_flow_tf.quantization import corpus_codes
from bert_flow_tf.quantization import hamming_search

MAX_LISTS = 4096
SAMPLE_PER_LIST = 64         # k-means fit sample: 64 vectors a list (65,536 at L = 1,024)
FIT_ITERATIONS = 12
ASSIGN_ROWS = 65536          # vectors assigned to lists at a time: 32 MB of float32 at D' = 128
DEFAULT_NPROBE_FRACTION = 3 / 8  # lists probed by default: 384 of 1,024 (recall@10 >= 0.95 at 1M: docs/quantization.md)


def suggested_num_lists(rows):
  """A starting L for a corpus of `rows` >= 1 vectors: the power of two nearest sqrt(rows), at most MAX_LISTS
  (256 at 100k, 1,024 at a million; docs/quantization.md, choosing L and nprobe)."""
  return int(min(MAX_LISTS, 2 ** round(np.log2(np.sqrt(rows)))))


def default_nprobe(num_lists):
  """Lists a query probes unless told: DEFAULT_NPROBE_FRACTION of L, at least 1."""
  return max(1, int(round(num_lists * DEFAULT_NPROBE_FRACTION)))


def check_num_lists(num_lists, rows):
  """Returns num_lists if it is an int in 0..min(rows, MAX_LISTS), else raises ValueError."""
  top = min(rows, MAX_LISTS)
  if isinstance(num_lists, bool) or not isinstance(num_lists, (int, np.integer)) or not 0 <= num_lists <= top:
    raise ValueError(f"num_lists must be an int in 0..{top} (0: the exact scan; at most the corpus size and "
                     f"{MAX_LISTS}), got {num_lists!r}")
  return int(num_lists)


def check_nprobe(nprobe):
  """nprobe as a Python int if it is an int >= 1, else ValueError (`search.check_top_k`)."""
  return search.check_top_k(nprobe, "nprobe")


def fit_centroids(vectors, num_lists, seed=0, iterations=FIT_ITERATIONS):
  """Spherical k-means. float [n, D'] (n >= num_lists) -> unit float32 [num_lists, D'].

  Starts from num_lists distinct sample vectors; a list left empty restarts at the sample vector farthest (lowest
  cosine) from its own centroid."""
  x = search.normalize(vectors)
  rng = np.random.default_rng(seed)
  centroids = x[rng.choice(len(x), size=num_lists, replace=False)]
  for _ in range(iterations):
    scores = x @ centroids.T                                                        # [n, L]
    lists = np.argmax(scores, axis=1)
    sums = np.zeros_like(centroids)
    np.add.at(sums, lists, x)
    empty = np.flatnonzero(np.bincount(lists, minlength=num_lists) == 0)
    if len(empty):
      sums[empty] = x[np.argsort(scores[np.arange(len(x)), lists])[:len(empty)]]
    centroids = search.normalize(sums)
  return centroids


def assign(vectors, centroids):
  """int32 [n]: the list of largest cosine of each float [n, D'] vector (ties: the lower list)."""
  return np.argmax(np.asarray(vectors, np.float32) @ centroids.T, axis=1).astype(np.int32)


@dataclasses.dataclass
class IvfCodes:
  """A corpus's codes stored list by list (see the module notes)."""
  centroids: np.ndarray   # float32 [L, D'], unit length
  offsets: np.ndarray     # int64 [L + 1]
  ids: np.ndarray         # int32 [M]
  words: np.ndarray       # int64 [M, W]
  codes: np.ndarray       # int8 [M, D']
  ranges: np.ndarray      # float32 [2, D']
  centre: np.ndarray      # float32 [D'], the words' centre (the ranges' middle)
  rotation: np.ndarray    # float32 [D', D'], the sign rotation of the words

  @property
  def num_lists(self):
    return len(self.centroids)

  @property
  def dim(self):
    return self.codes.shape[1]


def build(corpus, num_lists, seed=0):
  """IvfCodes of a finished corpus_codes.CorpusCodes.

  Args:
    corpus: corpus_codes.CorpusCodes, finished (M vectors).
    num_lists: int L in 1..min(M, MAX_LISTS) (`suggested_num_lists(M)` is a start).
    seed: int, the fit sample's and the first centroids' draw.
  """
  rows = corpus.filled
  if check_num_lists(num_lists, rows) < 1:
    raise ValueError("an inverted-file index needs at least one list (num_lists 0 is the exact scan)")
  rng = np.random.default_rng(seed)
  sample = np.sort(rng.choice(rows, size=min(rows, SAMPLE_PER_LIST * num_lists), replace=False))
  centroids = fit_centroids(corpus_codes.dequantize(corpus.codes[sample], corpus.ranges), num_lists, seed)
  lists = np.concatenate([assign(corpus_codes.dequantize(corpus.codes[s:s + ASSIGN_ROWS], corpus.ranges),
                                 centroids) for s in range(0, rows, ASSIGN_ROWS)])
  ids = np.argsort(lists, kind="stable").astype(np.int32)                           # by list, then corpus id
  offsets = np.concatenate([[0], np.cumsum(np.bincount(lists, minlength=num_lists))]).astype(np.int64)
  return IvfCodes(centroids, offsets, ids, corpus.words[ids], corpus.codes[ids], corpus.ranges, corpus.centre,
                  corpus.rotation)


def probed_lists(scores, sizes, nprobe, candidates):
  """The lists a query probes: int [P], by decreasing centroid cosine float [L] (ties: the lower list), the first
  nprobe and then as many as the first `candidates` vectors (of the L's sizes int [L]) need."""
  order = np.argsort(-scores, kind="stable")
  need = int(np.searchsorted(np.cumsum(sizes[order]), min(candidates, int(sizes.sum())))) + 1
  return order[:max(nprobe, need)]


def search_index(query_vectors, index, top_k=10, candidates=hamming_search.DEFAULT_CANDIDATES, nprobe=None,
                 rescore=True):
  """The probed binary search with int8 rescoring (see the module notes).

  Args:
    query_vectors: float [n, D'] (or [D']), calibrated and truncated as the corpus.
    index: IvfCodes.
    top_k, candidates, rescore: as hamming_search.search_codes.
    nprobe: int >= 1, the lists probed; None: `default_nprobe(L)`.

  Returns:
    list of n lists of {"corpus_id": int, "score": float}, best first (min(top_k, M) each).
  """
  top_k, candidates = hamming_search.check_search_args(top_k, candidates)
  nprobe = default_nprobe(index.num_lists) if nprobe is None else check_nprobe(nprobe)
  q = np.atleast_2d(np.asarray(query_vectors, np.float32))
  if q.shape[1] != index.dim:
    raise ValueError(f"query vectors of width {q.shape[1]} against a corpus of width {index.dim}")
  rows, sizes = len(index.ids), np.diff(index.offsets)
  keep = top_k if not rescore else candidates
  query_words = corpus_codes.sign_words(q, index.centre, index.rotation)                         # [n, W]
  scores = search.normalize(q) @ index.centroids.T                                               # [n, L]
  hits = []
  for row_words, row_q, row_scores in zip(query_words, q, scores):
    lists = probed_lists(row_scores, sizes, nprobe, candidates)
    positions = np.concatenate([np.arange(index.offsets[l], index.offsets[l + 1]) for l in lists])   # [N]
    distance = hamming_search.hamming(row_words[None], index.words[positions])[0]                   # [N]
    key = distance.astype(np.int64) * rows + index.ids[positions]                                    # unique
    best = positions[np.argsort(key, kind="stable")[:min(keep, len(positions))]]      # nearest first
    if rescore:
      order, top = hamming_search.rescore_codes(row_q[None], index.codes[best][None], index.ranges, top_k)
      best, row_scores = best[order[0]], top[0]
    else:                                     # key order is distance order: the sorted distances are best's
      row_scores = 1 - 2 * np.sort(distance)[:len(best)] / index.dim
    hits.append([{"corpus_id": int(index.ids[p]), "score": float(s)} for p, s in zip(best, row_scores)])
  return hits
