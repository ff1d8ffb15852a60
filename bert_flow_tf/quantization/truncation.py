"""What `truncate_dim=k` keeps of a calibration's output: its first k dimensions, the calibration's output being
in decreasing order of the variance it carries over the fit vectors.

Whitening (and the other baselines) come in that order: their first k dimensions are the top-k principal
directions (whitening cut to k is whitening-k). A flow's latent z has no such order: each coupling layer splits its
input in halves, and which dimensions come first says nothing of how much of the vectors' spread they carry. So a
flow's output is z turned to its principal axes, fitted with the flow on its latent over the fit vectors:

  axes = the eigenvectors of the covariance of z, by decreasing eigenvalue (each with its largest entry positive)
  output = z @ axes

an orthogonal rotation: every cosine and distance at full width is z's, and the first k dimensions are z's top-k
principal directions, the k-dimensional cut that keeps the most of z's variance. They are saved beside the flow as
AXES_FILE, float32 [D, D]. (On all-MiniLM-L6-v2 `last-avg` at k = 128, this cut loses 0.3 to 0.5 of STS-B against
full width, where z's k dimensions of largest variance lose 0.7 to 1.3: docs/quantization.md.)

A flow saved with a truncation order (ORDER_FILE, int32 [D], its dimensions by decreasing variance) and no axes
keeps it: `truncate_dim=k` keeps order[:k], in that order. Any other calibration keeps its first k; a cut to
k = D' keeps every dimension in place, and k outside 1..D' is an error (`check`).

Legend: D' = the calibrated width (D for a flow), k = truncate_dim.
"""
import os

import numpy as np

from bert_flow_tf.utils import errors
from bert_flow_tf.utils import io_utils

AXES_FILE = "principal_axes.npy"
ORDER_FILE = "truncation_order.npy"
_ORTHOGONAL_ATOL = 1e-4  # |axes^T axes - I| allowed in a saved file (float32 rounding of an orthogonal matrix)


def principal_axes(scatter):
  """The principal axes of vectors from their `decompositions.Scatter` (N >= 2 rows).

  Returns:
    (np.float32 [D, D] axes as columns, by decreasing variance, each with its largest-magnitude entry positive;
     np.float64 [D] the variance along each, population: scatter / N).
  """
  variances, axes = np.linalg.eigh(scatter.scatter / scatter.n)                 # ascending
  variances, axes = variances[::-1], axes[:, ::-1]
  signs = np.sign(axes[np.argmax(np.abs(axes), axis=0), np.arange(axes.shape[1])])
  return (axes * signs).astype(np.float32), np.maximum(variances, 0.)


def save_axes(folder, axes):
  """Writes axes float [D, D] to folder/AXES_FILE (atomically)."""
  io_utils.write_npy(os.path.join(folder, AXES_FILE), np.asarray(axes, np.float32))


def load_axes(folder, dim):
  """np.float32 [dim, dim] saved in `folder`, or None when it holds none; errors.UserError naming the file when it
  is not an orthogonal float32 [dim, dim]."""
  path = os.path.join(folder, AXES_FILE)
  axes = io_utils.read_npy(path, "principal axes")
  if axes is None:
    return None
  if (axes.dtype != np.float32 or axes.shape != (dim, dim) or not np.all(np.isfinite(axes)) or
      not np.allclose(axes.T.astype(np.float64) @ axes, np.eye(dim), atol=_ORTHOGONAL_ATOL)):
    raise errors.UserError(f"not the principal axes of the calibration's {dim} dimensions (want an orthogonal "
                           f"float32 [{dim}, {dim}]), got {axes.dtype} {list(axes.shape)}", path)
  return axes


def check(truncate_dim, dim):
  """Returns truncate_dim as an int if it is one in 1..dim, else raises ValueError (one line, both numbers)."""
  if isinstance(truncate_dim, bool) or not isinstance(truncate_dim, (int, np.integer)) or not 1 <= truncate_dim <= dim:
    raise ValueError(f"truncate_dim must be an int in 1..{dim} (the embedding width), got {truncate_dim!r}")
  return int(truncate_dim)


def kept(order, truncate_dim, dim):
  """The dimensions `truncate_dim` keeps of vectors of width `dim`: slice(None) for None (or k = dim), the first k
  (slice) without an order, else order[:k] (int32 [k]). Index the last axis with it.

  Raises:
    ValueError: truncate_dim not None and not an int in 1..dim (`check`).
  """
  if truncate_dim is None or check(truncate_dim, dim) == dim:
    return slice(None)
  return slice(0, truncate_dim) if order is None else np.asarray(order[:truncate_dim])


def kept_indices(order, truncate_dim, dim):
  """`kept` as int32 [k'] indices (k' = truncate_dim, or dim for None), for a graph's gather."""
  return np.arange(dim, dtype=np.int32)[kept(order, truncate_dim, dim)]


def save(folder, order):
  """Writes order int [D'] to folder/ORDER_FILE (atomically)."""
  io_utils.write_npy(os.path.join(folder, ORDER_FILE), np.asarray(order, np.int32))


def load_order(folder, dim):
  """int32 [dim] saved in `folder`, or None when it holds none; errors.UserError naming the file when it is not a
  permutation of 0..dim-1."""
  path = os.path.join(folder, ORDER_FILE)
  order = io_utils.read_npy(path, "truncation order")
  return None if order is None else checked(order, dim, path)


def checked(order, dim, where):
  """order as int32 [dim] when it is integers [dim], a permutation of 0..dim-1; else errors.UserError naming
  `where`."""
  order = np.asarray(order)
  if order.dtype.kind not in "iu" or order.shape != (dim,) or not np.array_equal(np.sort(order), np.arange(dim)):
    raise errors.UserError(f"not a truncation order of the calibration's {dim} dimensions (want int32 [{dim}], a "
                           f"permutation of 0..{dim - 1}), got {order.dtype} {list(order.shape)}", where)
  return order.astype(np.int32)
