"""semantic_search over vectors at a precision: exact fp32 (`search`), or binary codes with int8 rescoring
(`hamming_search`'s exact scan; `ivf_index`, the inverted-file index, when num_lists >= 1 is asked), as the binary
search SavedModel searches the same corpus.

Legend: n = queries, M = corpus vectors, D' = width.
"""
import numpy as np

from bert_flow_tf import search
from bert_flow_tf.quantization import corpus_codes
from bert_flow_tf.quantization import hamming_search
from bert_flow_tf.quantization import int8_ranges
from bert_flow_tf.quantization import ivf_index


def semantic_search(query_vectors, corpus_vectors, top_k=10, precision="float32", rescore=True,
                    candidates=None, ranges=None, num_lists=0, nprobe=None):
  """`search.semantic_search` (precision "float32") or the binary search over the corpus's codes ("binary").

  Args:
    query_vectors: float [n, D'] or [D'].
    corpus_vectors: float [M, D'].
    top_k, rescore, candidates: see `hamming_search.search_codes` (candidates: `hamming_search.candidates_for`).
    precision: str, one of hamming_search.SEARCH_PRECISIONS.
    ranges: float [2, D'], the int8 ranges of the rescoring (a calibration's `int8_ranges`); None: fitted on the
      corpus vectors (`int8_ranges.fit_ranges`).
    num_lists: int L, 0 for the exact scan of every code (the default: the index is not yet faster at the same
      recall, docs/quantization.md); L >= 1: an inverted-file index of L lists (`ivf_index.build`, on each call:
      1.2 s at 100k vectors) searched instead.
    nprobe: int >= 1, the lists the index probes (num_lists >= 1 only); None: `ivf_index.default_nprobe(L)`.

  Returns:
    list of n lists of {"corpus_id": int, "score": float}, best first.
  """
  top_k = search.check_top_k(top_k)
  hamming_search.check_search_precision(precision)
  if precision == "float32":
    return search.semantic_search(query_vectors, corpus_vectors, top_k=top_k)
  corpus_vectors = np.asarray(corpus_vectors, np.float32)
  candidates = hamming_search.candidates_for(top_k, candidates)
  if not len(corpus_vectors):
    return search.semantic_search(query_vectors, corpus_vectors, top_k=top_k)  # no vectors: an empty list per query
  if ranges is None:
    ranges = int8_ranges.fit_ranges(corpus_vectors)
  codes = corpus_codes.CorpusCodes.of(corpus_vectors, ranges)
  if not ivf_index.check_num_lists(num_lists, len(corpus_vectors)):
    if nprobe is not None:
      raise ValueError("nprobe needs an inverted-file index (num_lists >= 1); num_lists 0 scans every vector")
    return hamming_search.search_codes(query_vectors, codes, top_k, candidates, rescore)
  return ivf_index.search_index(query_vectors, ivf_index.build(codes, num_lists), top_k, candidates, nprobe,
                                rescore)
