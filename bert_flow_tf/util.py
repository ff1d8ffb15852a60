"""sentence-transformers' `util` helpers that users reach for, on numpy vectors (`from bert_flow_tf import util`).

  cos_sim (pytorch_cos_sim), semantic_search (information_retrieval)   search.py's (the one cosine and top-k)
  dot_score, euclidean_sim, manhattan_sim                               similarity.py's: every a with every b
  pairwise_cos_sim, pairwise_dot_score, pairwise_euclidean_sim,         similarity.py's: a[i] with b[i]
    pairwise_manhattan_sim, pairwise_angle_sim
  normalize_embeddings         rows scaled to unit length (search.normalize)
  truncate_embeddings          the first truncate_dim dimensions
  quantize_embeddings          quantization/st_layouts.py's
  paraphrase_mining            the most similar pairs among a model's sentences (its `encode`), best first
  paraphrase_mining_embeddings the same on vectors
  community_detection          groups of vectors whose cosine to a central one is at least a threshold

Each takes sentence-transformers' arguments in its order and returns what sentence-transformers' function of that
name returns on the same vectors (tests/util_test.py, against a fixture sentence-transformers wrote:
scripts/make_util_fixture.py), as numpy where it returns torch tensors: the scores and normalized vectors are
np.float32 arrays; equal scores keep the lower index first. Not here: the multi-vector MaxSim family, and the
helpers of torch, training and the Hub.

Legend: N = sentences (vectors), D = width.
"""
import heapq

import numpy as np

from bert_flow_tf.quantization import quantize_embeddings  # pylint: disable=unused-import
from bert_flow_tf.quantization import truncation
from bert_flow_tf.search import check_top_k
from bert_flow_tf.search import cos_sim
from bert_flow_tf.search import normalize
from bert_flow_tf.search import semantic_search
# pylint: disable=unused-import
from bert_flow_tf.similarity import dot_score
from bert_flow_tf.similarity import euclidean_sim
from bert_flow_tf.similarity import manhattan_sim
from bert_flow_tf.similarity import pairwise_angle_sim
from bert_flow_tf.similarity import pairwise_cos_sim
from bert_flow_tf.similarity import pairwise_dot_score
from bert_flow_tf.similarity import pairwise_euclidean_sim
from bert_flow_tf.similarity import pairwise_manhattan_sim
# pylint: enable=unused-import

# sentence-transformers' other names of the same functions.
pytorch_cos_sim = cos_sim
information_retrieval = semantic_search
normalize_embeddings = normalize


def truncate_embeddings(embeddings, truncate_dim):
  """The first truncate_dim dimensions of embeddings [..., D] (None: all), in their dtype.

  Raises:
    ValueError: truncate_dim neither None nor an int in 1..D (sentence-transformers slices whatever it is given).
  """
  embeddings = np.asarray(embeddings)
  return embeddings[..., truncation.kept(None, truncate_dim, embeddings.shape[-1])]


def paraphrase_mining(model, sentences, show_progress_bar=False, batch_size=32, query_chunk_size=5000,
                      corpus_chunk_size=100000, max_pairs=500000, top_k=100, score_function=cos_sim,
                      truncate_dim=None, prompt_name=None, prompt=None):
  """`paraphrase_mining_embeddings` of `model.encode(sentences, ...)` (a SentenceEncoder or ExportedEncoder).

  Returns:
    list of [score float, i int, j int] with i < j, highest score first.
  """
  encode_kwargs = {"truncate_dim": truncate_dim, "prompt_name": prompt_name, "prompt": prompt}
  embeddings = model.encode(list(sentences), batch_size=batch_size, show_progress_bar=show_progress_bar,
                            **{k: v for k, v in encode_kwargs.items() if v is not None})
  return paraphrase_mining_embeddings(embeddings, query_chunk_size, corpus_chunk_size, max_pairs, top_k,
                                      score_function)


def paraphrase_mining_embeddings(embeddings, query_chunk_size=5000, corpus_chunk_size=100000, max_pairs=500000,
                                 top_k=100, score_function=cos_sim):
  """The most similar pairs of distinct rows of `embeddings` (float [N, D]), as sentence-transformers 6 mines them.

  Each row keeps its top_k best other rows over the whole corpus (chunked, so the result does not depend on the
  chunk sizes); each pair (i < j) is offered once to a min-heap of at most max_pairs pairs, which evicts its lowest
  when full and from then on takes only scores above the last one evicted.

  Returns:
    list of [score float, i int, j int] with i < j, highest score first (at most max_pairs pairs).
  """
  query_chunk_size, corpus_chunk_size, max_pairs, top_k = (
      check_top_k(value, name) for value, name in ((query_chunk_size, "query_chunk_size"),
                                                   (corpus_chunk_size, "corpus_chunk_size"),
                                                   (max_pairs, "max_pairs"), (top_k, "top_k")))
  embeddings = np.atleast_2d(embeddings)
  n = len(embeddings)
  heap, queued, min_score = [], set(), -np.inf
  for q in range(0, n, query_chunk_size):
    scores = np.concatenate([np.asarray(score_function(embeddings[q:q + query_chunk_size],
                                                       embeddings[c:c + corpus_chunk_size]))
                             for c in range(0, n, corpus_chunk_size)], axis=1)           # [chunk, N]
    best = np.argsort(-scores, axis=1, kind="stable")[:, :top_k + 1]
    for row, columns in enumerate(best):
      i = q + row
      for j in [int(column) for column in columns if column != i][:top_k]:
        score = float(scores[row, j])
        pair = (min(i, j), max(i, j))
        if score <= min_score or pair in queued:
          continue
        queued.add(pair)
        if len(heap) < max_pairs:
          heapq.heappush(heap, (score, *pair))
        else:
          evicted = heapq.heappushpop(heap, (score, *pair))
          queued.discard(evicted[1:])
          min_score = evicted[0]
  return sorted(([score, i, j] for score, i, j in heap), key=lambda pair: pair[0], reverse=True)


def community_detection(embeddings, threshold=0.75, min_community_size=10, batch_size=1024,
                        show_progress_bar=False):
  """Communities: for each row whose min_community_size-th best cosine (itself included) is >= threshold, every
  row at cosine >= threshold, best first; then, largest first, each keeps the rows no larger community took, and
  stays if it still has min_community_size.

  Args:
    embeddings: float [N, D].
    threshold: float, the least cosine to the community's first row.
    min_community_size: int >= 1 (at most N).
    batch_size: int >= 1, rows scored at a time.
    show_progress_bar: accepted for sentence-transformers' signature; nothing is shown.

  Returns:
    list of communities (lists of int, the central row first), largest first.
  """
  del show_progress_bar
  min_community_size = check_top_k(min_community_size, "min_community_size")
  batch_size = check_top_k(batch_size, "batch_size")
  embeddings = normalize(np.atleast_2d(np.asarray(embeddings, np.float32)))
  size = min(min_community_size, len(embeddings))
  found = []
  for start in range(0, len(embeddings), batch_size):
    scores = embeddings[start:start + batch_size] @ embeddings.T                 # [batch, N]
    order = np.argsort(-scores, axis=1, kind="stable")
    for row, ranked in zip(scores, order):
      if row[ranked[size - 1]] >= threshold:
        found.append(ranked[row[ranked] >= threshold])
  found.sort(key=len, reverse=True)
  used, communities = np.zeros(len(embeddings), bool), []
  for community in found:
    community = community[~used[community]]
    if len(community) >= size:
      communities.append(community)
      used[community] = True
  return [community.tolist() for community in sorted(communities, key=len, reverse=True)]
