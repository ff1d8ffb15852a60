"""Reads the Glow of an original BERT-flow TF1 checkpoint (`bert/flow/...`) into a `glow.Glow`.

The original's `run_siamese.py --flow=1` builds its Glow (`flow/glow_1x1.py`, `flow/glow_ops_1x1.py`) under the
variable scope `bert/flow` on vectors reshaped to [B, 1, 1, D], so its 1x1 convs are our dense kernels and its
per-channel vectors carry leading 1s. The name map, for level l, step k and coupling c ("additive" / "affine"):

  bert/flow/revnet_{l}/revnet_step_{k}/
    actnorm/actnorm_center/b               [1, 1, 1, D]      -> ActNorm.b [D]
    actnorm/actnorm_scale/logs             [1, 1, 1, D]      -> ActNorm.logs [D]
    invertible/w                           [D, D]            the fixed reversal ("permutation": true): checked to
                                                               be the anti-diagonal, nothing stored
    invertible/{P, L, U} [D, D], invertible/{sign_S, log_S} [D] -> InvertibleDense1x1 ("permutation": false)
    {c}/nn/conv_block/1_1/W                [1, 1, D/2, W]    -> CouplingNN.w1 [D/2, W]
    {c}/nn/conv_block/1_1/actnorm/...      [1, 1, 1, W]      -> CouplingNN.actnorm1 (b, logs as above)
    {c}/nn/conv_block/1_2/W, .../actnorm   [1, 1, W, W]      -> CouplingNN.w2, actnorm2
    {c}/nn/zeros/W [1, 1, W, O], zeros/b [1, 1, 1, O], zeros/logs [1, O] -> w_out, b_out, logs_out
                                                               (O = D/2 additive, D affine)

Splits and the top prior have no variables. The config is read off the names and shapes (levels, depth, coupling,
width, permutation, D); the coupling dropout is not stored and defaults to 0 (it only acts in training).
"""
import re

import numpy as np
import tensorflow as tf
from absl import logging

from glow.config import GlowConfig
from glow.model import Glow

from bert_flow_tf.loaders import names as names_lib

FLOW_PREFIX = "bert/flow/"
_STEP_RE = re.compile(r"^bert/flow/revnet_(\d+)/revnet_step_(\d+)/")


def _step_prefix(level, depth):
  return f"{FLOW_PREFIX}revnet_{level}/revnet_step_{depth}/"


def _actnorm_names(actnorm, prefix):
  return [(f"{prefix}actnorm/actnorm_center/b", actnorm.b), (f"{prefix}actnorm/actnorm_scale/logs", actnorm.logs)]


def flow_names(glow_model):
  """(original name, variable) for every variable of `glow_model` that the original checkpoint stores, in order."""
  names = []
  coupling = glow_model.config.coupling
  for level, steps in enumerate(glow_model.levels):
    for depth, step in enumerate(steps):
      prefix = _step_prefix(level, depth)
      actnorm, permute, couple = step.ops
      names += _actnorm_names(actnorm, prefix)
      if not glow_model.config.permutation:
        names += [(f"{prefix}invertible/{k}", v) for k, v in (
            ("P", permute.p), ("L", permute.l), ("U", permute.u), ("sign_S", permute.sign_s),
            ("log_S", permute.log_s))]
      nn = couple.nn
      net = f"{prefix}{coupling}/nn/"
      names += [(f"{net}conv_block/1_1/W", nn.w1)] + _actnorm_names(nn.actnorm1, f"{net}conv_block/1_1/")
      names += [(f"{net}conv_block/1_2/W", nn.w2)] + _actnorm_names(nn.actnorm2, f"{net}conv_block/1_2/")
      names += [(f"{net}zeros/W", nn.w_out), (f"{net}zeros/b", nn.b_out), (f"{net}zeros/logs", nn.logs_out)]
  return names


def reversal_names(glow_model):
  """The original names of the fixed reversal matrices `glow_model` implies (none for an LU 1x1 config)."""
  if not glow_model.config.permutation:
    return []
  return [f"{_step_prefix(level, depth)}invertible/w"
          for level, steps in enumerate(glow_model.levels) for depth in range(len(steps))]


def infer_config(shapes):
  """(GlowConfig, D) from the shapes of a checkpoint's `bert/flow/` tensors (name -> shape).

  Raises:
    ValueError when the names do not form the original's layout (no revnet_0/revnet_step_0, mixed couplings).
  """
  steps = {tuple(map(int, m.groups())) for m in map(_STEP_RE.match, shapes) if m}
  if (0, 0) not in steps:
    raise ValueError(f"no {FLOW_PREFIX}revnet_0/revnet_step_0/ tensors: not an original BERT-flow Glow "
                     f"(got {sorted(shapes)[:5]}...)")
  n_levels = 1 + max(level for level, _ in steps)
  depth = 1 + max(d for level, d in steps if level == 0)
  first = _step_prefix(0, 0)
  couplings = {name[len(first):].split("/")[0] for name in shapes if name.startswith(first)} & {
      "additive", "affine"}
  if len(couplings) != 1:
    raise ValueError(f"{first}: expected one coupling scope, 'additive' or 'affine'; found {sorted(couplings)}")
  coupling = couplings.pop()
  width = int(shapes[f"{first}{coupling}/nn/conv_block/1_1/W"][-1])
  dim = int(shapes[f"{first}actnorm/actnorm_center/b"][-1])
  config = GlowConfig(coupling=coupling, coupling_width=width, n_levels=n_levels, depth=depth,
                      permutation=f"{first}invertible/w" in shapes)
  return config, dim


def _structure(config):
  return {k: getattr(config, k) for k in ("coupling", "coupling_width", "n_levels", "depth", "permutation")}


def _same_but_leading_ones(stored, model):
  """Whether `stored` is `model` with leading 1s ([1, 1, 1, D] vs [D], [1, 1, D/2, W] vs [D/2, W])."""
  stored, model = tuple(stored), tuple(model)
  extra = len(stored) - len(model)
  return extra >= 0 and stored[extra:] == model and all(d == 1 for d in stored[:extra])


def _fill_with_leading_ones(variable):
  """An `assign_strict` fill: the stored array, with its leading 1s dropped, into `variable`."""
  def fill(value):
    if not _same_but_leading_ones(value.shape, variable.shape):
      return f"stored {tuple(value.shape)}, model {tuple(variable.shape)}"
    variable.assign(value.reshape(variable.shape))
    return None
  return fill


def _check_reversal(value):
  """An `assign_strict` fill for the fixed reversal: nothing is stored, the matrix must be the anti-diagonal."""
  if value.ndim != 2 or not np.array_equal(value, np.eye(len(value), dtype=value.dtype)[::-1]):
    return "not the reversal (anti-diagonal) matrix the original's permutation=true builds"
  return None


def _is_flow_weight(name):
  return name.startswith(FLOW_PREFIX) and not name.endswith(("/adam_m", "/adam_v"))


def load_tf1_flow(init_checkpoint, config=None):
  """Builds the Glow stored in an original BERT-flow checkpoint, strictly.

  Args:
    init_checkpoint: str, the checkpoint prefix (e.g. ".../model.ckpt-1000").
    config: None (infer it from the stored variables), or a Glow config name / JSON path / GlowConfig, which must
      agree with the stored structure (its coupling_dropout is kept).

  Returns:
    glow.Glow over D dims with the stored weights (`initialized` True).

  Raises:
    FileNotFoundError naming the missing `.index` file.
    ValueError: no `bert/flow/` tensors; a config that disagrees with them (both listed).
    errors.UserError naming the checkpoint: every missing tensor, shape mismatch (both shapes), unused
      `bert/flow/` tensor, and a reversal matrix that is not the anti-diagonal.
  """
  if not tf.io.gfile.exists(init_checkpoint + ".index"):
    raise FileNotFoundError(f"TF1 checkpoint not found: {init_checkpoint}.index")
  reader = tf.train.load_checkpoint(init_checkpoint)
  shapes = {n: s for n, s in reader.get_variable_to_shape_map().items() if _is_flow_weight(n)}
  if not shapes:
    raise ValueError(f"{init_checkpoint}: no {FLOW_PREFIX} tensors (not a checkpoint of the original "
                     "run_siamese.py with --flow=1)")
  stored, dim = infer_config(shapes)
  if config is None:
    config = stored
  else:
    config = config if isinstance(config, GlowConfig) else GlowConfig.load(config)
    if _structure(config) != _structure(stored):
      raise ValueError(f"--flow_model_config {_structure(config)} disagrees with the Glow stored in "
                       f"{init_checkpoint}: {_structure(stored)}")
  glow_model = Glow(config, dim, init="original")
  tensors = {name: reader.get_tensor(name) for name in shapes}
  targets = [(name, _fill_with_leading_ones(variable)) for name, variable in flow_names(glow_model)]
  targets += [(name, _check_reversal) for name in reversal_names(glow_model)]
  names_lib.assign_strict(targets, tensors, source=init_checkpoint, what="the Glow")
  logging.info("loaded the original's Glow from %s: %d tensors, D=%d, %s", init_checkpoint, len(tensors), dim,
               _structure(config))
  return glow_model
