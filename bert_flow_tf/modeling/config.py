"""BertConfig: the hyperparameters of one BERT, read from google's or HF's config JSON.

The two formats disagree on one word: google-research/bert computes the tanh approximation of GELU for
`"hidden_act": "gelu"`, while HF-format configs mean the exact erf GELU by `"gelu"` (and the tanh one by
`"gelu_new"`). Each reader maps the word to the explicit names used here: "gelu_tanh" or "gelu_erf".
"""
import dataclasses
import json
import os

from bert_flow_tf.utils import errors

ACTIVATIONS = ("gelu_tanh", "gelu_erf", "relu", "tanh")

# hidden_act word -> our explicit name, per source format.
# "gelu_erf" is no google word: save_tf1_checkpoint(allow_exact_gelu=True) writes it for exact-GELU models.
_GOOGLE_ACTIVATIONS = {"gelu": "gelu_tanh", "gelu_erf": "gelu_erf", "relu": "relu", "tanh": "tanh"}
_HF_ACTIVATIONS = {"gelu": "gelu_erf", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh",
                   "relu": "relu", "tanh": "tanh"}


@dataclasses.dataclass(frozen=True)
class BertConfig:
  """Hyperparameters of a BERT encoder.

  Attributes:
    vocab_size: int. Rows of the word-embedding table.
    hidden_size: int. H, the width of every block.
    num_hidden_layers: int. L, the number of transformer blocks.
    num_attention_heads: int. N; must divide hidden_size.
    intermediate_size: int. Width of the feed-forward layer inside each block.
    hidden_act: str. One of ACTIVATIONS ("gelu_tanh" is google's "gelu", "gelu_erf" is HF's "gelu").
    hidden_dropout_prob: float. Dropout on embeddings and block outputs (training only).
    attention_probs_dropout_prob: float. Dropout on attention probabilities (training only).
    max_position_embeddings: int. Longest sequence the position table covers.
    type_vocab_size: int. Rows of the token-type (segment) table.
    initializer_range: float. Stddev of the truncated-normal initializer of fresh weights.
    layer_norm_eps: float. Epsilon of every LayerNorm (1e-12 in BERT).
  """
  vocab_size: int
  hidden_size: int = 768
  num_hidden_layers: int = 12
  num_attention_heads: int = 12
  intermediate_size: int = 3072
  hidden_act: str = "gelu_tanh"
  hidden_dropout_prob: float = 0.1
  attention_probs_dropout_prob: float = 0.1
  max_position_embeddings: int = 512
  type_vocab_size: int = 16
  initializer_range: float = 0.02
  layer_norm_eps: float = 1e-12

  def __post_init__(self):
    if self.hidden_size % self.num_attention_heads:
      raise ValueError(f"hidden_size ({self.hidden_size}) is not a multiple of num_attention_heads "
                       f"({self.num_attention_heads})")
    if self.hidden_act not in ACTIVATIONS:
      raise ValueError(f"hidden_act {self.hidden_act!r} is not one of {ACTIVATIONS}")

  @classmethod
  def from_google_json(cls, path):
    """Reads a google-research `bert_config.json` ("gelu" means the tanh approximation)."""
    return cls._from_json(path, _GOOGLE_ACTIVATIONS)

  @classmethod
  def from_hf_json(cls, path):
    """Reads an HF-format `config.json` ("gelu" means exact erf GELU)."""
    return cls._from_json(path, _HF_ACTIVATIONS)

  @classmethod
  def _from_json(cls, path, activations):
    if not os.path.isfile(path):
      raise errors.missing_file("BERT config file not found", path)
    with open(path, encoding="utf-8") as f:
      try:
        raw = json.load(f)
      except json.JSONDecodeError as e:
        raise errors.UserError(f"not valid JSON ({e.msg})", f"{path}:{e.lineno}") from e
    act = raw.get("hidden_act", "gelu")
    if act not in activations:
      raise errors.UserError(f"hidden_act {act!r} is not one of {sorted(activations)}", path)
    fields = {f.name for f in dataclasses.fields(cls)}
    kwargs = {k: v for k, v in raw.items() if k in fields}
    kwargs["hidden_act"] = activations[act]
    if "vocab_size" not in kwargs:
      raise errors.UserError("no vocab_size", path)
    try:
      return cls(**kwargs)
    except ValueError as e:
      raise errors.UserError(str(e), path) from e

  def to_dict(self):
    return dataclasses.asdict(self)
