"""One sentence, one vector, one set of codes, whichever door: the contract every `encode` keeps.

Every door (SentenceEncoder.encode, its saved and loaded copy, ExportedEncoder.encode, the text SavedModel's
`embeddings_<precision>` outputs, the encode command, run_flow.py's calibration and export) starts from the
calibrated vector c of a sentence (float32 [D']: the calibration's output; without one, the pooled vector) and makes:

  vector = c -> unit length (the model ends with a Normalize) -> keep truncate_dim dimensions (`truncation.kept`)
             -> unit length (normalize_embeddings)
  codes  = st_layouts.quantize_embeddings(c[:, kept], precision, ranges[:, kept])   (a calibration's int8 ranges)

The codes are taken where the int8 ranges were fitted (`calibration.int8_ranges`: on c over the fit sentences),
before either unit-length step. Those steps only scale a row: the codes point where the vector points (the cosine
of the codes is the vector's, within the buckets' error) and the sign bits (binary, ubinary) are the vector's. So
a sentence's codes depend on the sentence alone: not on the batch, the door, normalize_embeddings or the process.
The alternative, ranges fitted on the unit-length vectors `encode` returns, scores no better on STS-B
(docs/quantization.md, "Where the codes are taken", with the numbers) and would need one fit per truncate_dim.

Without calibration ranges it is sentence-transformers' behaviour: the codes of the returned vectors, with the
`ranges` or `calibration_embeddings` given, else the min and max of the call's own vectors. Those codes depend on
what else is in the call; a warning says so once per process.

`SentenceCodes` holds what the rule needs besides the vectors (the model's Normalize, the default truncate_dim, a
calibration's truncation order and int8 ranges): the one small object both encoders hold and `encode` asks.

Legend: n = sentences, D' = the calibrated width, k = the kept dimensions.
"""
import dataclasses

import numpy as np
from absl import logging

from bert_flow_tf import search
from bert_flow_tf.quantization import st_layouts
from bert_flow_tf.quantization import truncation

_warned_own_ranges = []  # holds True once the call's-own-ranges warning was logged in this process


def vectors(calibrated, model_normalize, truncate_dim, order, normalize_embeddings):
  """The float32 vectors a door returns.

  Args:
    calibrated: float32 [n, D'], the calibrated vectors c.
    model_normalize: bool, unit length first (the model ends with a Normalize).
    truncate_dim: int in 1..D' or None (all).
    order: int32 [D'] or None, the calibration's truncation order (`quantization.truncation`).
    normalize_embeddings: bool, unit length after the cut.

  Returns:
    np.float32 [n, k].
  """
  x = search.normalize(calibrated) if model_normalize else calibrated
  x = x[:, truncation.kept(order, truncate_dim, x.shape[1])]
  return search.normalize(x) if normalize_embeddings else x


def kept_ranges(fitted_ranges, order, truncate_dim):
  """float32 [2, k]: a calibration's int8 ranges [2, D'] cut as `vectors` cuts (None stays None)."""
  if fitted_ranges is None:
    return None
  return fitted_ranges[:, truncation.kept(order, truncate_dim, fitted_ranges.shape[1])]


def codes(calibrated, returned, precision, truncate_dim, order, fitted_ranges, ranges=None,
          calibration_embeddings=None):
  """A door's codes in `precision` (see the module notes).

  Args:
    calibrated: float32 [n, D'], the calibrated vectors c.
    returned: float32 [n, k], `vectors(calibrated, ...)`: what the float32 door returns.
    precision: one of st_layouts.PRECISIONS.
    truncate_dim, order: as `vectors`.
    fitted_ranges: float32 [2, D'] or None, the calibration's int8 ranges.
    ranges, calibration_embeddings: sentence-transformers' arguments, over the returned vectors (they win over
      fitted_ranges): float [2, k], float [m, k].

  Returns:
    np.ndarray [n, k] (float32, int8, uint8) or [n, ceil(k / 8)] (binary, ubinary).
  """
  st_layouts.check_precision(precision)
  if precision == "float32":
    return returned
  given = ranges is not None or calibration_embeddings is not None
  if fitted_ranges is not None and not given:
    kept = truncation.kept(order, truncate_dim, calibrated.shape[1])
    return st_layouts.quantize_embeddings(calibrated[:, kept], precision,
                                          ranges=kept_ranges(fitted_ranges, order, truncate_dim))
  if precision in ("int8", "uint8") and not given:
    if len(returned) and not _warned_own_ranges:
      _warned_own_ranges.append(True)
      logging.warning("%s codes from the min and max of each call's own vectors (no calibration ranges): a "
                      "sentence's codes depend on what else is in the call; fit a calibration or pass ranges= (said "
                      "once per process)", precision)
    ranges = st_layouts.min_max(returned) if len(returned) else np.zeros([2, returned.shape[1]], np.float32)
  return st_layouts.quantize_embeddings(returned, precision, ranges=ranges,
                                        calibration_embeddings=calibration_embeddings)


@dataclasses.dataclass
class SentenceCodes:
  """The settings of `vectors` and `codes` an encoder holds, for its calibrated vectors of width D'.

  Attributes:
    normalize: bool, the model ends with a Normalize (unit length first).
    truncate_dim: int in 1..D' or None, the dimensions `encode` keeps when a call names none (None: all).
    truncation_order: int32 [D'] or None, the calibration's (`truncation`); None: the first k are kept.
    int8_ranges: float32 [2, D'] or None, the calibration's (`int8_ranges`); None: sentence-transformers' ranges.
  """
  normalize: bool = False
  truncate_dim: int = None
  truncation_order: np.ndarray = None
  int8_ranges: np.ndarray = None

  def cut(self, truncate_dim):
    """The truncate_dim a call uses: its own, else the default (int or None)."""
    return self.truncate_dim if truncate_dim is None else truncate_dim

  def vectors(self, calibrated, truncate_dim=None, normalize_embeddings=False, model_normalize=True):
    """`vectors` of calibrated float32 [n, D'] -> [n, k]; model_normalize False skips the Normalize (for cosine
    alone: it changes no cosine); truncate_dim: as `cut`."""
    return vectors(calibrated, model_normalize and self.normalize, self.cut(truncate_dim), self.truncation_order,
                   normalize_embeddings)

  def codes(self, calibrated, returned, precision, truncate_dim=None, ranges=None, calibration_embeddings=None):
    """`codes` of calibrated float32 [n, D'] and `returned` = self.vectors(calibrated, ...) [n, k]."""
    return codes(calibrated, returned, precision, self.cut(truncate_dim), self.truncation_order, self.int8_ranges,
                 ranges, calibration_embeddings)

  def kept_ranges(self, truncate_dim=None):
    """float32 [2, k] or None: the int8 ranges cut as `vectors` cuts."""
    return kept_ranges(self.int8_ranges, self.truncation_order, self.cut(truncate_dim))

  def kept_indices(self, dim, truncate_dim):
    """int32 [k]: the dimensions of the calibrated width `dim` that truncate_dim (int, or None: all; not the
    default) keeps, in order (for a graph's gather)."""
    return truncation.kept_indices(self.truncation_order, truncate_dim, dim)
