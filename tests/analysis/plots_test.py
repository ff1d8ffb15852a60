"""Figure 2 and the isotropy plots: each is a valid PNG of the expected size; the numbers they show are exact."""
import subprocess
import sys

import numpy as np
import pytest
import scipy.stats

from bert_flow_tf.analysis import plots
from tests.analysis.references import png_size
from tests.analysis.references import word_levenshtein

PAIRS = [("a man plays the guitar .", "a man plays a guitar ."), ("the dog runs", "a cat sleeps on the mat now"),
         ("a b c d e f g h", "i j k l m n o p"), ("one", "one"), ("x y", "x y z w v u t")] * 8


def test_figure2_is_a_png_with_one_panel_per_similarity_and_the_table6_numbers(tmp_path):
  rng = np.random.default_rng(0)
  sims = {"gold": rng.uniform(0, 5, len(PAIRS)), "none": rng.uniform(-1, 1, len(PAIRS)),
          "flow (target)": rng.uniform(-1, 1, len(PAIRS))}
  path = tmp_path / "figure2.png"
  rhos = plots.similarity_vs_edit_distance(PAIRS, sims, str(path), title="test")
  width, height = png_size(path)
  assert (width, height) == (round(3 * 3.2 * plots.DPI), round(3.3 * plots.DPI))
  # Each panel shows both kinds of pair: blue (edit distance > 4) and green (<= 4) points.
  image = _rgb(path)
  for panel in np.array_split(image, 3, axis=1):
    r, g, b = panel[..., 0], panel[..., 1], panel[..., 2]
    assert np.sum((b > r + 0.2) & (b > g + 0.05)) > 20 and np.sum((g > r + 0.1) & (g > b + 0.1)) > 20
  distances = [word_levenshtein(a.split(), b.split()) for a, b in PAIRS]
  assert rhos.keys() == sims.keys()
  for name, s in sims.items():
    assert rhos[name] == pytest.approx(100 * scipy.stats.spearmanr(s, distances)[0], abs=1e-9)
  with pytest.raises(ValueError, match="'none': 3 values for 40 pairs"):
    plots.similarity_vs_edit_distance(PAIRS, {"none": [0., 1., 2.]}, str(tmp_path / "bad.png"))


def test_isotropy_figure_is_a_png_and_overlays_spaces_of_any_width(tmp_path):
  rng = np.random.default_rng(0)
  cone = rng.normal(size=(300, 32)) + 5.                    # a common direction: BERT's narrow cone
  spaces = {"none": cone, "flow (target)": rng.normal(size=(300, 32)), "whitening-8 (target)": cone[:, :8]}
  path = tmp_path / "isotropy.png"
  plots.isotropy_figure(spaces, str(path), title="test", num_pairs=500)
  assert png_size(path) == (10 * plots.DPI, round(3.8 * plots.DPI))
  # Every space is drawn in both panels, in matplotlib's first three cycle colours (C0, C1, C2).
  image = _rgb(path)
  for panel in np.array_split(image, 2, axis=1):
    for color in ("#1f77b4", "#ff7f0e", "#2ca02c"):
      rgb = np.array([int(color[i:i + 2], 16) / 255 for i in (1, 3, 5)])
      assert np.sum(np.abs(panel - rgb).max(axis=-1) < 0.08) > 100, color  # an absent colour: 0


def _rgb(path):
  """float [H, W, 3] in [0, 1] of a PNG."""
  import matplotlib.image  # pylint: disable=g-import-not-at-top
  return matplotlib.image.imread(str(path))[..., :3]


def test_spectrum_shares():
  np.testing.assert_allclose(plots.spectrum_shares(np.eye(4) * 3.), [0.25] * 4)
  rank_one = np.outer(np.arange(1., 6.), [1., 2., 3.])
  np.testing.assert_allclose(plots.spectrum_shares(rank_one), [1., 0., 0.], atol=1e-12)


@pytest.mark.slow
def test_a_run_without_the_analysis_does_not_load_it():
  # Keras 3 would import matplotlib.pyplot with TensorFlow; bert_flow_tf sets TF_USE_LEGACY_KERAS so it is not.
  modules = ("bert_flow_tf.analysis.plots", "bert_flow_tf.analysis.report", "wordfreq", "keras", "matplotlib")
  code = f"import sys, run_flow; print(sorted(m for m in {modules!r} if m in sys.modules))"
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
  assert out.stdout.strip().splitlines()[-1] == "[]"
