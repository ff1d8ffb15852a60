"""A Glow normalizing flow over `[batch, dim]` vectors, as BERT-flow uses it.

Its names are imported on first use (PEP 562): all but the config load TensorFlow, and a command reads its flags,
and answers --help, without it.
"""
import importlib

# Public name -> its module, imported on first use (glow.config alone loads no TensorFlow).
_PUBLIC = {"DEFAULT_CONFIG": "glow.config", "GlowConfig": "glow.config", "transform": "glow.inference", "Glow": "glow.model", "AdamWeightDecay": "glow.optimization",
         "WarmupLinearDecay": "glow.optimization", "create_optimizer": "glow.optimization",
         "ReusableTrainStep": "glow.training", "loss_and_gradients": "glow.training",
         "make_train_step": "glow.training", "nll_loss": "glow.training"}

# Modules reached as attributes of the package (`glow.training.copy_variables`), imported on first use too.
_MODULES = ("actnorm", "couplings", "flow_layer", "inference", "model", "optimization", "permutations", "split",
            "training")

__all__ = sorted(_PUBLIC)


def __getattr__(name):
  if name in _PUBLIC:
    return getattr(importlib.import_module(_PUBLIC[name]), name)
  if name in _MODULES:
    return importlib.import_module(f"glow.{name}")
  raise AttributeError(f"module 'glow' has no attribute {name!r}")
