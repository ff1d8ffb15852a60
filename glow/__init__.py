"""A Glow normalizing flow over `[batch, dim]` vectors, as BERT-flow uses it."""
from glow.config import DEFAULT_CONFIG
from glow.config import GlowConfig
from glow.inference import transform
from glow.model import Glow
from glow.optimization import AdamWeightDecay
from glow.optimization import WarmupLinearDecay
from glow.optimization import create_optimizer
from glow.training import ReusableTrainStep
from glow.training import loss_and_gradients
from glow.training import make_train_step
from glow.training import nll_loss

__all__ = ["AdamWeightDecay", "DEFAULT_CONFIG", "Glow", "GlowConfig", "ReusableTrainStep", "WarmupLinearDecay",
           "create_optimizer", "loss_and_gradients", "make_train_step", "nll_loss", "transform"]
