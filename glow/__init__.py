"""A Glow normalizing flow over `[batch, dim]` vectors, as BERT-flow uses it."""
from glow.config import DEFAULT_CONFIG
from glow.config import GlowConfig
from glow.model import Glow
from glow.optimization import AdamWeightDecay

__all__ = ["AdamWeightDecay", "DEFAULT_CONFIG", "Glow", "GlowConfig"]
