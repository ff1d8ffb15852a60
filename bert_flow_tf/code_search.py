"""semantic_search over vectors at a precision: exact fp32 (`search`), or binary codes with int8 rescoring
(`quantized_search`: the exact scan below `ivf_index.MIN_ROWS_FOR_LISTS` vectors, the inverted-file index above),
as the binary search SavedModel searches the same corpus.

Legend: n = queries, M = corpus vectors, D' = width.
"""
import numpy as np

from bert_flow_tf import ivf_index
from bert_flow_tf import quantized_search
from bert_flow_tf import search
from bert_flow_tf import sentence_codes
from bert_flow_tf.calibration import int8_ranges


def semantic_search(query_vectors, corpus_vectors, top_k=10, precision="float32", rescore=True,
                    candidates=None, ranges=None, nprobe=None):
  """`search.semantic_search` (precision "float32") or the binary search over the corpus's codes ("binary").

  Args:
    query_vectors: float [n, D'] or [D'].
    corpus_vectors: float [M, D'].
    top_k, rescore, candidates: see `quantized_search.search_codes` (candidates: `quantized_search.candidates_for`).
    precision: str, one of quantized_search.SEARCH_PRECISIONS.
    ranges: float [2, D'], the int8 ranges of the rescoring (a calibration's `int8_ranges`); None: fitted on the
      corpus vectors (`int8_ranges.fit_ranges`).
    nprobe: int >= 1, the lists probed when the corpus has an inverted-file index (`ivf_index.default_num_lists`
      of M lists: none below ivf_index.MIN_ROWS_FOR_LISTS vectors; built on each call, 1.2 s at 100k vectors);
      None: `ivf_index.default_nprobe`.

  Returns:
    list of n lists of {"corpus_id": int, "score": float}, best first.
  """
  quantized_search.check_search_precision(precision)
  if precision == "float32":
    return search.semantic_search(query_vectors, corpus_vectors, top_k)
  corpus_vectors = np.asarray(corpus_vectors, np.float32)
  if ranges is None:
    ranges = int8_ranges.fit_ranges(corpus_vectors)
  candidates = quantized_search.candidates_for(top_k, candidates)
  codes = quantized_search.CorpusCodes.of(corpus_vectors, ranges)
  num_lists = ivf_index.default_num_lists(len(corpus_vectors))
  if not num_lists:
    return quantized_search.search_codes(query_vectors, codes, top_k, candidates, rescore)
  return ivf_index.search_index(query_vectors, ivf_index.build(codes, num_lists), top_k, candidates, nprobe,
                                rescore)


def encoder_search(encoder, queries, corpus, top_k, precision, rescore, candidates, nprobe=None):
  """`semantic_search` for a SentenceEncoder: queries and corpus (str, list of str or vectors) as its `vectors_of`
  gives them for cosine (calibrated, cut to its truncate_dim), the int8 ranges its calibration saved, cut alike."""
  return semantic_search(encoder.vectors_of(queries, True), encoder.vectors_of(corpus, True), top_k, precision,
                         rescore, candidates,
                         sentence_codes.kept_ranges(encoder.int8_ranges, encoder.truncation_order, encoder.truncate_dim),
                         nprobe)
