"""Sentence embeddings from BERT's layers, by name.

Layers are numbered 0 (the embedding layer's output, after its LayerNorm) and 1..L (transformer blocks).
Every mean runs over the non-padding tokens, [CLS] and [SEP] included, as the original code did.

Honest names:
  last-avg         mean of block L.
  last2avg         mean of blocks L-1 and L (each token-averaged, then averaged).
  first-last-avg   mean of blocks 1 and L.
  emb-avg          mean of layer 0: static word + position + type embeddings, a GloVe-like space.
  emb-last-avg     mean of layer 0 and block L (what HF-based ports and SimCSE call "first-last").
  cls              BERT's pooler: tanh(dense(block L at [CLS])).
  cls-raw          block L's [CLS] vector.

The original's `--sentence_embedding_type` values, with what its code computes:
  avg                  = last-avg.
  avg-last-N           mean over i = 0..N-1 of the original's `all_encoder_layers[-i]`; index -0 is 0, the FIRST
                       block, so it is blocks {1, L, L-1, ..., L-N+2}. `avg-last-2` = first-last-avg, NOT last2avg.
  avg-last-last-N      block L-N+1 alone (`all_encoder_layers[-N]`).
  avg-last-concat-N    the same blocks as avg-last-N, concatenated (width N*H). Unreachable in the original, whose
                       prefix test for "avg-last-" catches it first; offered here with its loop's meaning.

N is the whole number written (1..L). The original reads only the name's last character (`int(name[-1])`), so
for N >= 10 it computed something else: avg-last-12 was its avg-last-2 (blocks 1 and L), avg-last-10 divided by
zero, avg-last-last-10 took `all_encoder_layers[-0]` (block 1). We compute what the name says; to reproduce such
an original run, give its last digit.

The names, their checks and resolution are here (no TensorFlow: the commands check --pooling with them); the
in-graph pooling is pooling_ops.py.
"""
import dataclasses
import re

import numpy as np


@dataclasses.dataclass(frozen=True)
class PoolingSpec:
  """A resolved pooling: which layers, and how they combine.

  Attributes:
    name: str. The name as asked for.
    layers: tuple of int. Layer numbers (0 = embeddings, 1..L = blocks).
    mode: str. "mean" (token-mean of each layer, then the mean over layers), "concat" (token-means
      concatenated), "cls-pooler" or "cls-token".
  """
  name: str
  layers: tuple
  mode: str

  def describe(self):
    what = {"mean": "mean of token-means of", "concat": "concatenated token-means of",
            "cls-pooler": "tanh pooler on [CLS] of", "cls-token": "[CLS] vector of"}[self.mode]
    return f"{self.name}: {what} layer(s) {', '.join(map(str, self.layers))} (0 = embeddings)"

  def output_dim(self, hidden_size):
    return hidden_size * (len(self.layers) if self.mode == "concat" else 1)


POOLING_NAMES = ("last-avg", "last2avg", "first-last-avg", "emb-avg", "emb-last-avg", "cls", "cls-raw", "avg",
                 "avg-last-N", "avg-last-last-N", "avg-last-concat-N")
_ORIGINAL_NAME = re.compile(r"avg-last-(last-|concat-)?(\d+)")


def _fixed(num_layers):
  """Name -> (layer numbers, mode) of the names without N, for a model of `num_layers` blocks."""
  last = num_layers
  return {
      "last-avg": ((last,), "mean"), "avg": ((last,), "mean"),
      "last2avg": ((last - 1, last), "mean"),
      "first-last-avg": ((1, last), "mean"),
      "emb-avg": ((0,), "mean"),
      "emb-last-avg": ((0, last), "mean"),
      "cls": ((last,), "cls-pooler"),
      "cls-raw": ((last,), "cls-token"),
  }


def check_name(name):
  """Returns `name` if it names a pooling for some model: N >= 1 (`resolve` checks N against the model).

  Raises:
    ValueError naming the bad value and the allowed ones.
  """
  match = _ORIGINAL_NAME.fullmatch(name)
  if match and int(match.group(2)) < 1:
    raise ValueError(f"{name}: N={int(match.group(2))} must be >= 1")
  if not match and name not in _fixed(1):
    raise ValueError(f"unknown pooling {name!r}; allowed: {', '.join(POOLING_NAMES)} (N a number)")
  return name


def _original_blocks(n, num_layers):
  """Block numbers of the original loop `all_encoder_layers[-i] for i in range(n)`."""
  if not 1 <= n <= num_layers:
    raise ValueError(f"N={n} is outside 1..{num_layers} (the model has {num_layers} blocks)")
  return tuple(1 if i == 0 else num_layers + 1 - i for i in range(n))


def resolve(name, num_layers):
  """Turns a pooling name into a PoolingSpec for a model of `num_layers` blocks.

  Raises:
    ValueError naming the bad value and the allowed ones.
  """
  check_name(name)
  fixed = _fixed(num_layers)
  if name in fixed:
    layer_ids, mode = fixed[name]
    return PoolingSpec(name, layer_ids, mode)
  kind, n = _ORIGINAL_NAME.fullmatch(name).groups()
  n = int(n)
  if kind == "last-":
    if not 1 <= n <= num_layers:
      raise ValueError(f"{name}: N={n} is outside 1..{num_layers}")
    return PoolingSpec(name, (num_layers + 1 - n,), "mean")
  return PoolingSpec(name, _original_blocks(n, num_layers), "concat" if kind else "mean")


def quantities(pooling_spec):
  """The per-sentence quantities a PoolingSpec is derived from (see `combine`), in layer order.

  Names: "mean-l" is the token mean of layer l (0 = embeddings, 1..L = blocks), "cls-l" is block l's [CLS]
  vector, "pooler" is BERT's tanh pooler output. Each is a float32 [H] vector per sentence.
  """
  if pooling_spec.mode == "cls-pooler":
    return ("pooler",)
  if pooling_spec.mode == "cls-token":
    return (f"cls-{pooling_spec.layers[-1]}",)
  return tuple(f"mean-{i}" for i in pooling_spec.layers)


def deepest_layer(names, num_layers):
  """The deepest layer (0..L) the quantity `names` need: a forward pass may stop after that block."""
  deepest = 0
  for name in names:
    kind, _, layer = name.partition("-")
    deepest = max(deepest, num_layers if kind == "pooler" else int(layer))
  return deepest


def combine_parts(pooling_spec, parts, concat, add):
  """The PoolingSpec's vector from its `quantities` values `parts` (in order), with `concat` and `add` of numpy or
  TensorFlow: the mean over layers (summed left to right, then divided), the concatenation, or the one part."""
  if pooling_spec.mode != "mean" and pooling_spec.mode != "concat":
    return parts[0]
  if pooling_spec.mode == "concat":
    return concat(parts)
  total = parts[0]
  for part in parts[1:]:
    total = add(total, part)
  return total / len(parts) if len(parts) > 1 else total


def combine(pooling_spec, values):
  """A PoolingSpec's sentence vectors from stored quantities (numpy), exactly as `pooling_ops.pool` computes them
  in-graph.

  Args:
    pooling_spec: PoolingSpec.
    values: dict quantity name -> np.float32 [N, H] (at least `quantities(pooling_spec)`).

  Returns:
    np.float32 [N, D]: the mean over layers (summed left to right, then divided), the concatenation, or the
    single quantity.
  """
  parts = [values[name] for name in quantities(pooling_spec)]
  out = combine_parts(pooling_spec, parts, lambda p: np.concatenate(p, axis=-1), np.add)
  return np.asarray(out, np.float32)
