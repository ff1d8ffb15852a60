"""A fitted calibration of sentence vectors behind one interface: BERT-flow's Glow or a baseline (whitening, ...).

`fit(method, x)` fits one on vectors x [N, D]; each has `method`, `input_dim` (D), `dim` (its output width D'),
`transform(x, dtype=np.float32)` (float [M, D] -> [M, D']) and `save(folder)`; `load_calibration(folder)` restores
any of them exactly (the same weights, so the same outputs). The fitting itself is `calibration.flow_fitting` (the
flow) and `calibration.baselines`.

Each also has `int8_ranges`: float32 [2, D'], the int8 ranges fitted on its own output over the fit vectors
(`int8_ranges`, the gaussian rule), or None for a calibration saved before they were fitted; and
`truncation_order`: int32 [D'] or None, the dimensions `truncate_dim` keeps first (None: the first k). A flow's
output is its latent turned to the latent's principal axes over the fit vectors (`axes`, fitted with the ranges:
`truncation`), so that its first k dimensions are its top k, as a baseline's are; a flow saved before axes were
fitted has none, and keeps the truncation order it was saved with.

In a folder:
  flow        flow.json + a checkpoint of the Glow alone (`fitted_flow.load_glow` reads it)
  baselines   baseline.npz (`baselines.load_baseline`)
  both        int8_ranges.npy (`int8_ranges.save`)
  flow        principal_axes.npy (`truncation.save_axes`), or truncation_order.npy (saved before axes)

Legend: N, M = vectors, D = their width, D' = the calibrated width (D, except whitening-k: k).
"""
import os
import tempfile

import numpy as np
from absl import logging

import glow
from bert_flow_tf.calibration import baselines
from bert_flow_tf.calibration import decompositions
from bert_flow_tf.calibration import fitted_flow
from bert_flow_tf.calibration import flow_fitting
from bert_flow_tf.calibration import pair_sources
from bert_flow_tf.calibration import store_stream
from bert_flow_tf.data import pairs as pairs_lib
from bert_flow_tf.evaluation import isotropy as isotropy_lib
from bert_flow_tf.quantization import int8_ranges
from bert_flow_tf.quantization import truncation
from bert_flow_tf.utils import errors

FLOW = "flow"
BASELINE_FILE = "baseline.npz"
METHODS = f'"{FLOW}", {baselines.FORMS}'


class FlowCalibration:
  """A fitted Glow: vectors -> its latent z (all levels' latents, width D), turned to z's principal axes.

  Attributes:
    glow: the glow.Glow.
    fit_config: the calibration.flow_fitting.FlowFitConfig it was fitted with.
    summary: dict, what calibration.flow_fitting.fit_flow returned (steps, losses in bits/dim, seconds).
    axes: float32 [D, D] orthogonal, the output is z @ axes (`truncation.principal_axes`); None: z itself.
  """
  method = FLOW
  int8_ranges = None
  truncation_order = None
  axes = None

  def __init__(self, glow_model, fit_config, summary):
    self.glow, self.fit_config, self.summary = glow_model, fit_config, summary

  @property
  def dim(self):
    """D, in and out: a flow keeps the width."""
    return self.glow.dim

  input_dim = dim

  def transform(self, x, dtype=np.float32):
    """float [M, D] -> [M, D] of `dtype`, without dropout (the flow and the rotation compute in float32)."""
    z = glow.transform(self.glow, np.asarray(x, np.float32))                 # [M, D]
    return (z if self.axes is None else z @ self.axes).astype(dtype, copy=False)

  def save(self, folder):
    fitted_flow.save(self.glow, folder, self.fit_config, self.summary)
    save_ranges(self, folder)


class BaselineCalibration:
  """A fitted baseline of calibration.baselines (whitening, whitening-k, sn, natsv-k, sn+natsv-k).

  Attributes:
    baseline: the fitted baselines object (float64 statistics).
  """
  int8_ranges = None
  truncation_order = None  # their first k dimensions are their top k

  def __init__(self, baseline):
    self.baseline = baseline

  @property
  def method(self):
    return self.baseline.name

  @property
  def input_dim(self):
    return self.baseline.dim

  @property
  def dim(self):
    """D': k for whitening-k, else D."""
    return self.baseline.kernel.shape[1] if isinstance(self.baseline, baselines.Whitening) else self.baseline.dim

  def transform(self, x, dtype=np.float32):
    """float [M, D] -> [M, D'] of `dtype` (computed in float64; run_flow.py scores the float64 values)."""
    return self.baseline.transform(x).astype(dtype, copy=False)

  def affine(self):
    """(center [D], kernel [D, D'], offset [D']) float64 with transform(x) = (x - center) @ kernel + offset.

    Every baseline is affine; the kernel is read off the transform at center + each unit vector, exactly up to
    float64 rounding. center is the fit data's mean (SN's mean for sn+natsv-k).
    """
    b = self.baseline
    center = b.sn.mu if isinstance(b, baselines.SnNatsv) else b.mu
    offset = b.transform(center[None])[0]                                      # [D']
    kernel = b.transform(center[None] + np.eye(len(center))) - offset        # [D, D']
    return center, kernel, offset

  def save(self, folder):
    os.makedirs(folder, exist_ok=True)
    self.baseline.save(os.path.join(folder, BASELINE_FILE))
    save_ranges(self, folder)


def save_ranges(calibration, folder):
  """Writes what `with_ranges` fitted (int8 ranges; a flow's axes, or the order of a flow saved before them)."""
  if calibration.int8_ranges is not None:
    int8_ranges.save(folder, calibration.int8_ranges)
  if calibration.method == FLOW and calibration.axes is not None:
    truncation.save_axes(folder, calibration.axes)
  if calibration.truncation_order is not None:
    truncation.save(folder, calibration.truncation_order)


def with_ranges(calibration, x):
  """`calibration` with its int8 ranges fitted on its output over the fit vectors x (array or StoreShards): every
  fit does this, SentenceEncoder.fit's and run_flow.py's. A flow's axes are (re)fitted first, in the same pass:
  the mean and scatter of its latent z give the axes (`truncation.principal_axes`) and the ranges of z @ axes
  (each axis's mean, one width for all: `int8_ranges.one_width_ranges`)."""
  if calibration.method != FLOW:
    calibration.int8_ranges = int8_ranges.fit_ranges(int8_ranges.calibrated_blocks(calibration.transform, x))
    return calibration
  calibration.axes, calibration.truncation_order = None, None
  latent = decompositions.Scatter()
  for block in int8_ranges.calibrated_blocks(calibration.transform, x):       # z [R, D]
    latent.add(block)
  if latent.n < 2:
    raise ValueError(f"int8 ranges are fitted on N >= 2 calibrated vectors, got {latent.n}")
  calibration.axes, variances = truncation.principal_axes(latent)
  calibration.int8_ranges = int8_ranges.one_width_ranges(latent.mean @ calibration.axes, variances)
  return calibration


def fit(method, x, fit_config=None):
  """Fits a calibration on sentence vectors.

  The flow is fitted by maximum likelihood as `fit_config` says (by default the paper's target-setting schedule:
  constant Adam 1e-3, 1 epoch, 32 pairs of consecutive rows per step: `data.pairs.consecutive_pairs`), in a
  temporary folder. The isotropy of x is logged first, with a caution when x is already close to isotropic (a flow
  may then lower similarity quality).

  Fitted from the store (x a `store_stream.StoreShards`), the vectors are read block by block and never held
  together: the flow's pairs are consecutive rows of a shard (`store_stream.StreamedPairs`; its summary's
  provenance records "pairs": `store_stream.PAIR_SOURCE`), whitening's moments are merged block by block, and the
  isotropy is not logged. The other baselines need every vector at once and are refused.

  Args:
    method: str, one of "flow", "whitening", "whitening-K", "sn", "natsv-K", "sn+natsv-K".
    x: float array [N >= 2, D], or a `store_stream.StoreShards` (N >= 2 rows; flow and whitening only).
    fit_config: flow_fitting.FlowFitConfig or None (its defaults); the flow's settings, ignored by the baselines.

  Returns:
    FlowCalibration or BaselineCalibration.

  Raises:
    ValueError: an unknown method, x not of shape [N >= 2, D], or (flow) a Glow config that does not load or
      fewer pairs than one step.
  """
  fit_config = flow_fitting.FlowFitConfig() if fit_config is None else fit_config
  streamed = isinstance(x, store_stream.StoreShards)
  if streamed and x.rows.sum() < 2:
    raise ValueError(f"a calibration is fitted on N >= 2 sentence vectors, the store holds {x.rows.sum()} of them")
  if not streamed:
    x = _vectors(x)
  if method != FLOW:
    baseline = _baseline(method)
    if not streamed:
      return with_ranges(BaselineCalibration(baseline.fit(x)), x)
    if not isinstance(baseline, baselines.Whitening):
      raise ValueError(f"{method!r} needs every vector at once; fitted from the store: flow, whitening, whitening-K")
    return with_ranges(BaselineCalibration(store_stream.fit_whitening(x, baseline.k)), x)
  fit_config.glow_config()  # a bad config fails here, before the isotropy is computed
  if streamed:
    pairs, provenance = store_stream.StreamedPairs(x), {"pairs": store_stream.PAIR_SOURCE}
  else:
    _, line, near = isotropy_lib.describe_isotropy(x, "the flow's fit vectors")
    (logging.warning if near else logging.info)("%s", line)
    rows_a, rows_b = pairs_lib.consecutive_pairs(len(x))
    pairs, provenance = pair_sources.CachedPairs(x[rows_a], x[rows_b]), None
  with tempfile.TemporaryDirectory(prefix="bert-flow-") as tmp:
    glow_model, summary = flow_fitting.fit_flow(pairs, fit_config, tmp, provenance=provenance)
  return with_ranges(FlowCalibration(glow_model, fit_config, summary), x)


def fit_baselines(methods, x):
  """`fit(method, x)` for each baseline method on the same vectors x float [N >= 2, D], the same fitted values, but
  what several of them decompose alike computed once (`decompositions.Shared`: one SVD for whitening and
  whitening-k, one eigendecomposition for every natsv-k, one SN and one for every sn+natsv-k).

  x may also be a `store_stream.StoreShards`: each is then fitted by `fit` from the store.

  Returns:
    list of BaselineCalibration, in the order of `methods`.
  """
  if isinstance(x, store_stream.StoreShards):
    return [fit(method, x) for method in methods]
  x, shared = _vectors(x), decompositions.Shared()
  return [with_ranges(BaselineCalibration(_baseline(method).fit(x, shared)), x) for method in methods]


def _vectors(x):
  """x as float32 [N >= 2, D], else ValueError."""
  x = np.asarray(x, np.float32)
  if x.ndim != 2 or len(x) < 2:
    raise ValueError(f"a calibration is fitted on sentence vectors [N >= 2, D], got shape {x.shape}")
  return x


def _baseline(method):
  """An unfitted baselines object for `method`, else ValueError naming the allowed methods."""
  try:
    return baselines.make_baseline(method)
  except ValueError as e:
    raise ValueError(f"unknown calibration method {method!r}; allowed: {METHODS}") from e


def load_calibration(folder, flow_info=None, method=None):
  """Restores the calibration `save(folder)` wrote, checked (baselines.load_baseline, fitted_flow.load_glow). Returns
  FlowCalibration or BaselineCalibration; errors.UserError (or FileNotFoundError) naming the file for anything
  missing or wrong.

  flow_info: dict, the flow.json of a flow's folder when the caller has read it (`fitted_flow.read_info`), or None.
  method: str, the method the caller expects (its file, baseline.npz or flow.json, must be there), or None: the
    folder's own.
  """
  baseline_path = os.path.join(folder, BASELINE_FILE)
  if flow_info is None and (os.path.isfile(baseline_path) if method is None else method != FLOW):
    if not os.path.isfile(baseline_path):
      raise errors.missing_file(f"no {BASELINE_FILE}: the {method} calibration's file is missing", baseline_path)
    calibration = BaselineCalibration(baselines.load_baseline(baseline_path))
  else:
    info = fitted_flow.read_info(folder) if flow_info is None else flow_info
    try:
      fit_config = flow_fitting.FlowFitConfig(**info["fit"])
    except (TypeError, ValueError) as e:
      raise errors.UserError(f'"fit" is not a flow fit config ({str(e)[:200]})',
                             os.path.join(folder, fitted_flow.INFO_FILE)) from e
    calibration = FlowCalibration(fitted_flow.load_glow(folder, info), fit_config, info)
  calibration.int8_ranges = int8_ranges.load_ranges(folder)
  if calibration.int8_ranges is not None and calibration.int8_ranges.shape[1] != calibration.dim:
    raise errors.UserError(f"int8 ranges of width {calibration.int8_ranges.shape[1]} for a calibration of width "
                           f"{calibration.dim}", os.path.join(folder, int8_ranges.RANGES_FILE))
  if calibration.method == FLOW:
    calibration.axes = truncation.load_axes(folder, calibration.dim)
    if calibration.axes is None:  # a flow saved before axes were fitted
      calibration.truncation_order = truncation.load_order(folder, calibration.dim)
  return calibration
