"""Scores of embedding spaces on evaluation pairs, as run_flow's experiments report them (experiment.py).

A space is the raw vectors ("none") or one calibration of them (calibration.calibrator: FlowCalibration,
BaselineCalibration), applied in float64. Each pair's similarity is the cosine of its two vectors (search.cosine).

  evaluate_dataset   every space on one dataset: its Score rows, its isotropy and (for the analysis) its vectors
  score_space        one space on one dataset: Spearman x 100 (one set, or STS12-16's all/mean/wmean) or AUC x 100
  table6             similarity vs word edit distance on STS-B dev, per space (the paper's Table 6)

Legend: N = pairs, D = the embedding width.
"""
import dataclasses

import numpy as np

from bert_flow_tf import search
from bert_flow_tf.evaluation import isotropy as isotropy_lib
from bert_flow_tf.evaluation import lexical
from bert_flow_tf.evaluation import metrics
from bert_flow_tf.evaluation import sts
from bert_flow_tf.reporting import scores as scores_lib


@dataclasses.dataclass
class DatasetScores:
  """Every space of one dataset, evaluated.

  Attributes:
    scores: list of reporting.scores.Score: the raw vectors first, then each calibration in the order given.
    isotropy: dict space name -> evaluation.isotropy.isotropy dict of the space's 2N vectors.
    sentences: list of 2N str (each subset's a sentences, then its b sentences), or None unless kept.
    vectors: dict space name -> float32 [2N, D] in the order of `sentences`; empty unless kept.
  """
  scores: list
  isotropy: dict
  sentences: object = None
  vectors: dict = dataclasses.field(default_factory=dict)


def _calibrated(raw, calibration):
  return [(calibration.transform(a, np.float64), calibration.transform(b, np.float64)) for a, b in raw]


def score_space(dataset, metric, subsets, vectors, method, fit_on):
  """Scores of one space on one dataset.

  Args:
    dataset: str, a reporting.scores.Score dataset; metric: "spearman" or "auc".
    subsets: list of data.PairSet, the dataset's evaluation sets (their labels are the gold scores).
    vectors: list of (a [N, D], b [N, D]) per subset.
    method, fit_on: the space (reporting.scores.Score's).

  Returns:
    list of Score: one AUC over all subsets, one Spearman for a single subset, else Spearman "all", "mean",
    "wmean" (evaluation.sts).
  """
  sims = [search.cosine(a, b) for a, b in vectors]
  if metric == "auc":
    gold = np.concatenate([s.labels for s in subsets])
    return [scores_lib.Score(dataset, method, fit_on, "auc", None, metrics.auc_x100(np.concatenate(sims), gold))]
  if len(subsets) == 1:
    return [scores_lib.Score(dataset, method, fit_on, "spearman", None,
                             metrics.spearman_x100(sims[0], subsets[0].labels))]
  aggregated = sts.sts_scores(subsets, sims)
  return [scores_lib.Score(dataset, method, fit_on, "spearman", agg, aggregated[agg])
          for agg in ("all", "mean", "wmean")]


def evaluate_dataset(dataset, metric, subsets, raw, calibrations, keep_vectors=False):
  """The raw vectors of `subsets` and each calibration of them, scored.

  Args:
    dataset, metric, subsets: as score_space.
    raw: list of (a [N, D], b [N, D]) per subset, the uncalibrated vectors.
    calibrations: list of (method, fit_on, calibration) (calibration.calibrator's, `transform` applied in float64).
    keep_vectors: bool, also return the sentences and every space's vectors (the analysis' input).

  Returns:
    DatasetScores.
  """
  out = DatasetScores([], {})
  if keep_vectors:
    out.sentences = [t for s in subsets for t in (*s.sentences_a, *s.sentences_b)]
  spaces = [(scores_lib.UNCALIBRATED, None, raw)] + [
      (method, fit_on, _calibrated(raw, calibration)) for method, fit_on, calibration in calibrations]
  for method, fit_on, vectors in spaces:
    out.scores += score_space(dataset, metric, subsets, vectors, method, fit_on)
    both = np.concatenate([np.concatenate([a, b]) for a, b in vectors])  # [2N, D]
    name = scores_lib.space_name(method, fit_on)
    out.isotropy[name] = isotropy_lib.isotropy(both)
    if keep_vectors:
      out.vectors[name] = both.astype(np.float32)
  return out


def table6(pairs, a, b, calibrations):
  """Table 6 on `pairs` (STS-B dev): each similarity and its Spearman x 100 with the word edit distance.

  Args:
    pairs: data.PairSet; a, b: [N, D] its raw vectors.
    calibrations: list of (method, fit_on, calibration), as evaluate_dataset.

  Returns:
    (similarities: dict name -> [N] ("gold", "none", then each space), rhos: dict name -> Spearman x 100).
  """
  sims = {"gold": pairs.labels, scores_lib.UNCALIBRATED: search.cosine(a, b)}
  for method, fit_on, calibration in calibrations:
    ((ca, cb),) = _calibrated([(a, b)], calibration)
    sims[scores_lib.space_name(method, fit_on)] = search.cosine(ca, cb)
  return sims, {name: lexical.lexical_correlation(pairs, s) for name, s in sims.items()}
