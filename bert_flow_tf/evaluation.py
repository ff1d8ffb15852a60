"""Evaluation: cosine similarity, rank correlations and AUC (x100), STS aggregation, isotropy diagnostics,
the lexical (edit-distance) analysis of the paper's Table 6, and the results.json / markdown writers.

All scores returned by `*_x100` functions and stored in `Result.value` are multiplied by 100, as the paper
reports them (Spearman rho x 100, AUC x 100).
"""
import collections.abc
import dataclasses
import json
import re

import numpy as np
import scipy.stats

from bert_flow_tf.data import tasks
from bert_flow_tf.utils import io_utils

METRICS = ("spearman", "auc")
AGGREGATIONS = (None, "all", "mean", "wmean")
FIT_ON = ("target", "nli")  # where a calibration is fitted: the task's own sentences or NLI sentences
_METHOD = re.compile(r"^(none|flow|whitening|sn|whitening-\d+|natsv-\d+|sn\+natsv-\d+)$")
_METHOD_FORMS = '"none", "flow", "whitening", "whitening-K", "sn", "natsv-K", "sn+natsv-K"'


def cosine(a, b, eps=1e-12):
  """Row-wise cosine similarity, computed in float64.

  Args:
    a, b: arrays [N, D].
    eps: float, lower bound on each norm, so an all-zero row gives 0 instead of NaN.

  Returns:
    float64 array [N].
  """
  a = np.asarray(a, np.float64)
  b = np.asarray(b, np.float64)
  if a.shape != b.shape or a.ndim != 2:
    raise ValueError(f"cosine needs two [N, D] arrays of the same shape, got {a.shape} and {b.shape}")
  norms = np.maximum(np.linalg.norm(a, axis=1), eps) * np.maximum(np.linalg.norm(b, axis=1), eps)
  return np.einsum("nd,nd->n", a, b) / norms


def _check_pair(pred, gold):
  pred = np.asarray(pred, np.float64)
  gold = np.asarray(gold, np.float64)
  if pred.shape != gold.shape or pred.ndim != 1 or pred.size < 2:
    raise ValueError(f"need two 1-D arrays of the same length >= 2, got {pred.shape} and {gold.shape}")
  return pred, gold


def spearman_x100(pred, gold):
  """Spearman rank correlation x 100 (ties get average ranks, as scipy.stats.spearmanr)."""
  pred, gold = _check_pair(pred, gold)
  return float(scipy.stats.spearmanr(pred, gold)[0] * 100.)


def pearson_x100(pred, gold):
  """Pearson correlation x 100."""
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
    per_subset.append(spearman_x100(p, s.labels))
    sizes.append(len(s))
  all_pred = np.concatenate([np.asarray(p, np.float64) for p in predictions])
  all_gold = np.concatenate([s.labels for s in subsets])
  return {"all": spearman_x100(all_pred, all_gold), "mean": float(np.mean(per_subset)),
          "wmean": float(np.average(per_subset, weights=sizes))}


def random_pair_cosines(emb, rng_seed=0, num_pairs=10000):
  """Cosines between `num_pairs` random pairs of distinct rows (i != j; pairs drawn with replacement).

  Args:
    emb: array [N >= 2, D].
    rng_seed: int.
    num_pairs: int.

  Returns:
    float64 array [num_pairs].
  """
  x = np.asarray(emb, np.float64)
  if x.ndim != 2 or x.shape[0] < 2:
    raise ValueError(f"need [N >= 2, D] vectors, got shape {x.shape}")
  n = x.shape[0]
  rng = np.random.default_rng(rng_seed)
  i = rng.integers(0, n, num_pairs)
  j = (i + rng.integers(1, n, num_pairs)) % n  # j != i
  return cosine(x[i], x[j])


def isotropy(emb, rng_seed=0, num_pairs=10000):
  """A few numbers describing how anisotropic a set of sentence vectors is.

  Args:
    emb: array [N, D] of sentence vectors (N >= 2).
    rng_seed: int, seed of the random pair sample.
    num_pairs: int, how many random pairs (i != j) to average the cosine over.

  Returns:
    dict of floats:
      "mean_cosine": mean cosine between random pairs of distinct vectors (about 0 when isotropic; BERT
        embeddings are far above 0, the "narrow cone").
      "mean_norm_ratio": |mean vector| / mean |vector|, the share of the common direction (0 = centered).
      "top1_variance", "top10_variance": share of the total variance in the top 1 / top 10 principal
        directions (1/D and 10/D when isotropic).
      "condition_number": largest / smallest covariance eigenvalue (smallest floored at 1e-12 of the
        largest, so rank-deficient or constant-dimension data give 1e12, not inf).
  """
  x = np.asarray(emb, np.float64)
  mean = x.mean(axis=0)
  cosines = random_pair_cosines(x, rng_seed, num_pairs)
  eig = np.clip(np.linalg.eigvalsh(np.cov(x, rowvar=False).reshape(x.shape[1], x.shape[1]))[::-1], 0., None)
  total = eig.sum()
  return {
      "mean_cosine": float(cosines.mean()),
      "mean_norm_ratio": float(np.linalg.norm(mean) / np.linalg.norm(x, axis=1).mean()),
      "top1_variance": float(eig[:1].sum() / total),
      "top10_variance": float(eig[:10].sum() / total),
      "condition_number": float(eig[0] / max(eig[-1], 1e-12 * eig[0])),
  }


# Mean random-pair cosine below which a space counts as already close to isotropic. A heuristic from two runs here
# (README, Results): MiniLM `last-avg` (0.022) lost STS-B points to every target calibration, `emb-avg` (0.375)
# gained 15.
NEAR_ISOTROPIC_COSINE = 0.1


def describe_isotropy(emb, what, max_rows=50000):
  """`isotropy` of a set of vectors (a seeded sample of at most `max_rows`) and a one-line report of it, with a
  caution when the space is already close to isotropic (mean random-pair cosine below NEAR_ISOTROPIC_COSINE).

  Args:
    emb: array [N, D] (N >= 2).
    what: str, what the vectors are (e.g. "the custom fit sentences").
    max_rows: int, the sample size for large N (the covariance is D x D; the cosine uses 10,000 pairs anyway).

  Returns:
    (iso: dict from `isotropy`, line: str, near_isotropic: bool).
  """
  emb = np.asarray(emb)
  if len(emb) > max_rows:
    emb = emb[np.random.default_rng(0).choice(len(emb), max_rows, replace=False)]
  iso = isotropy(emb)
  line = (f"isotropy of {what} ({len(emb)} vectors): mean cosine of random pairs {iso['mean_cosine']:.3f} "
          f"(0 = isotropic), top principal direction {iso['top1_variance']:.1%} of the variance")
  near = iso["mean_cosine"] < NEAR_ISOTROPIC_COSINE
  if near:
    line += (f"; below {NEAR_ISOTROPIC_COSINE}, the space is already close to isotropic, and a flow or whitening "
             "may lower similarity quality: check on scored pairs (run_flow.py --eval_file)")
  return iso, line, near


def calibration_warnings(results):
  """One line per calibrated score below the uncalibrated ("none") score of the same dataset and aggregation.

  Args:
    results: list of Result.

  Returns:
    list of str, e.g. "custom: flow (target) 80.96 < none 82.03 (spearman): this calibration lowers the score".
  """
  none = {(r.dataset, r.aggregation): r.value for r in results if r.method == "none"}
  lines = []
  for r in results:
    base = none.get((r.dataset, r.aggregation))
    if r.method != "none" and base is not None and r.value < base:
      where = r.dataset if r.aggregation is None else f"{r.dataset} {r.aggregation}"
      lines.append(f"{where}: {method_label(r.method, r.fit_on)} {r.value:.2f} < none {base:.2f} ({r.metric}): "
                   "this calibration lowers the score; the uncalibrated vectors do better here")
  return lines


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
  return spearman_x100(similarities, distances)


@dataclasses.dataclass(frozen=True)
class Result:
  """One number of a results table.

  Attributes:
    dataset: one of bert_flow_tf.data.RESULT_DATASETS (a benchmark, or "custom": the user's --eval_file).
    method: "none", "flow", "whitening", "whitening-K", "sn", "natsv-K" or "sn+natsv-K".
    fit_on: "target", "nli", or None (no calibration fitted, method "none").
    metric: "spearman" (STS, SICK-R) or "auc" (QNLI).
    aggregation: "all", "mean", "wmean" over STS12-16 subsets, or None for single-set datasets.
    value: float, the score x 100.
  """
  dataset: str
  method: str
  fit_on: object
  metric: str
  aggregation: object
  value: float

  def __post_init__(self):
    checks = (("dataset", self.dataset in tasks.RESULT_DATASETS, tasks.RESULT_DATASETS),
              ("fit_on", self.fit_on is None or self.fit_on in FIT_ON, (None,) + FIT_ON),
              ("metric", self.metric in METRICS, METRICS),
              ("aggregation", self.aggregation in AGGREGATIONS, AGGREGATIONS),
              ("method", isinstance(self.method, str) and _METHOD.match(self.method), _METHOD_FORMS))
    for field, ok, allowed in checks:
      if not ok:
        raise ValueError(f"Result.{field}={getattr(self, field)!r}; allowed: {allowed}")


def write_results_json(path, model, sentence_embedding_type, results):
  """Writes {"model", "sentence_embedding_type", "results": [Result fields...]} to `path` atomically."""
  payload = {"model": model, "sentence_embedding_type": sentence_embedding_type,
             "results": [dataclasses.asdict(r) for r in results]}
  io_utils.write_text(path, json.dumps(payload, indent=2) + "\n")


def method_label(method, fit_on):
  """A table row's name: "none", "flow (target)", "whitening (target)", ..."""
  return method if fit_on is None else f"{method} ({fit_on})"


def markdown_table(header, rows):
  """One markdown table (no trailing newline) from a header and rows, each a list of cell strings."""
  lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
  lines += ["| " + " | ".join(r) + " |" for r in rows]
  return "\n".join(lines)


def results_markdown(results):
  """Paper-style markdown tables of `results` (values x 100, 2 decimals).

  The first table has one row per (method, fit_on), in order of first appearance, and one column per
  dataset present (in bert_flow_tf.data.RESULT_DATASETS order): STS12-16 show the "all" aggregation, the others their
  single value (aggregation None or "all"). A second table, when any exist, gives STS12-16 "mean" / "wmean".
  Missing cells are "-".
  """
  rows = list(dict.fromkeys((r.method, r.fit_on) for r in results))
  main = {(r.method, r.fit_on, r.dataset): r.value for r in results if r.aggregation in (None, "all")}
  datasets = [d for d in tasks.RESULT_DATASETS
              if any(r.dataset == d and r.aggregation in (None, "all") for r in results)]
  cell = lambda v: "-" if v is None else f"{v:.2f}"
  out = [markdown_table(["method"] + datasets,
                        [[method_label(m, f)] + [cell(main.get((m, f, d))) for d in datasets] for m, f in rows])]
  agg = {(r.method, r.fit_on, r.dataset, r.aggregation): r.value for r in results
         if r.aggregation in ("mean", "wmean")}
  columns = [(d, a) for d in tasks.DATASETS for a in ("mean", "wmean")
             if any(k[2] == d and k[3] == a for k in agg)]
  if columns:
    out.append(markdown_table(["method"] + [f"{d} {a}" for d, a in columns],
                              [[method_label(m, f)] + [cell(agg.get((m, f, d, a))) for d, a in columns]
                               for m, f in rows]))
  return "\n\n".join(out) + "\n"
