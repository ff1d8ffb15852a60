"""Glow: BERT-flow's multi-level normalizing flow over [B, D] vectors (the original's `glow_1x1.py`).

Level l (0 <= l < L) runs `depth` steps of [ActNorm, permutation, coupling] on width D / 2^l.
Between levels a Split factors out the second half under a standard-normal prior. The output
latent is the original's `tf.concat(eps + [z_top])`:
  z = [z_0 (D/2), z_1 (D/4), ..., z_{L-2}, z_top (D / 2^(L-1))], the input's width D,
with a standard-normal top prior. Since z is a rearrangement of the split-off parts,
log p(x) = log N(z; 0, I) + logdet, and the loss is the original's bits per dimension,
-(logdet + log N(z; 0, I)) / (D ln 2).

Legend: B batch, D vector width, L levels.
"""
import math

import tensorflow as tf
import tf_keras as keras
from absl import logging

from glow import actnorm
from glow import couplings
from glow import flow_layer
from glow import permutations
from glow import split as split_lib
from glow.config import GlowConfig

NLL_UNITS = ("bits", "nats")


class FlowStep(flow_layer.FlowLayer):
  """One step of flow: ActNorm, permutation (reversal or LU 1x1), coupling; the inverse runs backwards.

  Args:
    config: GlowConfig. Reads coupling, coupling_width, coupling_dropout, permutation.
    init: str. ActNorm init, "original" or "ddi".
    seed: int or None. Seed of the LU 1x1's random rotation (unused for the reversal).
  """

  def __init__(self, config, init="original", seed=None, **kwargs):
    super().__init__(**kwargs)
    self.config = config
    self.init = init
    self.seed = seed

  def build(self, input_shape):
    config = self.config
    norm = actnorm.ActNorm(init=self.init, name="actnorm")
    if config.permutation:
      permute = permutations.ReversePermutation(name="reverse")
    else:
      permute = permutations.InvertibleDense1x1(seed=self.seed, name="invertible")
    coupling_cls = couplings.AdditiveCoupling if config.coupling == "additive" else couplings.AffineCoupling
    coupling = coupling_cls(config.coupling_width, config.coupling_dropout, self.init,
                            name=config.coupling)
    self.ops = [norm, permute, coupling]
    for op in self.ops:
      flow_layer.build_child(op, input_shape)
    super().build(input_shape)

  def call(self, x, training=False):
    logdet = tf.zeros(tf.shape(x)[:1], x.dtype)
    for op in self.ops:
      x, op_logdet = op(x, training=training)
      logdet += op_logdet
    return x, logdet

  def inverse(self, y):
    logdet = tf.zeros(tf.shape(y)[:1], y.dtype)
    for op in reversed(self.ops):
      y, op_logdet = op.inverse(y)
      logdet += op_logdet
    return y, logdet

  def data_init(self, x):
    logdet = tf.zeros(tf.shape(x)[:1], x.dtype)
    for op in self.ops:
      x, op_logdet = op.data_init(x)
      logdet += op_logdet
    return x, logdet

  def get_config(self):
    return dict(super().get_config(), config=self.config.to_dict(), init=self.init, seed=self.seed)

  @classmethod
  def from_config(cls, config):
    config = dict(config)
    return cls(GlowConfig.from_dict(config.pop("config")), **config)


class Glow(keras.layers.Layer):
  """BERT-flow's Glow: x [B, D] -> (z [B, D], logdet [B]), exactly invertible.

  Example:
    flow = Glow.from_config("config_l2_d3_w32", dim=768)
    z, logdet = flow(x)          # x float32 [B, 768]
    x_back = flow.inverse(z)     # [B, 768]
    loss = tf.reduce_mean(flow.nll(x, training=True))   # bits/dim

  Variables are created in the constructor, so a `tf.train.Checkpoint(flow=flow)` restores
  into them at once. `initialized` (a saved bool variable) records whether the ActNorms hold
  their initial values: True from the start for init="original", set by `data_init` for "ddi".

  Args:
    config: GlowConfig.
    dim: int. Vector width D; must be divisible by 2**n_levels (each level's coupling halves
      its width and each split halves it again).
    init: str. "original": ActNorm variables drawn from TF1's default glorot-uniform init, as the
      original effectively ran (its data-dependent init never ran). "ddi": ActNorms start as the
      identity and must be set from data by `data_init(x)` before training.
    seed: int or None. Base seed of the LU 1x1 rotations (step k uses seed + k).
  """

  def __init__(self, config, dim, init="original", seed=None, **kwargs):
    kwargs.setdefault("name", "glow")
    super().__init__(**kwargs)
    if init not in actnorm.ACTNORM_INITS:
      raise ValueError(f"init={init!r} is not supported; allowed: {list(actnorm.ACTNORM_INITS)}")
    if dim < 2 ** config.n_levels or dim % 2 ** config.n_levels:
      raise ValueError(
          f"dim={dim} cannot be halved evenly at every one of n_levels={config.n_levels} levels: "
          f"it must be a positive multiple of 2**n_levels={2 ** config.n_levels}")
    self.config = config
    self.dim = dim
    self.init = init
    self.seed = seed
    self.build(tf.TensorShape([None, dim]))

  @classmethod
  def from_config(cls, config, dim=None, init="original", seed=None, **kwargs):
    """Builds a Glow from a config name, a JSON path, a GlowConfig, or a `get_config()` dict.

    Args:
      config: str / os.PathLike (a shipped name such as "config_l2_d3_w32", or a JSON file with
        the original's fields), a GlowConfig, or the dict from `get_config()` (Keras
        deserialisation; then the other arguments come from it).
      dim: int. Vector width D (required unless config is a `get_config()` dict).
      init: str. "original" or "ddi".
      seed: int or None. Base seed of the LU 1x1 rotations.
      **kwargs: passed to the Layer (e.g. name).

    Returns:
      The Glow, with its variables created.
    """
    if isinstance(config, dict):
      config = dict(config)
      return cls(GlowConfig.from_dict(config.pop("config")), **config)
    if not isinstance(config, GlowConfig):
      config = GlowConfig.load(config)
    if dim is None:
      raise ValueError("Glow.from_config needs dim, the vector width D")
    return cls(config, dim, init=init, seed=seed, **kwargs)

  def build(self, input_shape):
    if self.built:
      return
    self.initialized = self.add_weight(
        "initialized", shape=[], dtype=tf.bool, trainable=False,
        initializer=keras.initializers.Constant(self.init == "original"))
    self.levels = []  # [L] lists of FlowStep
    self.splits = []  # [L - 1] Split
    width = self.dim
    with tf.name_scope(self.name):
      for level in range(self.config.n_levels):
        steps = []
        for depth in range(self.config.depth):
          index = level * self.config.depth + depth
          seed = None if self.seed is None else self.seed + index
          step = FlowStep(self.config, self.init, seed, name=f"level_{level}_step_{depth}")
          flow_layer.build_child(step, [None, width])
          steps.append(step)
        self.levels.append(steps)
        if level < self.config.n_levels - 1:
          split = split_lib.Split(name=f"split_{level}")
          flow_layer.build_child(split, [None, width])
          self.splits.append(split)
          width //= 2
    super().build(input_shape)

  def _encode(self, x, step_fn):
    """Runs the levels forward with step_fn(step, x) -> (x, logdet); returns z [B, D], logdet [B]."""
    logdet = tf.zeros(tf.shape(x)[:1], x.dtype)
    latents = []
    for level, steps in enumerate(self.levels):
      for step in steps:
        x, step_logdet = step_fn(step, x)
        logdet += step_logdet
      if level < len(self.splits):
        x, z = self.splits[level](x)
        latents.append(z)
    return tf.concat(latents + [x], axis=-1), logdet

  def call(self, x, training=False):
    """Maps x [B, D] to z [B, D] (concatenated latents) and logdet [B] = log|det dz/dx|."""
    return self._encode(x, lambda step, h: step(h, training=training))

  def inverse(self, z):
    """Maps latents z [B, D] (e.g. N(0, I) draws) back to x [B, D]."""
    sizes = [self.dim // 2 ** (level + 1) for level in range(len(self.splits))]
    pieces = tf.split(z, sizes + [self.dim // 2 ** len(self.splits)], axis=-1)
    x = pieces[-1]
    for level in reversed(range(len(self.levels))):
      if level < len(self.splits):
        x = self.splits[level].inverse(x, pieces[level])
      for step in reversed(self.levels[level]):
        x, _ = step.inverse(x)
    return x

  def nll(self, x, training=False, unit="bits"):
    """Negative log-likelihood per example and per dimension, the original's objective.

    Args:
      x: float32 [B, D].
      training: bool. Enables coupling dropout.
      unit: str. "bits" (bits/dim, the original's loss) or "nats" (nats/dim).

    Returns:
      float32 [B]: -(logdet + log N(z; 0, I)) / (D ln 2) for bits, without the ln 2 for nats.
    """
    z, logdet = self(x, training=training)
    return self.latent_nll(z, logdet, unit)

  def latent_nll(self, z, logdet, unit="bits"):
    """`nll` from a forward pass already run: z [B, D] and logdet [B] -> float32 [B] per dimension."""
    if unit not in NLL_UNITS:
      raise ValueError(f"unit={unit!r} is not supported; allowed: {list(NLL_UNITS)}")
    per_dim = -(split_lib.standard_normal_logp(z) + logdet) / self.dim
    return per_dim / math.log(2.0) if unit == "bits" else per_dim

  def data_init(self, x):
    """Data-dependent init (DDI) of every ActNorm from the batch x [B, D], once.

    Runs eagerly. Does nothing (and returns False) when `initialized` is already True: after a
    previous call, after restoring an initialized checkpoint, or for init="original". Logs one
    warning if some ActNorm saw near-constant dimensions (left unscaled; see ActNorm).

    Returns:
      bool. Whether the init ran.
    """
    if not tf.executing_eagerly():
      raise ValueError("Glow.data_init must run eagerly (outside tf.function)")
    if bool(self.initialized.numpy()):
      logging.info("Glow %s: ActNorms already initialized; data_init skipped.", self.name)
      return False
    x = tf.convert_to_tensor(x, tf.float32)
    self._encode(x, lambda step, h: step.data_init(h))
    self.initialized.assign(True)
    # Every ActNorm is named "actnorm" inside its step, so they are listed in order, not keyed by name.
    degenerate = [(an.name, an.degenerate_dims) for an in self._actnorms() if an.degenerate_dims.size]
    if degenerate:
      first = degenerate[0]
      logging.warning(
          "Glow DDI: %d ActNorm(s) saw near-constant dimensions (std < 1e-3 x median std) and "
          "left them unscaled instead of scaling by ~1/(std + 1e-6); first: %s dims %s",
          len(degenerate), first[0], first[1][:20].tolist())
    return True

  def _actnorms(self):
    return [m for m in self.submodules if isinstance(m, actnorm.ActNorm)]

  def get_config(self):
    return dict(super().get_config(), config=self.config.to_dict(), dim=self.dim, init=self.init,
                seed=self.seed)
