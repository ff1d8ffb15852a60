"""The decompositions the baselines (calibration/baselines.py) are fitted from, and `Shared`, which lets the fits
of several baselines on the same vectors compute each of them once.

Legend: N = vectors, D = their width.
"""
import numpy as np


class Shared:
  """What fits on the same vectors compute alike (a covariance's SVD, a scatter's eigenvectors, SN): computed by
  the first fit that asks, `get(key, compute)`, and the same arrays handed to the others."""

  def __init__(self):
    self._values = {}

  def get(self, key, compute):
    if key not in self._values:
      self._values[key] = compute()
    return self._values[key]


def moments_svd(mu, cov):
  """(mu float64 [D], u [D, D], s [D]): the covariance's SVD U diag(s) U^T, whitening's decomposition."""
  u, s, _ = np.linalg.svd(cov)
  return np.asarray(mu, np.float64), u, s


def scatter_eigenvectors(x):
  """(mean [D], eigenvectors [D, D] by ascending eigenvalue) of float64 x [N, D]'s centered scatter matrix: its
  top eigenvectors are the top right singular vectors of the centered data, at far less cost than an SVD of the
  [N, D] data."""
  mu = x.mean(axis=0)
  centered = x - mu
  return mu, np.linalg.eigh(centered.T @ centered)[1]
