"""The similarity functions an encoder's `similarity_fn_name` names, as sentence-transformers defines them.

  "cosine"     cosine of the two vectors (search.cos_sim: norms floored, so a zero vector scores 0)
  "dot"        dot product
  "euclidean"  minus the L2 distance (higher is more similar; a vector with itself scores 0)
  "manhattan"  minus the L1 distance

`matrix(name, a, b)` scores every row of a with every row of b, `pairwise(name, a, b)` row i of a with row i of b.
Returned as np.float32 (sentence-transformers returns a float32 tensor); cosine as search computes it (float32),
the others in float64.

Legend: n, m = vectors, D = width.
"""
import numpy as np
from scipy.spatial import distance

from bert_flow_tf import search

NAMES = ("cosine", "dot", "euclidean", "manhattan")


def check_name(name):
  """Returns `name` if it is one of NAMES (an enum with a `value` counts as its value), else ValueError."""
  name = getattr(name, "value", name)
  if name not in NAMES:
    raise ValueError(f"similarity_fn_name {name!r} is not supported; use one of {', '.join(NAMES)}")
  return name


def _two(a, b, same_rows):
  a, b = np.atleast_2d(np.asarray(a, np.float64)), np.atleast_2d(np.asarray(b, np.float64))
  if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1] or (same_rows and a.shape != b.shape):
    raise ValueError(f"similarity of vectors of shapes {list(a.shape)} and {list(b.shape)}: need [n, D] and "
                     f"{'[n, D]' if same_rows else '[m, D]'} of one width D")
  return a, b


def _scores(name, a, b, pairwise):
  name = check_name(name)
  a, b = _two(a, b, same_rows=pairwise)
  if name == "cosine":
    out = search.cosine(a, b) if pairwise else search.cos_sim(a, b)
  elif name == "dot":
    out = np.einsum("nd,nd->n", a, b) if pairwise else a @ b.T
  elif pairwise:
    out = -np.linalg.norm(a - b, ord=2 if name == "euclidean" else 1, axis=-1)
  else:
    out = -distance.cdist(a, b, "euclidean" if name == "euclidean" else "cityblock")
  return np.asarray(out, np.float32)


def matrix(name, a, b):
  """Scores of every row of `a` [n, D] (or [D]) with every row of `b` [m, D] -> np.float32 [n, m]."""
  return _scores(name, a, b, pairwise=False)


def pairwise(name, a, b):
  """Scores of row i of `a` with row i of `b`, both [n, D] (or [D]) -> np.float32 [n]."""
  return _scores(name, a, b, pairwise=True)
