"""The Keras layers of BERT: embeddings, multi-head self-attention and the post-LN transformer block.

The math is google-research/bert `modeling.py`: the embedding sum goes through LayerNorm and dropout; each block
is attention -> dense -> dropout -> residual -> LayerNorm -> feed-forward -> dropout -> residual -> LayerNorm; the
attention mask adds -10000 to the logits of padding positions.

Dimension legend used in the shape comments:
  B = batch size, S = sequence length, H = hidden size, N = attention heads, D = H // N (head size),
  I = intermediate (feed-forward) size.
"""
import math

import tensorflow as tf
import tf_keras as keras


def gelu_tanh(x):
  """GELU, tanh approximation: what google's TF1 BERT computes for "gelu"."""
  cdf = 0.5 * (1.0 + tf.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * tf.pow(x, 3))))
  return x * cdf


def gelu_erf(x):
  """GELU, exact: x * Phi(x). What HF-format configs mean by "gelu"."""
  return 0.5 * x * (1.0 + tf.math.erf(x / math.sqrt(2.0)))


ACTIVATION_FNS = {"gelu_tanh": gelu_tanh, "gelu_erf": gelu_erf, "relu": tf.nn.relu, "tanh": tf.tanh}


def initializer(config):
  """A fresh truncated-normal initializer (one per weight, so fresh weights differ)."""
  return keras.initializers.TruncatedNormal(stddev=config.initializer_range)


class BertEmbeddings(keras.layers.Layer):
  """Word + position + token-type embeddings, then LayerNorm and dropout.

  Call args: input_word_ids, input_type_ids: int32 [B, S]. Returns float32 [B, S, H].
  """

  def __init__(self, config, **kwargs):
    super().__init__(**kwargs)
    self.config = config

  def build(self, input_shape):
    c = self.config
    self.word_embeddings = self.add_weight(
        "word_embeddings", shape=[c.vocab_size, c.hidden_size], initializer=initializer(c))
    self.token_type_embeddings = self.add_weight(
        "token_type_embeddings", shape=[c.type_vocab_size, c.hidden_size], initializer=initializer(c))
    self.position_embeddings = self.add_weight(
        "position_embeddings", shape=[c.max_position_embeddings, c.hidden_size], initializer=initializer(c))
    self.layer_norm = keras.layers.LayerNormalization(epsilon=c.layer_norm_eps, name="LayerNorm")
    self.dropout = keras.layers.Dropout(c.hidden_dropout_prob)
    super().build(input_shape)

  def call(self, input_word_ids, input_type_ids, training=False):
    seq_length = tf.shape(input_word_ids)[1]
    x = tf.gather(self.word_embeddings, input_word_ids)                       # [B, S, H]
    x += tf.gather(self.token_type_embeddings, input_type_ids)                # [B, S, H]
    x += self.position_embeddings[tf.newaxis, :seq_length]                    # [1, S, H]
    return self.dropout(self.layer_norm(x), training=training)


_SAME_WIDTH_INT = {tf.float32: tf.int32, tf.float16: tf.int16, tf.bfloat16: tf.int16}


@tf.custom_gradient
def swap_heads(x):
  """[B, S, N, D] <-> [B, N, S, D]: the same bits moved as integers, so TF's own transpose kernel runs.

  oneDNN takes float transposes and pays a per-call setup of 0.2-1.3 ms on a request's [1, S, 12, 32] tensors
  (bench/README.md, serving); the integer kernel moves them for less, with identical results. A bitcast has no
  gradient, so the swap gives its own: the upstream gradient swapped back by a plain float transpose (the swap is its
  own inverse). That gradient holds no custom gradient of its own, so a SavedModel saves it whole and loads without
  TensorFlow's "unsaved custom gradients" warning, and every order of gradient exists.
  """
  bits = _SAME_WIDTH_INT[x.dtype]
  return (tf.bitcast(tf.transpose(tf.bitcast(x, bits), [0, 2, 1, 3]), x.dtype),
          lambda dy: tf.transpose(dy, [0, 2, 1, 3]))


class SelfAttention(keras.layers.Layer):
  """Multi-head scaled dot-product self-attention (no output projection; the block owns that).

  Call args: x float32 [B*S, H], the batch's tokens as rows (2-D, as google-research/bert keeps them: every
  dense layer is then one plain matmul); attention_bias float32 [B, 1, 1, S], 0 for tokens and -10000 for padding.
  Returns the context float32 [B*S, H].
  """

  def __init__(self, config, **kwargs):
    super().__init__(**kwargs)
    self.config = config
    self.num_heads = config.num_attention_heads
    self.head_size = config.hidden_size // config.num_attention_heads

  def build(self, input_shape):
    c = self.config
    dense = lambda name: keras.layers.Dense(c.hidden_size, kernel_initializer=initializer(c), name=name)
    self.query, self.key, self.value = dense("query"), dense("key"), dense("value")
    self.dropout = keras.layers.Dropout(c.attention_probs_dropout_prob)
    super().build(input_shape)

  def _split_heads(self, x, batch, seq):
    x = tf.reshape(x, [batch, seq, self.num_heads, self.head_size])         # [B, S, N, D]
    return swap_heads(x)                                                       # [B, N, S, D]

  def call(self, x, attention_bias, training=False):
    batch, seq = tf.shape(attention_bias)[0], tf.shape(attention_bias)[3]
    q = self._split_heads(self.query(x), batch, seq)                           # [B, N, S, D]
    k = self._split_heads(self.key(x), batch, seq)                             # [B, N, S, D]
    v = self._split_heads(self.value(x), batch, seq)                           # [B, N, S, D]
    logits = tf.matmul(q, k, transpose_b=True) * (1.0 / math.sqrt(self.head_size))  # [B, N, S, S]
    probs = self.dropout(tf.nn.softmax(logits + attention_bias), training=training)
    context = swap_heads(tf.matmul(probs, v))                                  # [B, S, N, D]
    return tf.reshape(context, [batch * seq, self.num_heads * self.head_size])  # [B*S, H]


class TransformerBlock(keras.layers.Layer):
  """One post-LN BERT block. Call args as SelfAttention; returns float32 [B*S, H]."""

  def __init__(self, config, **kwargs):
    super().__init__(**kwargs)
    self.config = config

  def build(self, input_shape):
    c = self.config
    self.attention = SelfAttention(c, name="attention")
    self.attention_output = keras.layers.Dense(
        c.hidden_size, kernel_initializer=initializer(c), name="attention_output")
    self.attention_layer_norm = keras.layers.LayerNormalization(
        epsilon=c.layer_norm_eps, name="attention_layer_norm")
    self.intermediate = keras.layers.Dense(
        c.intermediate_size, activation=ACTIVATION_FNS[c.hidden_act], kernel_initializer=initializer(c),
        name="intermediate")
    self.output_dense = keras.layers.Dense(c.hidden_size, kernel_initializer=initializer(c), name="output")
    self.output_layer_norm = keras.layers.LayerNormalization(epsilon=c.layer_norm_eps, name="output_layer_norm")
    self.dropout = keras.layers.Dropout(c.hidden_dropout_prob)
    super().build(input_shape)

  def call(self, x, attention_bias, training=False):
    attended = self.attention_output(self.attention(x, attention_bias, training=training))   # [B*S, H]
    x = self.attention_layer_norm(x + self.dropout(attended, training=training))
    hidden = self.output_dense(self.intermediate(x))                                          # [B*S, I] -> [B*S, H]
    return self.output_layer_norm(x + self.dropout(hidden, training=training))
