"""BertEncoder on a tiny config: shapes, masking, dropout only in training, config readers, integer head swaps."""
import json
import logging

import numpy as np
import pytest
import tensorflow as tf

from bert_flow_tf.modeling.config import BertConfig
from tests import tiny
from bert_flow_tf.modeling.bert_encoder import BertEncoder
from bert_flow_tf.modeling import layers

TINY = tiny.bert_config(99, **tiny.WIDE, num_hidden_layers=3, max_position_embeddings=16)


def _inputs(ids, mask):
  ids = tf.constant(ids, tf.int32)
  return {"input_word_ids": ids, "input_mask": tf.constant(mask, tf.int32), "input_type_ids": tf.zeros_like(ids)}


def test_output_shapes():
  encoder = BertEncoder(TINY)
  out = encoder(_inputs([[1, 5, 6, 2, 0], [1, 7, 2, 0, 0]], [[1, 1, 1, 1, 0], [1, 1, 1, 0, 0]]))
  assert out["embedding_output"].shape == (2, 5, 32)
  assert len(out["encoder_outputs"]) == 3
  assert all(h.shape == (2, 5, 32) for h in out["encoder_outputs"])
  assert out["sequence_output"] is out["encoder_outputs"][-1]
  assert out["pooled_output"].shape == (2, 32)
  cls = out["sequence_output"].numpy()[:, 0]
  want = np.tanh(cls @ encoder.pooler.kernel.numpy() + encoder.pooler.bias.numpy())
  np.testing.assert_allclose(out["pooled_output"].numpy(), want, atol=1e-6)


def test_padding_does_not_change_real_tokens():
  encoder = BertEncoder(TINY)
  short = encoder(_inputs([[1, 5, 6, 2]], [[1, 1, 1, 1]]))["sequence_output"].numpy()
  padded = encoder(_inputs([[1, 5, 6, 2, 0, 0]], [[1, 1, 1, 1, 0, 0]]))["sequence_output"].numpy()
  np.testing.assert_allclose(padded[:, :4], short, atol=1e-5)


def test_dropout_only_in_training():
  encoder = BertEncoder(TINY)
  inputs = _inputs([[1, 5, 6, 2]], [[1, 1, 1, 1]])
  a = encoder(inputs, training=False)["sequence_output"].numpy()
  b = encoder(inputs, training=False)["sequence_output"].numpy()
  c = encoder(inputs, training=True)["sequence_output"].numpy()
  np.testing.assert_array_equal(a, b)
  assert np.abs(a - c).max() > 1e-3


def test_get_config_round_trips_through_from_config():
  encoder = BertEncoder(TINY, name="tiny_bert", dtype="float32")
  inputs = _inputs([[1, 5, 6, 2]], [[1, 1, 1, 1]])
  want = encoder(inputs)["pooled_output"].numpy()
  config = encoder.get_config()
  copy = BertEncoder.from_config(config)
  assert copy.config == TINY and copy.name == "tiny_bert"
  assert copy.get_config() == config
  copy(inputs)
  copy.set_weights(encoder.get_weights())
  np.testing.assert_allclose(copy(inputs)["pooled_output"].numpy(), want, atol=1e-6)


def test_gelu_variants_differ_and_match_formulas():
  x = tf.constant([-2.0, -0.5, 0.0, 0.7, 3.0])
  from scipy.special import erf
  exact = 0.5 * x.numpy() * (1 + erf(x.numpy() / np.sqrt(2)))
  np.testing.assert_allclose(layers.gelu_erf(x).numpy(), exact, atol=1e-6)
  # google-research/bert's gelu: the tanh approximation of Hendrycks & Gimpel (2016), eq. after (2).
  v = x.numpy()
  approx = 0.5 * v * (1 + np.tanh(np.sqrt(2 / np.pi) * (v + 0.044715 * v ** 3)))
  np.testing.assert_allclose(layers.gelu_tanh(x).numpy(), approx, atol=1e-6)
  assert np.abs(approx - exact).max() > 1e-5


def test_config_readers_map_gelu_by_format(tmp_path):
  raw = {"vocab_size": 99, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
         "intermediate_size": 37, "hidden_act": "gelu"}
  path = tmp_path / "c.json"
  path.write_text(json.dumps(raw))
  assert BertConfig.from_google_json(str(path)).hidden_act == "gelu_tanh"
  assert BertConfig.from_hf_json(str(path)).hidden_act == "gelu_erf"


def test_config_errors_name_the_problem(tmp_path):
  with pytest.raises(FileNotFoundError, match="nowhere.json"):
    BertConfig.from_hf_json(str(tmp_path / "nowhere.json"))
  with pytest.raises(ValueError, match="hidden_size \\(30\\).*num_attention_heads \\(4\\)"):
    BertConfig(vocab_size=9, hidden_size=30, num_attention_heads=4)


@pytest.mark.parametrize("policy, atol", [("mixed_float16", 2e-2), ("mixed_bfloat16", 1e-1)])
def test_mixed_precision_policy_matches_float32(policy, atol):
  import tf_keras as keras
  inputs = _inputs([[1, 5, 6, 2, 0]], [[1, 1, 1, 1, 0]])
  tf.random.set_seed(0)
  full = BertEncoder(TINY)
  want = full(inputs)
  keras.mixed_precision.set_global_policy(policy)
  try:
    encoder = BertEncoder(TINY).build_variables()
  finally:
    keras.mixed_precision.set_global_policy("float32")
  encoder.set_weights(full.get_weights())
  out = encoder(inputs)
  assert out["sequence_output"].dtype == tf.as_dtype(policy.split("_")[1])
  # Measured max abs diffs: float16 3e-3, bfloat16 2.7e-2 (sequence_output; the values are O(1) after LayerNorm).
  for key in ("embedding_output", "sequence_output", "pooled_output"):
    got = out[key].numpy().astype(np.float32)
    np.testing.assert_allclose(got, want[key].numpy(), rtol=0, atol=atol, err_msg=key)


def test_attention_moves_heads_without_float_transposes():
  # oneDNN takes float Transposes (a per-call set-up that dominated one-sentence serving); integer ones it leaves.
  encoder = BertEncoder(TINY)
  inputs = _inputs([[1, 5, 6, 2, 0]], [[1, 1, 1, 1, 0]])
  graph = tf.function(encoder).get_concrete_function(inputs).graph
  transposes = [op for op in graph.get_operations() if op.type == "Transpose"]
  assert len(transposes) == 4 * TINY.num_hidden_layers
  assert {op.get_attr("T") for op in transposes} == {tf.int32}
  x = tf.random.stateless_normal([2, 5, 4, 8], seed=[1, 2])
  np.testing.assert_array_equal(layers.swap_heads(x).numpy(), tf.transpose(x, [0, 2, 1, 3]).numpy())


def test_head_swaps_pass_gradients_as_a_float_transpose_does():
  # A bitcast has no gradient of its own: without swap_heads' gradient, the query/key/value weights get none
  # (siamese fine-tuning and a Hub export's training flag read them).
  x = tf.random.stateless_normal([2, 5, 4, 8], seed=[3, 4])
  w = tf.random.stateless_normal([2, 4, 5, 8], seed=[5, 6])
  with tf.GradientTape(persistent=True) as tape:
    tape.watch(x)
    swapped = tf.reduce_sum(layers.swap_heads(x) * w)
    transposed = tf.reduce_sum(tf.transpose(x, [0, 2, 1, 3]) * w)
  np.testing.assert_array_equal(tape.gradient(swapped, x).numpy(), tape.gradient(transposed, x).numpy())
  encoder = BertEncoder(TINY)
  inputs = _inputs([[1, 5, 6, 2, 0]], [[1, 1, 1, 1, 0]])
  with tf.GradientTape() as tape:
    loss = tf.reduce_sum(encoder(inputs)["sequence_output"])
  grads = tape.gradient(loss, encoder.trainable_variables)
  assert [v.name for v, g in zip(encoder.trainable_variables, grads) if g is None] == [
      v.name for v in encoder.trainable_variables if "pooler" in v.name]


def test_a_saved_head_swap_loads_quietly_with_its_gradient(tmp_path, caplog):
  # The gradient is saved with the SavedModel (no custom gradient inside it left unsaved): loading prints no
  # "unsaved custom gradients" warning, and the loaded function still passes the gradient (a Hub export trains).
  module = tf.Module()
  module.w = tf.Variable(tf.random.stateless_normal([2, 5, 4, 8], seed=[7, 8]))
  module.swap = tf.function(lambda: layers.swap_heads(module.w), input_signature=[])
  tf.saved_model.save(module, str(tmp_path / "swap"))
  with caplog.at_level(logging.WARNING):
    loaded = tf.saved_model.load(str(tmp_path / "swap"))
  assert "custom gradient" not in caplog.text
  weights = tf.random.stateless_normal([2, 4, 5, 8], seed=[9, 10])
  with tf.GradientTape() as tape:
    loss = tf.reduce_sum(loaded.swap() * weights)
  np.testing.assert_array_equal(tape.gradient(loss, loaded.w).numpy(), tf.transpose(weights, [0, 2, 1, 3]).numpy())
