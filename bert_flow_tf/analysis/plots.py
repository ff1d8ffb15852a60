"""The paper's Figure 2 (similarity vs word edit distance) and isotropy plots, as PNG files (matplotlib, Agg).

Importing this module selects matplotlib's Agg backend (files only, no display); nothing else in the package
imports matplotlib, so runs without the analysis do not load it.
"""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top,wrong-import-position
import numpy as np  # pylint: disable=g-import-not-at-top,wrong-import-position

from bert_flow_tf.evaluation import isotropy  # pylint: disable=g-import-not-at-top,wrong-import-position
from bert_flow_tf.evaluation import lexical  # pylint: disable=g-import-not-at-top,wrong-import-position
from bert_flow_tf.evaluation import metrics  # pylint: disable=g-import-not-at-top,wrong-import-position
from bert_flow_tf.utils import io_utils  # pylint: disable=g-import-not-at-top,wrong-import-position

NEAR_EDIT_DISTANCE = 4  # the paper's Figure 2 highlights pairs with edit distance <= 4 in green
DPI = 110


def _save(fig, path):
  """Writes `fig` as PNG atomically and closes it."""
  with io_utils.atomic_path(path) as tmp:
    fig.savefig(tmp, format="png", dpi=DPI)
  plt.close(fig)
  return path


def similarity_vs_edit_distance(pairs, similarities, path, title=None):
  """Figure 2: one scatter panel per similarity, x = similarity, y = word edit distance of the pair.

  Pairs with edit distance <= 4 are green, the others blue, as in the paper; each panel's title gives the
  Spearman x100 between that similarity and the edit distance (the paper's Table 6 number).

  Args:
    pairs: a PairSet or a sequence of (sentence_a, sentence_b), N pairs.
    similarities: dict name -> array [N], e.g. {"gold": labels, "none": cosines, "flow (target)": cosines}; the
      panels follow its order. A name "gold" gets the x label "gold score".
    path: str, the PNG file.
    title: str or None, the figure's title.

  Returns:
    dict name -> Spearman x100 between that similarity and the edit distance.
  """
  if hasattr(pairs, "sentences_a"):
    pairs = list(zip(pairs.sentences_a, pairs.sentences_b))
  distances = np.array([lexical.edit_distance(a, b) for a, b in pairs], np.float64)
  near = distances <= NEAR_EDIT_DISTANCE
  fig, axes = plt.subplots(1, len(similarities), figsize=(3.2 * len(similarities), 3.3), sharey=True,
                           squeeze=False)
  rhos = {}
  for ax, (name, sims) in zip(axes[0], similarities.items()):
    sims = np.asarray(sims, np.float64)
    if sims.shape != distances.shape:
      raise ValueError(f"similarity {name!r}: {sims.shape[0]} values for {len(distances)} pairs")
    rhos[name] = metrics.spearman_x100(sims, distances)
    ax.scatter(sims[~near], distances[~near], s=4, c="tab:blue", alpha=0.4, linewidths=0,
               label=f"edit distance > {NEAR_EDIT_DISTANCE}")
    ax.scatter(sims[near], distances[near], s=4, c="tab:green", alpha=0.7, linewidths=0,
               label=f"edit distance <= {NEAR_EDIT_DISTANCE}")
    ax.set_title(f"{name}\nrho(sim, edit dist.) = {rhos[name]:.2f}", fontsize=9)
    ax.set_xlabel("gold score" if name == "gold" else "cosine similarity", fontsize=9)
  axes[0][0].set_ylabel("word edit distance", fontsize=9)
  axes[0][0].legend(fontsize=7, loc="upper left", markerscale=3)
  if title:
    fig.suptitle(title, fontsize=10)
  fig.tight_layout()
  _save(fig, path)
  return rhos


def spectrum_shares(vectors):
  """Share of the (uncentered) second moment along each singular direction, descending. float64 [min(N, D)].

  s_i^2 / sum_j s_j^2 for the singular values s of the [N, D] matrix X as it is: a common mean direction (BERT's
  "narrow cone") shows as a large first share. An isotropic space gives about 1/D each. The s_i^2 are the
  eigenvalues of X^T X [D, D] (40x faster than an SVD of X at N = 2758, D = 384), clipped at 0.
  """
  x = np.asarray(vectors, np.float64)
  squared = np.clip(np.linalg.eigvalsh(x.T @ x)[::-1][:min(x.shape)], 0., None)
  return squared / squared.sum()


def isotropy_figure(spaces, path, title=None, num_pairs=10000, rng_seed=0):
  """Two panels, every space overlaid: the singular-value spectrum (log scale) and the cosine histogram.

  Args:
    spaces: dict name -> array [N, D_name] of sentence vectors (e.g. "none", "flow (target)", "whitening
      (target)"); D may differ between spaces.
    path: str, the PNG file.
    title: str or None.
    num_pairs: int, random pairs of distinct sentences for the cosine histogram
      (isotropy.random_pair_cosines, the pairs of the isotropy table's mean cosine).
    rng_seed: int.
  """
  fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
  bins = np.linspace(-1., 1., 201)
  for name, vectors in spaces.items():
    shares = spectrum_shares(vectors)
    line, = left.semilogy(np.arange(1, len(shares) + 1), shares, lw=1.2, label=f"{name} (first {shares[0]:.3f})")
    cosines = isotropy.random_pair_cosines(vectors, rng_seed, num_pairs)
    right.hist(cosines, bins=bins, density=True, histtype="step", lw=1.2, color=line.get_color(),
               label=f"{name} (mean {cosines.mean():.2f})")
  dims = max(np.asarray(v).shape[1] for v in spaces.values())
  left.axhline(1. / dims, color="gray", ls="--", lw=0.8, label=f"isotropic (1/{dims})")
  left.set_xlabel("singular direction (descending)")
  left.set_ylabel("share of sum of squared singular values")
  left.set_title("singular-value spectrum (uncentered)", fontsize=10)
  left.legend(fontsize=7)
  right.set_xlabel("cosine of a random pair of sentences")
  right.set_ylabel("density")
  right.set_title(f"cosines of {num_pairs} random pairs", fontsize=10)
  right.legend(fontsize=7)
  if title:
    fig.suptitle(title, fontsize=11)
  fig.tight_layout()
  return _save(fig, path)
