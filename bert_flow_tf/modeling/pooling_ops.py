"""Pooling in-graph: an encoder's outputs -> the quantities a pooling needs and its sentence vectors (TensorFlow).

The names and what each computes are pooling.py's.
"""
import tensorflow as tf

from bert_flow_tf.modeling import pooling


def masked_mean(hidden, input_mask):
  """Token mean over non-padding positions. hidden [B, S, H], input_mask int [B, S] -> [B, H]."""
  mask = tf.expand_dims(tf.cast(input_mask, hidden.dtype), 2)                 # [B, S, 1] (no tf.newaxis: LiteRT)
  return tf.reduce_sum(hidden * mask, axis=1) / tf.reduce_sum(mask, axis=1)


def compute_quantities(names, outputs, input_mask):
  """The named quantities of a batch from an encoder's outputs (in-graph).

  Args:
    names: iterable of quantity names (see `pooling.quantities`).
    outputs: dict from BertEncoder (or a TF-Hub encoder): `encoder_outputs`, and `embedding_output` /
      `pooled_output` when a name needs them.
    input_mask: int [B, S].

  Returns:
    dict name -> float32 [B, H].
  """
  result = {}
  for name in names:
    kind, _, layer = name.partition("-")
    if kind == "pooler":
      result[name] = outputs["pooled_output"]
      continue
    layer = int(layer)
    if layer == 0 and "embedding_output" not in outputs:
      raise ValueError(f"{name} needs the embedding layer's output, which this encoder does not expose "
                       "(TF-Hub encoders keep it inside)")
    hidden = outputs["embedding_output"] if layer == 0 else outputs["encoder_outputs"][layer - 1]  # [B, S, H]
    result[name] = hidden[:, 0] if kind == "cls" else masked_mean(hidden, input_mask)
  return result


def pool(pooling_spec, outputs, input_mask):
  """Applies a PoolingSpec to an encoder's outputs, in-graph (the export and siamese training use this).

  Args:
    pooling_spec: pooling.PoolingSpec, from pooling.resolve().
    outputs: dict from BertEncoder (or a TF-Hub encoder): `encoder_outputs`, `pooled_output`, and
      `embedding_output` when layer 0 is used.
    input_mask: int [B, S].

  Returns:
    float32 [B, H] (or [B, N*H] for concat).
  """
  names = pooling.quantities(pooling_spec)
  values = compute_quantities(names, outputs, input_mask)
  return pooling.combine_parts(pooling_spec, [values[name] for name in names], lambda p: tf.concat(p, axis=-1),
                               tf.add)
