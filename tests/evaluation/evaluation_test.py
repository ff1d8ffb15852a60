"""Cosine, metrics against scipy and hand computations; aggregation; isotropy; edit distance; score writers."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.stats

from bert_flow_tf import search
from bert_flow_tf.evaluation import isotropy as isotropy_lib
from bert_flow_tf.evaluation import lexical
from bert_flow_tf.evaluation import metrics
from bert_flow_tf.evaluation import sts
from bert_flow_tf.reporting import files
from bert_flow_tf.reporting import markdown
from bert_flow_tf.reporting import scores
from bert_flow_tf.data import PairSet

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _pairs(name, labels):
  n = len(labels)
  return PairSet(name, tuple("a" for _ in range(n)), tuple("b" for _ in range(n)), np.array(labels, np.float64))


def test_cosine_rowwise_and_zero_row():
  a = np.array([[1., 0.], [1., 1.], [0., 0.]])
  b = np.array([[0., 1.], [2., 2.], [1., 0.]])
  np.testing.assert_allclose(search.cosine(a, b), [0., 1., 0.], atol=1e-12)
  # The matrix cosine (float32) shares the normalisation: its diagonal is the row-wise one.
  rng = np.random.default_rng(0)
  x, y = rng.normal(size=(5, 8)), rng.normal(size=(5, 8))
  x[2] = 0.
  np.testing.assert_allclose(np.diag(search.cos_sim(x, y)), search.cosine(x, y), atol=1e-6)
  assert search.cos_sim(x, y).dtype == np.float32 and search.cosine(x, y).dtype == np.float64


def test_correlations_match_scipy():
  rng = np.random.default_rng(0)
  x = rng.normal(size=50)
  y = x + rng.normal(size=50)
  y[:5] = y[5]  # ties
  assert metrics.spearman_x100(x, y) == pytest.approx(100 * scipy.stats.spearmanr(x, y)[0], abs=1e-10)
  assert metrics.pearson_x100(x, y) == pytest.approx(100 * np.corrcoef(x, y)[0, 1], abs=1e-10)


def test_auc_with_ties_by_hand():
  # Positives score 0.8, 0.5, 0.5; negatives 0.5, 0.2. Pairs (pos > neg): 0.8 beats both (2), each 0.5
  # ties the 0.5 (1/2) and beats 0.2 (1): 2 + 1.5 + 1.5 = 5 of 6 pairs.
  scores = [0.8, 0.5, 0.5, 0.5, 0.2]
  labels = [1, 1, 1, 0, 0]
  assert metrics.auc_x100(scores, labels) == pytest.approx(500. / 6.)
  with pytest.raises(ValueError, match="both classes"):
    metrics.auc_x100([0.1, 0.2], [1, 1])


def test_sts_scores_all_mean_wmean_by_hand():
  first = _pairs("STS12/x", [1., 2., 3.])
  second = _pairs("STS12/y", [1., 2., 3., 4., 5., 6.])
  pred_first = [1., 2., 3.]         # Spearman 100
  pred_second = [6., 5., 4., 3., 2., 1.]  # Spearman -100
  got = sts.sts_scores([first, second], [pred_first, pred_second])
  assert got["mean"] == pytest.approx(0.)
  assert got["wmean"] == pytest.approx((3 * 100. - 6 * 100.) / 9)
  expected_all = 100 * scipy.stats.spearmanr(pred_first + pred_second, [1., 2., 3., 1., 2., 3., 4., 5., 6.])[0]
  assert got["all"] == pytest.approx(expected_all)
  single = sts.sts_scores([second], {"STS12/y": [1., 3., 2., 4., 5., 6.]})
  assert single["all"] == single["mean"] == single["wmean"] == pytest.approx(100 * (1 - 6 * 2 / (6 * 35)))


def test_isotropy_separates_cone_from_sphere():
  rng = np.random.default_rng(0)
  sphere = rng.normal(size=(2000, 16))
  cone = sphere * 0.1 + 3.
  iso, aniso = isotropy_lib.isotropy(sphere), isotropy_lib.isotropy(cone)
  assert abs(iso["mean_cosine"]) < 0.05 and aniso["mean_cosine"] > 0.9
  assert iso["mean_norm_ratio"] < 0.1 and aniso["mean_norm_ratio"] > 0.9
  assert iso["top1_variance"] < 0.15 and iso["condition_number"] < 2.
  stretched = sphere * np.array([10.] + [1.] * 15)
  assert isotropy_lib.isotropy(stretched)["top1_variance"] > 0.8


def test_describe_isotropy_cautions_only_near_isotropic_spaces():
  rng = np.random.default_rng(0)
  sphere = rng.normal(size=(3000, 16))
  iso, line, near = isotropy_lib.describe_isotropy(sphere, "a sphere", max_rows=1000)
  assert near and "already close to isotropic" in line and "(1000 vectors)" in line
  # The numbers are those of the seeded 1000-row sample, computed here another way: the spectrum from the SVD of
  # the centered sample, the mean cosine over all its distinct pairs (the function averages 10,000 random pairs).
  sample = sphere[np.random.default_rng(0).choice(3000, 1000, replace=False)]
  singular = np.linalg.svd(sample - sample.mean(0), compute_uv=False) ** 2  # [16], descending
  assert iso["top1_variance"] == pytest.approx(singular[0] / singular.sum(), rel=1e-9)
  assert iso["condition_number"] == pytest.approx(singular[0] / singular[-1], rel=1e-9)
  assert iso["mean_norm_ratio"] == pytest.approx(
      np.linalg.norm(sample.mean(0)) / np.mean(np.sqrt((sample ** 2).sum(1))), rel=1e-9)
  unit = sample / np.linalg.norm(sample, axis=1, keepdims=True)
  all_pairs = (np.sum(unit @ unit.T) - len(unit)) / (len(unit) * (len(unit) - 1))
  assert iso["mean_cosine"] == pytest.approx(all_pairs, abs=0.01)
  assert iso["top1_variance"] != pytest.approx(isotropy_lib.isotropy(sphere)["top1_variance"], rel=1e-6)
  _, line, near = isotropy_lib.describe_isotropy(sphere * 0.1 + 3., "a cone")
  cone_cosine = isotropy_lib.isotropy(sphere * 0.1 + 3.)["mean_cosine"]
  assert not near and "already close" not in line and f"{cone_cosine:.3f}" in line


def test_calibration_warnings_name_each_calibration_below_none():
  results = [scores.Score("custom", "none", None, "spearman", None, 82.03),
             scores.Score("custom", "flow", "target", "spearman", None, 80.96),
             scores.Score("custom", "sn", "target", "spearman", None, 82.32),
             scores.Score("STS12", "none", None, "spearman", "all", 70.),
             scores.Score("STS12", "whitening", "target", "spearman", "all", 69.),
             scores.Score("STS12", "whitening", "target", "spearman", "mean", 75.)]  # no "none" mean: skipped
  warnings = scores.calibration_warnings(results)
  assert len(warnings) == 2
  assert warnings[0].startswith("custom: flow (target) 80.96 < none 82.03 (spearman)")
  assert warnings[1].startswith("STS12 all: whitening (target) 69.00 < none 70.00")


def test_edit_distance_words_lowercased():
  assert lexical.edit_distance("I like this restaurant", "I dislike this restaurant") == 1
  assert lexical.edit_distance("A man plays", "a MAN plays guitar") == 1
  assert lexical.edit_distance("kitten sat", "sitting sat down") == 2
  assert lexical.edit_distance("", "a b c") == 3


def test_lexical_correlation_sign():
  pairs = [("a b c", "a b c"), ("a b c", "a b d"), ("a b c", "x y c"), ("a b c", "x y z")]
  assert lexical.lexical_correlation(pairs, [4., 3., 2., 1.]) == pytest.approx(-100.)


def test_result_validation_and_json(tmp_path):
  results = [scores.Score("STS-B", "none", None, "spearman", None, 47.29),
             scores.Score("STS12", "flow", "target", "spearman", "all", 63.48),
             scores.Score("STS12", "flow", "target", "spearman", "wmean", 60.0),
             scores.Score("QNLI", "sn+natsv-6", "target", "auc", None, 70.3)]
  path = tmp_path / "results.json"
  files.write_results_json(str(path), "bert-base", "last2avg", results)
  data = json.loads(path.read_text())
  assert data["model"] == "bert-base" and data["sentence_embedding_type"] == "last2avg"
  assert data["results"][1] == {"dataset": "STS12", "method": "flow", "fit_on": "target", "metric": "spearman",
                                "aggregation": "all", "value": 63.48}
  assert [p.name for p in tmp_path.iterdir()] == ["results.json"]
  with pytest.raises(ValueError, match="Score.method='natsv'"):
    scores.Score("STS-B", "natsv", "target", "spearman", None, 1.)
  with pytest.raises(ValueError, match="Score.dataset='STS17'"):
    scores.Score("STS17", "none", None, "spearman", None, 1.)
  table = markdown.scores_tables(results)
  lines = table.splitlines()
  assert lines[0] == "| method | STS-B | STS12 | QNLI |"
  assert lines[2] == "| none | 47.29 | - | - |"
  assert lines[3] == "| flow (target) | - | 63.48 | - |"
  assert "| flow (target) | 60.00 |" in table


def test_results_table_script_one_row_per_pooling_and_method(tmp_path):
  for pooling, value in (("last-avg", 47.29), ("emb-avg", 55.5)):
    results = [scores.Score("STS-B", "none", None, "spearman", None, value),
               scores.Score("STS12", "flow", "target", "spearman", "all", 63.48),
               scores.Score("STS12", "flow", "target", "spearman", "mean", 60.0)]
    (tmp_path / pooling).mkdir()
    files.write_results_json(str(tmp_path / pooling / "results.json"), "m", pooling, results)
  script = os.path.join(REPO, "scripts", "results_table.py")
  out = subprocess.run([sys.executable, script, str(tmp_path / "last-avg"), str(tmp_path / "emb-avg")],
                       capture_output=True, text=True, check=True).stdout.splitlines()
  assert out == ["| pooling | method | STS-B | SICK-R | STS12 | STS13 | STS14 | STS15 | STS16 | QNLI |",
                 "|---|---|---|---|---|---|---|---|---|---|",
                 "| last-avg | none | 47.29 | - | - | - | - | - | - | - |",
                 "| last-avg | flow (target) | - | - | 63.48 | - | - | - | - | - |",
                 "| emb-avg | none | 55.50 | - | - | - | - | - | - | - |",
                 "| emb-avg | flow (target) | - | - | 63.48 | - | - | - | - | - |"]
