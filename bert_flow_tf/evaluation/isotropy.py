"""How anisotropic a set of sentence vectors is: mean random-pair cosine, principal spectrum, condition number.

Legend: N = vectors, D = their width.
"""
import numpy as np

from bert_flow_tf import search


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
  return search.cosine(x[i], x[j])


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
