"""Named poolings: which layers each name takes, and the masked means."""
import numpy as np
import pytest
import tensorflow as tf

from bert_flow_tf.modeling import pooling
from bert_flow_tf.modeling import pooling_ops


@pytest.mark.parametrize("name, layers, mode", [
    ("last-avg", (12,), "mean"),
    ("avg", (12,), "mean"),
    ("last2avg", (11, 12), "mean"),
    ("first-last-avg", (1, 12), "mean"),
    ("avg-last-2", (1, 12), "mean"),          # the original's loop: all_encoder_layers[-0], [-1]
    ("avg-last-3", (1, 12, 11), "mean"),
    ("avg-last-1", (1,), "mean"),
    ("avg-last-last-2", (11,), "mean"),       # all_encoder_layers[-2]
    ("avg-last-concat-2", (1, 12), "concat"),
    # N >= 10: the whole number, not only its last digit as the original's `int(name[-1])` read it.
    ("avg-last-12", (1, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2), "mean"),
    ("avg-last-10", (1, 12, 11, 10, 9, 8, 7, 6, 5, 4), "mean"),
    ("avg-last-last-11", (2,), "mean"),
    ("emb-avg", (0,), "mean"),
    ("emb-last-avg", (0, 12), "mean"),
    ("cls", (12,), "cls-pooler"),
    ("cls-raw", (12,), "cls-token"),
])
def test_resolve(name, layers, mode):
  p = pooling.resolve(name, num_layers=12)
  assert (p.layers, p.mode) == (layers, mode)


@pytest.mark.parametrize("bad", ["mean", "avg-last-0", "avg-last-13", "avg-last-last-13", "last-3avg"])
def test_resolve_rejects(bad):
  with pytest.raises(ValueError):
    pooling.resolve(bad, num_layers=12)


@pytest.mark.parametrize("name", ["avg", "cls-raw", "avg-last-13", "avg-last-last-99", "avg-last-concat-1"])
def test_check_name_accepts_names_for_some_model(name):
  assert pooling.check_name(name) == name


@pytest.mark.parametrize("bad, message", [("mean", "unknown pooling 'mean'; allowed: last-avg"),
                                          ("avg-last-0", "N=0 must be >= 1"), ("last-3avg", "avg-last-N")])
def test_check_name_rejects_naming_the_allowed(bad, message):
  with pytest.raises(ValueError, match=message):
    pooling.check_name(bad)


def _outputs():
  rng = np.random.default_rng(0)
  hidden = [tf.constant(rng.normal(size=(2, 4, 3)), tf.float32) for _ in range(4)]  # layer 0..3
  return {"embedding_output": hidden[0], "encoder_outputs": hidden[1:],
          "pooled_output": tf.constant(rng.normal(size=(2, 3)), tf.float32)}, hidden


def test_means_skip_padding_and_average_layers():
  outputs, hidden = _outputs()
  mask = tf.constant([[1, 1, 1, 0], [1, 1, 0, 0]])
  h = [x.numpy() for x in hidden]
  expect = lambda x: np.stack([x[0, :3].mean(0), x[1, :2].mean(0)])
  got = pooling_ops.pool(pooling.resolve("first-last-avg", 3), outputs, mask).numpy()
  np.testing.assert_allclose(got, (expect(h[1]) + expect(h[3])) / 2, atol=1e-6)
  got = pooling_ops.pool(pooling.resolve("emb-avg", 3), outputs, mask).numpy()
  np.testing.assert_allclose(got, expect(h[0]), atol=1e-6)
  got = pooling_ops.pool(pooling.resolve("avg-last-concat-2", 3), outputs, mask).numpy()
  np.testing.assert_allclose(got, np.concatenate([expect(h[1]), expect(h[3])], -1), atol=1e-6)
  got = pooling_ops.pool(pooling.resolve("cls-raw", 3), outputs, mask).numpy()
  np.testing.assert_allclose(got, h[3][:, 0], atol=0)


def test_emb_pooling_needs_embedding_output():
  outputs, _ = _outputs()
  del outputs["embedding_output"]
  with pytest.raises(ValueError, match="embedding layer"):
    pooling_ops.pool(pooling.resolve("emb-avg", 3), outputs, tf.ones([2, 4], tf.int32))
