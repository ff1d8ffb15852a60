"""Which dimensions `truncate_dim=k` keeps of a calibration's output: the calibration's truncation order.

Whitening (and the other baselines) put their output in order of the variance it explains: their first k
dimensions are the top-k principal directions (whitening cut to k is whitening-k), and they keep the first k.
A flow's latent z has no such order: each coupling layer splits its input in halves, and which dimensions come
first says nothing of how much of the vectors' spread they carry. On all-MiniLM-L6-v2 the k of largest variance on
the fit sentences keep more of STS-B than the first k (docs/quantization.md has the numbers). So a flow's order
is fitted with the calibration, on its output over the fit vectors:

  order = its dimensions by decreasing variance (ties: the lower index first)

read off the int8 ranges fitted in the same pass (`int8_ranges`: each is 2 x 3.9 standard deviations wide), and
saved beside it as ORDER_FILE, int32 [D'], a permutation of 0..D'-1. `truncate_dim=k` then keeps order[:k], in that
order (so a cut to 64 of the cut to 128 is the cut to 64). A calibration without an order (a baseline, or a flow
saved before orders were fitted) keeps its first k; a cut to k = D' keeps every dimension in place, and k outside
1..D' is an error (`check`).

Legend: D' = the calibrated width, k = truncate_dim.
"""
import os

import numpy as np

from bert_flow_tf.utils import errors
from bert_flow_tf.utils import io_utils

ORDER_FILE = "truncation_order.npy"


def fit_order(ranges):
  """int32 [D']: dimensions by decreasing width of their int8 ranges float [2, D'] (their standard deviation)."""
  ranges = np.asarray(ranges, np.float64)
  return np.argsort(-(ranges[1] - ranges[0]), kind="stable").astype(np.int32)


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
  with io_utils.atomic_path(os.path.join(folder, ORDER_FILE)) as tmp:
    with open(tmp, "wb") as f:
      np.save(f, np.asarray(order, np.int32))


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
