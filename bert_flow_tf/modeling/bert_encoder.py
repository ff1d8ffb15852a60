"""BertEncoder: token ids in, every layer's hidden states out (TF-Hub's input and output names).

Legend: B = batch size, S = sequence length, H = hidden size, L = number of transformer blocks.
"""
import tensorflow as tf
import tf_keras as keras

from bert_flow_tf.modeling import config as bert_config
from bert_flow_tf.modeling import layers
from bert_flow_tf.modeling import packing


class BertEncoder(keras.layers.Layer):
  """BERT as in google-research/bert `modeling.py`, as one Keras layer.

  Call args:
    inputs: dict of int32 [B, S] tensors `input_word_ids`, `input_mask` (1 = token, 0 = padding) and
      `input_type_ids`.
    training: bool. Dropout is active only when True.
    num_blocks: int or None. Run only blocks 1..num_blocks (0: the embedding layer alone); None runs all L.

  Returns a dict (with num_blocks < L only `embedding_output` and the `encoder_outputs` that ran):
    embedding_output: float32 [B, S, H], the embedding layer's output (after its LayerNorm).
    encoder_outputs: list of L float32 [B, S, H]; index 0 is block 1 (no embedding entry, as the original's
      `all_encoder_layers`).
    sequence_output: float32 [B, S, H], the last block's output (= encoder_outputs[-1]).
    pooled_output: float32 [B, H], tanh(dense(sequence_output[:, 0])), BERT's pooler.
  """

  def __init__(self, config, **kwargs):
    super().__init__(**kwargs)
    self.config = config
    self.embeddings = layers.BertEmbeddings(config, name="embeddings")
    self.blocks = [layers.TransformerBlock(config, name=f"layer_{i}") for i in range(config.num_hidden_layers)]
    self.pooler = keras.layers.Dense(config.hidden_size, activation="tanh",
                                     kernel_initializer=layers.initializer(config), name="pooler")

  def call(self, inputs, training=False, num_blocks=None):
    word_ids = inputs["input_word_ids"]
    mask = tf.cast(inputs["input_mask"], tf.float32)                              # [B, S]
    embedding_output = self.embeddings(word_ids, inputs["input_type_ids"], training=training)   # [B, S, H]
    # In the compute dtype (float16/bfloat16 under a mixed-precision policy); -10000 fits in float16. Axes are
    # added with expand_dims: LiteRT has no builtin for a strided slice that adds them (serving/litert.py).
    attention_bias = tf.cast(tf.expand_dims(tf.expand_dims(1.0 - mask, 1), 1) * -10000.0,
                             embedding_output.dtype)                                         # [B, 1, 1, S]
    # The blocks keep the tokens as rows of one 2-D matrix: each dense layer is one matmul (fused with its bias).
    batch, seq, hidden = tf.shape(word_ids)[0], tf.shape(word_ids)[1], self.config.hidden_size
    rows = tf.reshape(embedding_output, [-1, hidden])                             # [B*S, H]
    encoder_outputs = []
    for block in self.blocks[:num_blocks]:
      rows = block(rows, attention_bias, training=training)
      encoder_outputs.append(tf.reshape(rows, [batch, seq, hidden]))             # [B, S, H]
    if len(encoder_outputs) < len(self.blocks):
      return {"embedding_output": embedding_output, "encoder_outputs": encoder_outputs}
    sequence_output = encoder_outputs[-1] if encoder_outputs else embedding_output
    return {
        "embedding_output": embedding_output,
        "encoder_outputs": encoder_outputs,
        "sequence_output": sequence_output,
        "pooled_output": self.pooler(sequence_output[:, 0]),                      # [B, H]
    }

  def build_variables(self):
    """Creates every variable by one call on a dummy batch (loaders assign into them)."""
    ids = tf.zeros([1, 2], tf.int32)
    self(packing.input_dict(ids, tf.ones_like(ids)))
    return self

  def get_config(self):
    return {**super().get_config(), "config": self.config.to_dict()}

  @classmethod
  def from_config(cls, config):
    """The inverse of `get_config`: the BertConfig travels as a dict."""
    config = dict(config)
    return cls(bert_config.BertConfig(**config.pop("config")), **config)
