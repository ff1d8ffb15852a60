"""FlowFitConfig: how a flow is fitted (the paper's target and NLI settings), checked when made, and the fit modes.

Apart from flow_fitting.py (the loop), so that the commands read and check their flags without TensorFlow.
"""
import dataclasses

import glow
from bert_flow_tf.data import order as order_lib
from bert_flow_tf.utils import checks

MODES = ("cached", "faithful")


@dataclasses.dataclass(frozen=True)
class FlowFitConfig:
  """How to fit the flow: the one owner of these settings and their defaults (the paper's target setting;
  NLI_FIT_CONFIG is its NLI setting). SentenceEncoder.fit, calibrator.fit and run_flow.py's flags all fill this;
  override with dataclasses.replace. Each field's range is checked when the config is made (ValueError naming the
  field).

  Attributes:
    flow_model_config: str, a Glow config name (glow/configs/, e.g. "config_l3_d3_w32", the original's default) or
      a JSON path; `glow_config()` reads it.
    init: str, ActNorm init: "original" (the original's effective init) or "ddi" (data-dependent, on the first
      batch).
    learning_rate: float > 0, Adam's constant step size (1e-3 in the paper's target setting, 2e-5 in its NLI
      setting).
    num_train_epochs: float > 0, passes over the pairs (1.0 target, 0.15 NLI).
    batch_size: int >= 1, sentence pairs per step (the loss covers 2x as many vectors).
    seed: int >= 0, seeds the flow's init and the batch order.
    weight_decay_rate: float >= 0, AdamWeightDecay's decoupled decay (the original's 0.01).
    save_checkpoints_steps: int >= 1, checkpoint period in steps (and at the end).
    log_every_steps: int >= 1, TensorBoard and log period in steps.
  """
  flow_model_config: str = glow.DEFAULT_CONFIG
  init: str = dataclasses.field(default="original", metadata=checks.checked(checks.one_of(glow.config.ACTNORM_INITS)))
  learning_rate: float = dataclasses.field(default=1e-3, metadata=checks.checked(checks.positive_number))
  num_train_epochs: float = dataclasses.field(default=1.0, metadata=checks.checked(checks.positive_number))
  batch_size: int = dataclasses.field(default=32, metadata=checks.checked(checks.positive_int))
  seed: int = dataclasses.field(default=1234, metadata=checks.checked(checks.non_negative_int))
  weight_decay_rate: float = dataclasses.field(default=glow.config.DEFAULT_WEIGHT_DECAY_RATE,
                                               metadata=checks.checked(checks.non_negative_number))
  save_checkpoints_steps: int = dataclasses.field(default=100, metadata=checks.checked(checks.positive_int))
  log_every_steps: int = dataclasses.field(default=10, metadata=checks.checked(checks.positive_int))

  def __post_init__(self):
    checks.check_fields(self)

  def glow_config(self):
    """The glow.GlowConfig that flow_model_config names. Raises ValueError naming it when it is missing or not a
    Glow config's JSON."""
    return load_glow_config("flow_model_config", self.flow_model_config)

  def num_steps(self, num_pairs, what="the fit set"):
    """int(num_pairs / batch_size * num_train_epochs) >= 1. Raises ValueError when `what` (num_pairs pairs) is
    less than one step."""
    steps = order_lib.num_train_steps(num_pairs, self.batch_size, self.num_train_epochs)
    if steps < 1:
      raise ValueError(f"{what} has {num_pairs} sentence pairs, less than one step of batch_size {self.batch_size} "
                       f"x num_train_epochs {self.num_train_epochs}")
    return steps


NLI_FIT_CONFIG = FlowFitConfig(learning_rate=2e-5, num_train_epochs=0.15)  # the paper's NLI setting


def load_glow_config(name, value):
  """glow.GlowConfig.load(value), its errors (missing, not JSON, unknown fields) as one ValueError naming `name`
  (a check of utils/checks.py's kind: name None leaves the name out)."""
  try:
    return glow.GlowConfig.load(value)
  except (OSError, ValueError) as e:
    raise ValueError(f"{name + ' ' if name else ''}{value!r} is not a Glow config: {e}") from e
