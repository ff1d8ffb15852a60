"""The one table of weight names: each BertEncoder variable, its google TF1 checkpoint name, its HF key.

HF (PyTorch) dense weights are stored [out, in]; ours and TF1's are [in, out], so HF dense kernels are
transposed on load. Embedding tables and LayerNorm vectors have the same layout everywhere.
"""
import dataclasses

import tensorflow as tf

from bert_flow_tf.utils import errors


@dataclasses.dataclass(frozen=True)
class WeightName:
  """One variable of a BertEncoder and where each format keeps it."""
  variable: tf.Variable
  tf1: str           # e.g. "bert/encoder/layer_0/attention/self/query/kernel"
  hf: str            # e.g. "encoder.layer.0.attention.self.query.weight"
  hf_transposed: bool


def _dense(layer, tf1, hf):
  return [WeightName(layer.kernel, f"{tf1}/kernel", f"{hf}.weight", True),
          WeightName(layer.bias, f"{tf1}/bias", f"{hf}.bias", False)]


def _layer_norm(layer, tf1, hf):
  return [WeightName(layer.gamma, f"{tf1}/gamma", f"{hf}.weight", False),
          WeightName(layer.beta, f"{tf1}/beta", f"{hf}.bias", False)]


def weight_names(encoder):
  """Lists every variable of a built BertEncoder with its TF1 and HF names, in a stable order."""
  emb = encoder.embeddings
  names = [
      WeightName(emb.word_embeddings, "bert/embeddings/word_embeddings",
                 "embeddings.word_embeddings.weight", False),
      WeightName(emb.token_type_embeddings, "bert/embeddings/token_type_embeddings",
                 "embeddings.token_type_embeddings.weight", False),
      WeightName(emb.position_embeddings, "bert/embeddings/position_embeddings",
                 "embeddings.position_embeddings.weight", False),
  ]
  names += _layer_norm(emb.layer_norm, "bert/embeddings/LayerNorm", "embeddings.LayerNorm")
  for i, block in enumerate(encoder.blocks):
    tf1, hf = f"bert/encoder/layer_{i}", f"encoder.layer.{i}"
    names += _dense(block.attention.query, f"{tf1}/attention/self/query", f"{hf}.attention.self.query")
    names += _dense(block.attention.key, f"{tf1}/attention/self/key", f"{hf}.attention.self.key")
    names += _dense(block.attention.value, f"{tf1}/attention/self/value", f"{hf}.attention.self.value")
    names += _dense(block.attention_output, f"{tf1}/attention/output/dense", f"{hf}.attention.output.dense")
    names += _layer_norm(block.attention_layer_norm, f"{tf1}/attention/output/LayerNorm",
                         f"{hf}.attention.output.LayerNorm")
    names += _dense(block.intermediate, f"{tf1}/intermediate/dense", f"{hf}.intermediate.dense")
    names += _dense(block.output_dense, f"{tf1}/output/dense", f"{hf}.output.dense")
    names += _layer_norm(block.output_layer_norm, f"{tf1}/output/LayerNorm", f"{hf}.output.LayerNorm")
  names += _dense(encoder.pooler, "bert/pooler/dense", "pooler.dense")
  return names


def assign_strict(targets, tensors, source, what="BERT weights", ignore=()):
  """Fills every target from `tensors` and uses every tensor; fails listing every gap (the one strict loader).

  Args:
    targets: list of (key, fill): key, the name in `tensors`; fill, a function of the stored array that assigns
      it and returns None, or returns why it does not fit (str, e.g. "stored (2, 3), model (3, 2)").
    tensors: dict name -> numpy array, everything the source holds.
    source: str, the file or directory named in the error.
    what: str, what is loaded, for the error ("BERT weights", "the Glow").
    ignore: names in `tensors` that may stay unused (e.g. an MLM head), as prefixes.

  Raises:
    errors.UserError naming `source`, every missing tensor, every misfit and every unused tensor.
  """
  missing, mismatched, used = [], [], set()
  for key, fill in targets:
    if key not in tensors:
      missing.append(key)
      continue
    used.add(key)
    why = fill(tensors[key])
    if why:
      mismatched.append(f"{key}: {why}")
  unused = sorted(k for k in tensors if k not in used and not k.startswith(tuple(ignore)))
  problems = []
  if missing:
    problems.append(f"missing {len(missing)} tensor(s): {', '.join(missing)}")
  if mismatched:
    problems.append(f"shape mismatch: {'; '.join(mismatched)}")
  if unused:
    problems.append(f"{len(unused)} unused tensor(s): {', '.join(unused)}")
  if problems:
    raise errors.UserError(f"cannot load {what}: " + " | ".join(problems), str(source))


def fill_exact(variable, transpose=False):
  """A `fill` for `assign_strict`: assigns the stored array (transposed first if asked) when its shape is the
  variable's."""
  def fill(value):
    value = value.T if transpose else value
    if tuple(value.shape) != tuple(variable.shape):
      return f"stored {tuple(value.shape)}, model {tuple(variable.shape)}"
    variable.assign(value)
    return None
  return fill
