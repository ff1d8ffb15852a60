"""Rank correlations and ROC-AUC, x 100 as the paper reports them (Spearman rho x 100, AUC x 100).

Legend: N = scored pairs.
"""
import numpy as np
import scipy.stats


def _check_pair(pred, gold):
  pred = np.asarray(pred, np.float64)
  gold = np.asarray(gold, np.float64)
  if pred.shape != gold.shape or pred.ndim != 1 or pred.size < 2:
    raise ValueError(f"need two 1-D arrays of the same length >= 2, got {pred.shape} and {gold.shape}")
  return pred, gold


def spearman_x100(pred, gold):
  """Spearman rank correlation x 100 of two arrays [N] (ties get average ranks, as scipy.stats.spearmanr)."""
  pred, gold = _check_pair(pred, gold)
  return float(scipy.stats.spearmanr(pred, gold)[0] * 100.)


def pearson_x100(pred, gold):
  """Pearson correlation x 100 of two arrays [N]."""
  pred, gold = _check_pair(pred, gold)
  return float(scipy.stats.pearsonr(pred, gold)[0] * 100.)


def auc_x100(scores, labels):
  """ROC-AUC x 100 by the rank (Mann-Whitney) formula; tied scores count one half.

  AUC = (sum of the average ranks of the positives - P (P + 1) / 2) / (P * Q), with P positives and Q
  negatives: the probability that a random positive outscores a random negative.

  Args:
    scores: array [N], higher = more likely positive (e.g. cosine of question and sentence).
    labels: array [N] of 0/1 (QNLI: entailment 1).
  """
  scores = np.asarray(scores, np.float64)
  labels = np.asarray(labels)
  if scores.shape != labels.shape or scores.ndim != 1:
    raise ValueError(f"scores {scores.shape} and labels {labels.shape} must be 1-D of the same length")
  if not np.isin(labels, (0, 1)).all():
    raise ValueError(f"labels must be 0 or 1, got values {np.unique(labels)[:10]}")
  positive = labels == 1
  n_pos, n_neg = int(positive.sum()), int((~positive).sum())
  if n_pos == 0 or n_neg == 0:
    raise ValueError(f"AUC needs both classes, got {n_pos} positives and {n_neg} negatives")
  ranks = scipy.stats.rankdata(scores)
  return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2.) / (n_pos * n_neg) * 100.)
