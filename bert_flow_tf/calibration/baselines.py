"""Unsupervised calibrations of sentence vectors, the baselines of the paper's Table 5 and BERT-whitening.

Each calibration is fitted on a matrix of sentence vectors x [N, D] (computed in float64) and then maps any
[M, D] matrix to float64 [M, D'] (D' = D except whitening-k, D' = k):

  Whitening(k)            BERT-whitening (Su et al. 2021): y = (x - mu) W, W = U diag(1 / sqrt(s)) from the
                          SVD U diag(s) U^T of the covariance (N - 1 normalised, as np.cov); keeping the
                          first k columns of W gives "whitening-k". Covariance of y on the fit data = I.
  StandardNormalization   "SN" (paper Sec. 4.3): y = (x - mu) / sigma per dimension.
  Natsv(k)                "NATSV", all-but-the-top (Mu & Viswanath 2018): y = x~ - sum_{i<=k} (u_i . x~) u_i,
                          x~ = x - mu, u_i the top-k principal directions of the centered fit data.
  SnNatsv(k)              SN, then NATSV(k) fitted on the SN output.

Near-zero variances (constant dimensions; all-MiniLM-L6-v2 has two near-constant ones) are guarded with
EPS: SN divides by sqrt(var + EPS) and whitening by sqrt(max(s, EPS * max(s))) (eigenvalues above that floor are
exact), so the output stays finite
(a constant dimension maps to 0).

Every object has `fit(x) -> self`, `transform(x)`, `save(path)` (npz, atomic) and `Cls.load(path)`;
`load_baseline(path)` restores any of them. `make_baseline(name)` builds an unfitted one from its method name; the
name grammar (FORMS) is owned here.
"""
import re
import zipfile

import numpy as np
from absl import logging

from bert_flow_tf.calibration import decompositions
from bert_flow_tf.utils import errors
from bert_flow_tf.utils import io_utils

EPS = 1e-12
FORMS = '"whitening", "whitening-K", "sn", "natsv-K", "sn+natsv-K" (K a positive integer)'


def _as_matrix(x):
  x = np.asarray(x, np.float64)
  if x.ndim != 2:
    raise ValueError(f"expected sentence vectors [N, D], got shape {x.shape}")
  return x


class _Calibration:
  """Shared fit/transform/save plumbing; subclasses define `_fit`, `_apply`, `name`, `_ARRAYS` and `_shapes(D)`
  (the saved arrays' shapes, which `load_baseline` checks)."""
  _ARRAYS = ()

  def fit(self, x, shared=None):
    """Fits on sentence vectors x [N, D]; returns self. `shared`: a `decompositions.Shared` of x, which other
    fits on the same x computed and reuse (`calibrator.fit_baselines`), or None."""
    x = _as_matrix(x)
    if x.shape[0] < 2:
      raise ValueError(f"{self.name}: need at least 2 vectors to fit, got {x.shape[0]}")
    self._fit(x, decompositions.Shared() if shared is None else shared)
    return self

  def transform(self, x):
    """Maps x [M, D] to float64 [M, D'] with the fitted statistics."""
    if not self.fitted:
      raise ValueError(f"{self.name}: transform called before fit")
    x = _as_matrix(x)
    if x.shape[1] != self.dim:
      raise ValueError(f"{self.name}: fitted on D={self.dim}, got vectors of shape {x.shape}")
    return self._apply(x)

  @property
  def fitted(self):
    return all(getattr(self, a, None) is not None for a in self._ARRAYS)

  def _state(self):
    return {a: getattr(self, a) for a in self._ARRAYS}

  def _set_state(self, state):
    for a in self._ARRAYS:
      setattr(self, a, state[a])

  def save(self, path):
    """Saves the method name and fitted arrays to the npz file `path` (tmp file + os.replace)."""
    if not self.fitted:
      raise ValueError(f"{self.name}: save called before fit")
    with io_utils.atomic_path(path) as tmp:
      with open(tmp, "wb") as f:
        np.savez(f, name=np.array(self.name), **self._state())

  @classmethod
  def load(cls, path):
    """Restores a calibration saved by `save`; ValueError if the file holds another class."""
    obj = load_baseline(path)
    if not isinstance(obj, cls):
      raise ValueError(f"{path} holds {obj.name!r}, not a {cls.__name__}")
    return obj


class Whitening(_Calibration):
  """BERT-whitening, optionally keeping the top-k whitened directions.

  Args:
    k: int or None; None keeps all D directions, else 1 <= k <= D.
  """
  _ARRAYS = ("mu", "kernel")

  def __init__(self, k=None):
    if k is not None and k < 1:
      raise ValueError(f"whitening k must be a positive integer or None, got {k!r}")
    self.k = k
    self.mu = self.kernel = None  # [D], [D, k or D]

  @property
  def name(self):
    return "whitening" if self.k is None else f"whitening-{self.k}"

  def _shapes(self, d):
    return {"mu": (d,), "kernel": (d, self.k or d)}

  @property
  def dim(self):
    return self.mu.shape[0]

  def _fit(self, x, shared):
    if len(x) <= x.shape[1] and (self.k is None or self.k >= len(x)):
      logging.warning("%s fitted on %d vectors of width %d: their covariance has rank < %d, so the directions past "
                      "the first %d are scaled up from rounding noise; fit on more sentences than dimensions, or "
                      "keep fewer directions (whitening-K, K < %d)", self.name, len(x), x.shape[1], len(x), len(x) - 1,
                      len(x))
    self._fit_svd(*shared.get("whitening", lambda: decompositions.moments_svd(
        x.mean(axis=0), np.cov(x, rowvar=False).reshape(x.shape[1], x.shape[1]))))

  def fit_moments(self, mu, cov):
    """Fits from the mean float64 [D] and covariance float64 [D, D] (N - 1 normalised) alone; returns self.
    (`calibration.store_stream.fit_whitening` merges them block by block.)"""
    return self._fit_svd(*decompositions.moments_svd(mu, cov))

  def _fit_svd(self, mu, u, s):
    if self.k is not None and self.k > len(s):
      raise ValueError(f"{self.name}: k={self.k} > D={len(s)}")
    self.mu = mu
    kernel = u / np.sqrt(np.maximum(s, EPS * s.max()))[None, :]
    self.kernel = kernel if self.k is None else kernel[:, :self.k]
    return self

  def _apply(self, x):
    return (x - self.mu) @ self.kernel


class StandardNormalization(_Calibration):
  """Per-dimension standardisation "SN": y = (x - mu) / sqrt(var + EPS) (population variance)."""
  _ARRAYS = ("mu", "scale")
  name = "sn"

  def _shapes(self, d):
    return {"mu": (d,), "scale": (d,)}

  def __init__(self):
    self.mu = self.scale = None  # [D], [D]

  @property
  def dim(self):
    return self.mu.shape[0]

  def _fit(self, x, shared):
    self.mu, self.scale = shared.get("sn", lambda: (x.mean(axis=0), np.sqrt(x.var(axis=0) + EPS)))

  def _apply(self, x):
    return (x - self.mu) / self.scale


class Natsv(_Calibration):
  """All-but-the-top: remove the mean and project out the top-k principal directions.

  Args:
    k: int >= 1, number of principal directions nulled (the paper tunes 1..20 on STS-B dev).
  """
  _ARRAYS = ("mu", "directions")

  def __init__(self, k):
    if not isinstance(k, (int, np.integer)) or k < 1:
      raise ValueError(f"natsv k must be a positive integer, got {k!r}")
    self.k = int(k)
    self.mu = self.directions = None  # [D], [D, k]

  @property
  def name(self):
    return f"natsv-{self.k}"

  def _shapes(self, d):
    return {"mu": (d,), "directions": (d, self.k)}

  @property
  def dim(self):
    return self.mu.shape[0]

  def _fit(self, x, shared):
    if self.k > min(x.shape):
      raise ValueError(f"{self.name}: k={self.k} > min(N, D)={min(x.shape)}")
    self.mu, vectors = shared.get("natsv", lambda: decompositions.scatter_eigenvectors(x))
    self.directions = vectors[:, ::-1][:, :self.k]

  def _apply(self, x):
    centered = x - self.mu
    return centered - (centered @ self.directions) @ self.directions.T


class SnNatsv(_Calibration):
  """SN followed by NATSV(k) fitted on the standardised vectors."""
  _ARRAYS = ("mu", "scale", "directions")

  def __init__(self, k):
    self.sn = StandardNormalization()
    self.natsv = Natsv(k)
    self.k = self.natsv.k

  @property
  def name(self):
    return f"sn+natsv-{self.k}"

  def _shapes(self, d):
    return {"mu": (d,), "scale": (d,), "natsv_mu": (d,), "directions": (d, self.k)}

  @property
  def dim(self):
    return self.sn.dim

  @property
  def fitted(self):
    return self.sn.fitted and self.natsv.fitted

  def _fit(self, x, shared):
    self.sn.fit(x, shared)
    sn_x, sn_shared = shared.get("sn output", lambda: (self.sn.transform(x), decompositions.Shared()))
    self.natsv.fit(sn_x, sn_shared)

  def _apply(self, x):
    return self.natsv.transform(self.sn.transform(x))

  def _state(self):
    return {"mu": self.sn.mu, "scale": self.sn.scale, "natsv_mu": self.natsv.mu,
            "directions": self.natsv.directions}

  def _set_state(self, state):
    self.sn.mu, self.sn.scale = state["mu"], state["scale"]
    self.natsv.mu, self.natsv.directions = state["natsv_mu"], state["directions"]


def make_baseline(name):
  """Builds an unfitted calibration from its method name.

  Args:
    name: str, one of "whitening", "whitening-K", "sn", "natsv-K", "sn+natsv-K" (e.g. "whitening-256",
      "natsv-7", "sn+natsv-7").

  Returns:
    Whitening, StandardNormalization, Natsv or SnNatsv; its `.name` equals `name`.
  """
  if name == "whitening":
    return Whitening()
  if name == "sn":
    return StandardNormalization()
  match = re.fullmatch(r"(whitening|natsv|sn\+natsv)-([1-9]\d*)", name) if isinstance(name, str) else None
  if not match:
    raise ValueError(f"unknown baseline {name!r}; allowed forms: {FORMS}")
  cls = {"whitening": Whitening, "natsv": Natsv, "sn+natsv": SnNatsv}[match.group(1)]
  return cls(int(match.group(2)))


def check_name(name):
  """Raises ValueError, naming the allowed FORMS, unless `name` is a baseline name."""
  make_baseline(name)


def load_baseline(path):
  """Restores any calibration saved with `save(path)`, checked before it is used.

  Raises:
    errors.UserError naming `path`: not an npz written by `save` (unreadable, pickled objects, an unknown name),
    other arrays than the method's, shapes that do not fit together, or values that are not finite.
  """
  try:
    with np.load(path, allow_pickle=False) as data:
      name = str(data["name"])
      state = {k: data[k] for k in data.files if k != "name"}
    obj = make_baseline(name)
  except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as e:
    raise errors.UserError(f"not a baseline file written by save ({type(e).__name__}: {str(e)[:200]})", path) from e
  mu = state.get("mu")
  d = mu.shape[0] if isinstance(mu, np.ndarray) and mu.ndim == 1 else -1
  want = obj._shapes(d)  # pylint: disable=protected-access
  if set(state) != set(want):
    raise errors.UserError(f"{name} needs the arrays {sorted(want)}, the file holds {sorted(state)}", path)
  for key, shape in want.items():
    value = state[key]
    if d < 1 or value.shape != shape or value.dtype.kind != "f":
      raise errors.UserError(f"{name}: array {key} is {value.dtype} {list(value.shape)}, expected float "
                             f"{list(shape) if d >= 1 else '[D >= 1]'}", path)
    if not np.isfinite(value).all() or (key == "scale" and (value <= 0).any()):
      raise errors.UserError(f"{name}: array {key} holds NaN or inf{' or a scale <= 0' if key == 'scale' else ''}",
                             path)
  obj._set_state({k: v.astype(np.float64) for k, v in state.items()})  # pylint: disable=protected-access
  return obj
