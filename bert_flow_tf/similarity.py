"""The similarity functions of sentence-transformers' `util` (their names, argument orders and results), and the
names an encoder's `similarity_fn_name` gives them.

  name         every a with every b      a[i] with b[i]           score
  "cosine"     search.cos_sim            pairwise_cos_sim         cosine (norms floored: a zero vector scores 0)
  "dot"        dot_score                 pairwise_dot_score       dot product
  "euclidean"  euclidean_sim             pairwise_euclidean_sim   minus the L2 distance (a vector with itself: 0)
  "manhattan"  manhattan_sim             pairwise_manhattan_sim   minus the L1 distance
               (none)                    pairwise_angle_sim       AnglE's |cosine + sine| (no similarity_fn_name)

`matrix(name, a, b)` and `pairwise(name, a, b)` pick by name. Inputs are float (or int) [n, D] arrays or nested
lists, a [D] counting as one row; every function returns np.float32 (sentence-transformers returns a float32 torch
tensor), cosine as search computes it (float32), the others in float64 and then rounded.

Legend: n, m = vectors, D = width.
"""
import numpy as np
from scipy.spatial import distance

from bert_flow_tf import search


def _two(a, b, same_rows):
  """a, b as float64 [n, D] and [m, D] (or [n, D] twice with same_rows); ValueError naming both shapes."""
  a, b = np.atleast_2d(np.asarray(a, np.float64)), np.atleast_2d(np.asarray(b, np.float64))
  if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1] or (same_rows and a.shape != b.shape):
    raise ValueError(f"similarity of vectors of shapes {list(a.shape)} and {list(b.shape)}: need [n, D] and "
                     f"{'[n, D]' if same_rows else '[m, D]'} of one width D")
  return a, b


def dot_score(a, b):
  """a[i] . b[j] for every i, j: [n, D] and [m, D] -> np.float32 [n, m]."""
  a, b = _two(a, b, same_rows=False)
  return (a @ b.T).astype(np.float32)


def euclidean_sim(a, b):
  """-||a[i] - b[j]||_2 for every i, j: [n, D] and [m, D] -> np.float32 [n, m]."""
  return (-distance.cdist(*_two(a, b, same_rows=False), "euclidean")).astype(np.float32)


def manhattan_sim(a, b):
  """-||a[i] - b[j]||_1 for every i, j: [n, D] and [m, D] -> np.float32 [n, m]."""
  return (-distance.cdist(*_two(a, b, same_rows=False), "cityblock")).astype(np.float32)


def pairwise_cos_sim(a, b):
  """cosine(a[i], b[i]): [n, D] twice -> np.float32 [n]."""
  return search.cosine(*_two(a, b, same_rows=True)).astype(np.float32)


def pairwise_dot_score(a, b):
  """a[i] . b[i]: [n, D] twice -> np.float32 [n]."""
  return np.einsum("nd,nd->n", *_two(a, b, same_rows=True)).astype(np.float32)


def pairwise_euclidean_sim(a, b):
  """-||a[i] - b[i]||_2: [n, D] twice -> np.float32 [n]."""
  a, b = _two(a, b, same_rows=True)
  return (-np.linalg.norm(a - b, ord=2, axis=-1)).astype(np.float32)


def pairwise_manhattan_sim(a, b):
  """-||a[i] - b[i]||_1: [n, D] twice -> np.float32 [n]."""
  a, b = _two(a, b, same_rows=True)
  return (-np.linalg.norm(a - b, ord=1, axis=-1)).astype(np.float32)


def pairwise_angle_sim(a, b):
  """AnglE's similarity (arXiv 2309.12871) of a[i] and b[i]: |cos + sin| of the unit vectors, the sine pairing
  dimension k with k + D/2 (an odd D is padded with one zero). [n, D] twice -> np.float32 [n]."""
  a, b = _two(a, b, same_rows=True)
  if a.shape[1] % 2:
    a, b = (np.pad(x, [(0, 0), (0, 1)]) for x in (a, b))
  a, b = (x / search.norms(x)[:, None] for x in (a, b))
  (a_first, a_last), (b_first, b_last) = np.split(a, 2, axis=1), np.split(b, 2, axis=1)
  sine = np.einsum("nd,nd->n", a_last, b_first) - np.einsum("nd,nd->n", a_first, b_last)
  return np.abs(np.einsum("nd,nd->n", a, b) + sine).astype(np.float32)


# similarity_fn_name -> (every a with every b, a[i] with b[i]).
FUNCTIONS = {"cosine": (search.cos_sim, pairwise_cos_sim), "dot": (dot_score, pairwise_dot_score),
             "euclidean": (euclidean_sim, pairwise_euclidean_sim),
             "manhattan": (manhattan_sim, pairwise_manhattan_sim)}
NAMES = tuple(FUNCTIONS)


def check_name(name):
  """Returns `name` if it is one of NAMES (an enum with a `value` counts as its value), else ValueError."""
  name = getattr(name, "value", name)
  if name not in NAMES:
    raise ValueError(f"similarity_fn_name {name!r} is not supported; use one of {', '.join(NAMES)}")
  return name


def matrix(name, a, b):
  """Scores of every row of `a` [n, D] (or [D]) with every row of `b` [m, D] -> np.float32 [n, m]."""
  return FUNCTIONS[check_name(name)][0](a, b)


def pairwise(name, a, b):
  """Scores of row i of `a` with row i of `b`, both [n, D] (or [D]) -> np.float32 [n]."""
  return FUNCTIONS[check_name(name)][1](a, b)
