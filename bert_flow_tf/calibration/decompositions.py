"""The decompositions the baselines (calibration/baselines.py) are fitted from, `Shared`, which lets the fits of
several baselines on the same vectors compute each of them once, and `Scatter`, a mean and scatter matrix merged
block by block (whitening from the store, a flow's principal axes).

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


class Scatter:
  """The mean [D] and scatter matrix [D, D] (the sum of outer products about the mean) of rows added block by block,
  merged pairwise in float64 (Chan et al.): equal to those of all rows at once up to float64 rounding.

  Attributes:
    n: int, rows added; mean: float64 [D] or None; scatter: float64 [D, D] or None (before any row).
  """

  def __init__(self):
    self.n, self.mean, self.scatter = 0, None, None

  def add(self, block):
    """Adds float [R, D] rows."""
    x = np.asarray(block, np.float64)
    if not len(x):
      return
    m = x.mean(axis=0)
    s = (x - m).T @ (x - m)
    if self.n == 0:
      self.n, self.mean, self.scatter = len(x), m, s
      return
    total = self.n + len(x)
    delta = m - self.mean
    self.scatter = self.scatter + s + np.outer(delta, delta) * (self.n * len(x) / total)
    self.mean = self.mean + delta * (len(x) / total)
    self.n = total


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
