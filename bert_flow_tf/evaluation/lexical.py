"""Similarity vs word edit distance: the paper's lexical analysis (Sec. 4.4, Table 6, Figure 2).

Legend: N = sentence pairs.
"""
import numpy as np

from bert_flow_tf.evaluation import metrics


def edit_distance(a, b):
  """Word-level Levenshtein distance between two sentences (insert, delete, substitute cost 1).

  The paper (Sec. 4.4, Table 6, Fig. 2) does not say the unit; its example ("I like this restaurant" vs
  "I dislike this restaurant" differ by one word) and its "edit distance <= 4" bucket point to words. Tokens
  are the lower-cased sentence split on whitespace.
  """
  x, y = a.lower().split(), b.lower().split()
  previous = list(range(len(y) + 1))
  for i, word in enumerate(x, start=1):
    current = [i]
    for j, other in enumerate(y, start=1):
      current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (word != other)))
    previous = current
  return previous[-1]


def lexical_correlation(pairs, similarities):
  """Spearman x 100 between a similarity and the word edit distance of each pair (the paper's Table 6).

  Args:
    pairs: a PairSet, or a sequence of (sentence_a, sentence_b) tuples, N pairs.
    similarities: array [N] (cosine similarities, or the gold scores for the "gold" row).

  Returns:
    float; negative when similar-looking pairs get higher similarity (paper, STS-B dev: gold -24.61,
    BERT -50.49, flow -28.01).
  """
  if hasattr(pairs, "sentences_a"):
    pairs = list(zip(pairs.sentences_a, pairs.sentences_b))
  distances = np.array([edit_distance(a, b) for a, b in pairs], np.float64)
  return metrics.spearman_x100(similarities, distances)
