"""A Glow normalizing flow over `[batch, dim]` vectors, as BERT-flow uses it."""
import os

# Keras 2 only (tf_keras), as in bert_flow_tf/__init__.py: TensorFlow then skips importing Keras 3.
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

from glow.config import DEFAULT_CONFIG
from glow.config import GlowConfig
from glow.model import Glow
from glow.optimization import AdamWeightDecay
from glow.optimization import WarmupLinearDecay
from glow.optimization import create_optimizer
from glow.training import make_train_step
from glow.training import nll_loss

__all__ = ["AdamWeightDecay", "DEFAULT_CONFIG", "Glow", "GlowConfig", "WarmupLinearDecay", "create_optimizer",
           "make_train_step", "nll_loss"]
