"""The siamese model: one BERT (+ pooling, + Glow) for both sentences of a pair, the classifier, the losses.

Each sentence of a pair is encoded alone by the same BERT and pooled to u, v [B, D]; with a flow, a Glow maps the
pooled vectors to z and u, v are the flow's outputs. Objectives (the original `run_siamese.py`):
  NLI (3 classes)  softmax cross-entropy of logits = [u, v, |u - v|] W^T, W [num_labels, 3D] drawn
                   truncated-normal(0.02), no bias.
  regression       (cos(u, v) - y')^2, y' = (y - label_min) / (label_max - label_min) in [0, 1].
  num_examples     0: no label loss at all (no gradient, so no update, reaches the classifier); N > 0: only N
                   labelled pairs (drawn by seed), the rest count as zero; -1: every pair labelled. The mean
                   always runs over the whole batch, as the original.
  l2_penalty > 0   adds l2_penalty * (|u| + |v|) per pair (also with num_examples 0, as the original).
  low_dim > 0      u, v become the means of low_dim equal chunks of their D dims: [B, low_dim].
  flow loss        `glow.nll_loss` of the pooled vectors' NLLs: mean over a plus mean over b, in bits/dim.

Legend: B = batch (pairs), S = sequence length, H = hidden size, D = pooled width, C = num_labels.
"""
import tensorflow as tf
import tf_keras as keras

import glow
from bert_flow_tf import loaders
from bert_flow_tf.modeling import packing
from bert_flow_tf.modeling import pooling as pooling_lib
from bert_flow_tf.modeling import pooling_ops
from bert_flow_tf.utils import distribute


def load_bert(config):
  """loaders.LoadedModel from the config's model directory / preset, or from the three TF1 files."""
  return loaders.load_model(config.model, do_lower_case=config.do_lower_case, vocab_file=config.vocab_file,
                            init_checkpoint=config.init_checkpoint, bert_config_file=config.bert_config_file)


class SiameseModel(tf.Module):
  """Encoder + pooling (+ Glow) shared by both sentences, and the NLI classifier.

  Args:
    loaded: loaders.LoadedModel.
    pooling: str, a pooling name.
    num_labels: int C; > 1 adds the classifier W [C, 3D].
    flow_model_config: str or None. A Glow config name; None for no flow.
    low_dim: int, 0 for none.
    seed: int, for W's initializer and the Glow's rotations.

  Attributes:
    pooling_spec: pooling.PoolingSpec; dim: int D. flow: the glow.Glow, or None. It keeps the name flow (not
      glow_model, as elsewhere) because a tf.Module attribute's name is its checkpoint key (model/flow/...):
      renamed, the checkpoints written so far would no longer resume.
  """

  def __init__(self, loaded, pooling, num_labels, flow_model_config=None, low_dim=0, seed=0):
    super().__init__(name="siamese")
    self.encoder = loaded.encoder
    self.pooling_spec = pooling_lib.resolve(pooling, loaded.num_layers)
    self.dim = self.pooling_spec.output_dim(loaded.hidden_size)
    self.flow = None
    if flow_model_config is not None:
      with distribute.policy_scope("float32"):  # the flow's log-determinants need float32
        self.flow = glow.Glow.from_config(flow_model_config, dim=self.dim, seed=seed)
    if low_dim and self.dim % low_dim:
      raise ValueError(f"low_dim={low_dim} must divide the embedding width D={self.dim}")
    self.low_dim = low_dim
    self.out_dim = low_dim or self.dim
    self.output_weights = None
    if num_labels > 1:
      init = keras.initializers.TruncatedNormal(stddev=0.02, seed=seed)
      self.output_weights = tf.Variable(init([num_labels, 3 * self.out_dim]), name="output_weights")

  def bert_variables(self, include_flow):
    """What BERT's optimizer updates: the encoder, the classifier, and the flow when it has no own loss."""
    variables = list(self.encoder.trainable_variables)
    if self.output_weights is not None:
      variables.append(self.output_weights)
    if include_flow and self.flow is not None:
      variables += self.flow.trainable_variables
    return variables

  def embed(self, ids, mask, training):
    """int32 [B, S] ids and mask -> (embedding float32 [B, D'], flow NLL float32 [B] bits/dim or None)."""
    inputs = packing.input_dict(ids, mask)
    pooled = tf.cast(pooling_ops.pool(self.pooling_spec, self.encoder(inputs, training=training), mask),
                     tf.float32)                                                     # [B, D]
    nll = None
    if self.flow is not None:
      z, logdet = self.flow(pooled, training=training)                              # [B, D], [B]
      nll = self.flow.latent_nll(z, logdet)                                         # [B] bits/dim
      pooled = z
    if self.low_dim:
      pooled = tf.reduce_mean(tf.reshape(pooled, [-1, self.low_dim, self.dim // self.low_dim]), axis=-1)
    return pooled, nll

  def __call__(self, batch, training=False):
    """Both towers and the per-pair supervised loss.

    Args:
      batch: dict with int32 `ids_a`, `mask_a`, `ids_b`, `mask_b` [B, S]; `label` (int32 class ids, or float32
        targets already scaled to [0, 1]) [B]; `labeled` float32 [B] (0 drops the pair's supervised loss).
      training: bool, dropout.

    Returns:
      dict: embedding_a, embedding_b [B, D'], cos [B], logits [B, C] (NLI only), per_example_loss [B] (zeros
      where unlabelled), flow_nll_a, flow_nll_b [B] (bits/dim, only with a flow).
    """
    emb_a, nll_a = self.embed(batch["ids_a"], batch["mask_a"], training)
    emb_b, nll_b = self.embed(batch["ids_b"], batch["mask_b"], training)
    cos = tf.reduce_sum(tf.math.l2_normalize(emb_a, -1) * tf.math.l2_normalize(emb_b, -1), -1)  # [B]
    out = {"embedding_a": emb_a, "embedding_b": emb_b, "cos": cos}
    if self.output_weights is None:
      loss = tf.square(cos - tf.cast(batch["label"], tf.float32))
    else:
      features = tf.concat([emb_a, emb_b, tf.abs(emb_a - emb_b)], -1)              # [B, 3D']
      logits = tf.matmul(features, self.output_weights, transpose_b=True)          # [B, C]
      loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=batch["label"], logits=logits)
      out["logits"] = logits
    out["per_example_loss"] = loss * batch["labeled"]
    if self.flow is not None:
      out["flow_nll_a"], out["flow_nll_b"] = nll_a, nll_b
    return out


def supervised_loss(out, l2_penalty, labelled=True):
  """Per-pair loss with the optional L2 penalty on |u| + |v| (float32 [B]).

  With `labelled` False (`num_examples=0`) the label term is a constant 0 with no gradient path (the original's
  `tf.zeros_like`), so variables reached only through it get no gradient at all; the penalty is still added after
  it, as the original does.
  """
  loss = out["per_example_loss"] if labelled else tf.zeros(tf.shape(out["cos"]), tf.float32)
  if l2_penalty > 0:
    loss += l2_penalty * (tf.norm(out["embedding_a"], axis=-1) + tf.norm(out["embedding_b"], axis=-1))
  return loss
