"""Spearman x 100 over the subsets of one STS dataset (STS12-16 have several), aggregated three ways."""
import collections.abc

import numpy as np

from bert_flow_tf.evaluation import metrics


def sts_scores(subsets, predictions):
  """Spearman x 100 over the subsets of one STS dataset, aggregated three ways.

  Args:
    subsets: sequence of PairSet (float gold labels), e.g. the five subsets of STS12.
    predictions: the predicted similarities, [N_i] per subset: a sequence in the order of `subsets`, or a
      mapping from subset name to array.

  Returns:
    dict with "all" (Spearman of all subsets concatenated, as the paper reports STS12-16), "mean" (plain
    mean of the per-subset Spearmans, SentEval's "all" mean) and "wmean" (mean weighted by subset size).
    For a single subset the three are equal.
  """
  if isinstance(predictions, collections.abc.Mapping):
    predictions = [predictions[s.name] for s in subsets]
  if len(predictions) != len(subsets) or not subsets:
    raise ValueError(f"{len(predictions)} prediction arrays for {len(subsets)} subsets")
  per_subset, sizes = [], []
  for s, p in zip(subsets, predictions):
    if len(p) != len(s):
      raise ValueError(f"{s.name}: {len(p)} predictions for {len(s)} pairs")
    per_subset.append(metrics.spearman_x100(p, s.labels))
    sizes.append(len(s))
  all_pred = np.concatenate([np.asarray(p, np.float64) for p in predictions])
  all_gold = np.concatenate([s.labels for s in subsets])
  return {"all": metrics.spearman_x100(all_pred, all_gold), "mean": float(np.mean(per_subset)),
          "wmean": float(np.average(per_subset, weights=sizes))}
