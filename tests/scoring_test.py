"""scoring.py: each space's Score rows against scipy and brute force on the same cosines, the isotropy and kept
vectors per space, and Table 6's similarities; the calibration is a per-dimension scale that reorders cosines."""
import numpy as np
import pytest
import scipy.stats

from bert_flow_tf import scoring
from bert_flow_tf.data import PairSet
from tests.analysis.references import word_levenshtein

WEIGHTS = np.geomspace(0.1, 10.0, 8)


class _Scale:
  """A calibration (calibrator's interface): x -> x * WEIGHTS."""

  def transform(self, x, dtype=np.float32):
    return (np.asarray(x, np.float64) * WEIGHTS).astype(dtype)


def _cos(x, y):
  return np.sum(x * y, 1) / np.linalg.norm(x, axis=1) / np.linalg.norm(y, axis=1)


def _subset(name, n, rng, labels):
  words = ["a", "man", "dog", "runs", "the"]
  sentence = lambda: " ".join(rng.choice(words, size=rng.integers(1, 6)))
  return PairSet(name, tuple(sentence() for _ in range(n)), tuple(sentence() for _ in range(n)), labels)


def test_one_set_scores_isotropy_and_vectors_per_space():
  rng = np.random.default_rng(0)
  a, b = rng.normal(size=(30, 8)), rng.normal(size=(30, 8))
  subset = _subset("STS-B/test", 30, rng, rng.uniform(0, 5, 30))
  out = scoring.evaluate_dataset("STS-B", "spearman", [subset], [(a, b)], [("whitening", "target", _Scale())],
                                 keep_vectors=True)
  assert [(s.method, s.fit_on, s.aggregation) for s in out.scores] == [("none", None, None),
                                                                      ("whitening", "target", None)]
  assert out.scores[0].value == pytest.approx(100 * scipy.stats.spearmanr(_cos(a, b), subset.labels)[0])
  assert out.scores[1].value == pytest.approx(
      100 * scipy.stats.spearmanr(_cos(a * WEIGHTS, b * WEIGHTS), subset.labels)[0])
  assert out.scores[0].value != pytest.approx(out.scores[1].value)
  assert list(out.isotropy) == list(out.vectors) == ["none", "whitening (target)"]
  assert out.sentences == [*subset.sentences_a, *subset.sentences_b]
  np.testing.assert_allclose(out.vectors["whitening (target)"], np.concatenate([a, b]) * WEIGHTS, rtol=1e-6)
  assert scoring.evaluate_dataset("STS-B", "spearman", [subset], [(a, b)], []).vectors == {}


def test_auc_over_all_subsets_is_the_share_of_ordered_pairs():
  rng = np.random.default_rng(1)
  subsets = [_subset(f"QNLI/dev{i}", 20, rng, rng.integers(0, 2, 20)) for i in range(2)]
  raw = [(rng.normal(size=(20, 8)), rng.normal(size=(20, 8))) for _ in subsets]
  [score] = scoring.evaluate_dataset("QNLI", "auc", subsets, raw, []).scores
  sims = np.concatenate([_cos(a, b) for a, b in raw])
  labels = np.concatenate([s.labels for s in subsets])
  pos, neg = sims[labels == 1], sims[labels == 0]
  assert score.value == pytest.approx(100 * np.mean(pos[:, None] > neg[None, :]))


def test_sts_subsets_aggregate_all_mean_and_weighted_mean():
  rng = np.random.default_rng(2)
  sizes = (12, 30)
  subsets = [_subset(f"STS12/s{i}", n, rng, rng.uniform(0, 5, n)) for i, n in enumerate(sizes)]
  raw = [(rng.normal(size=(n, 8)), rng.normal(size=(n, 8))) for n in sizes]
  scores = scoring.evaluate_dataset("STS12", "spearman", subsets, raw, []).scores
  rhos = [100 * scipy.stats.spearmanr(_cos(a, b), s.labels)[0] for (a, b), s in zip(raw, subsets)]
  every = 100 * scipy.stats.spearmanr(np.concatenate([_cos(a, b) for a, b in raw]),
                                      np.concatenate([s.labels for s in subsets]))[0]
  assert {s.aggregation: s.value for s in scores} == pytest.approx(
      {"all": every, "mean": np.mean(rhos), "wmean": np.average(rhos, weights=sizes)})


def test_table6_correlates_each_similarity_with_the_word_edit_distance():
  rng = np.random.default_rng(3)
  dev = _subset("STS-B/dev", 25, rng, rng.uniform(0, 5, 25))
  a, b = rng.normal(size=(25, 8)), rng.normal(size=(25, 8))
  sims, rhos = scoring.table6(dev, a, b, [("sn", "target", _Scale())])
  assert list(sims) == list(rhos) == ["gold", "none", "sn (target)"]
  np.testing.assert_allclose(sims["sn (target)"], _cos(a * WEIGHTS, b * WEIGHTS))
  distances = [word_levenshtein(x.split(), y.split()) for x, y in zip(dev.sentences_a, dev.sentences_b)]
  assert rhos["gold"] == pytest.approx(100 * scipy.stats.spearmanr(dev.labels, distances)[0])
  assert rhos["none"] == pytest.approx(100 * scipy.stats.spearmanr(_cos(a, b), distances)[0])
