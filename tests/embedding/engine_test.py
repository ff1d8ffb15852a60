"""The embedding engine: tf.data pipeline, tf.distribute replicas, XLA on static shapes, no string op inside."""
import numpy as np
import pytest
import tensorflow as tf

from bert_flow_tf.embedding import pipeline
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from bert_flow_tf.modeling import packing
from bert_flow_tf.modeling import pooling as pooling_lib
from tests.embedding.tiny_model import SENTENCES, tiny_model


@pytest.fixture(scope="module")
def model(tmp_path_factory):
  return tiny_model(tmp_path_factory.mktemp("tiny"))


def encode(embedder, sentences, batch_size):
  """The engine alone (no store): `encode_quantities` combined into the embedder's pooling, np.float32 [n, D]."""
  names = pooling_lib.quantities(embedder.pooling_spec)
  return pooling_lib.combine(embedder.pooling_spec, embedder.encode_quantities(sentences, names, batch_size))


def one_at_a_time(embedder, sentences):
  """Each sentence alone, padded to max_seq_length: the reference the batched engine must reproduce."""
  out = []
  for sentence in sentences:
    inputs = embedder.tokenizer(tf.constant([sentence]))
    out.append(embedder.embed_inputs(inputs).numpy()[0])
  return np.stack(out)


@pytest.mark.parametrize("static_shapes", [False, True])
def test_pipeline_keeps_every_sentence_once(model, static_shapes):
  embedder = SentenceEmbedder(model, "last-avg", max_seq_length=16)
  batches = list(pipeline.InputPipeline(embedder.tokenizer, 4, static_shapes).dataset(SENTENCES))
  ids = np.concatenate([b["example_id"].numpy()[b["valid"].numpy()] for b in batches])
  assert sorted(ids.tolist()) == list(range(len(SENTENCES)))
  lengths = {int(b["input_word_ids"].shape[1]) for b in batches}
  if static_shapes:
    assert all(b["input_word_ids"].shape[0] == 4 for b in batches)
    assert lengths <= set(packing.static_lengths(16))
    assert sum(int((~b["valid"].numpy()).sum()) for b in batches) > 0   # filler rows exist and are flagged
  else:
    for b in batches:                                                      # no padding at all
      assert b["input_mask"].numpy().all()
  assert sum(int(b["truncated"].numpy().sum()) for b in batches) == 1


def test_pipeline_runs_without_autotuning(model):
  # With autotuning on, deleting a finished iterator could stall for tens of seconds (utils/tf_data.py).
  embedder = SentenceEmbedder(model, "last-avg", max_seq_length=16)
  assert pipeline.InputPipeline(embedder.tokenizer, 4).dataset(SENTENCES).options().autotune.enabled is False


def test_single_device_matches_one_sentence_at_a_time(model):
  embedder = SentenceEmbedder(model, "first-last-avg", max_seq_length=16)
  np.testing.assert_allclose(encode(embedder, SENTENCES, 4), one_at_a_time(embedder, SENTENCES),
                             atol=1e-5)


@pytest.mark.parametrize("static_shapes", [False, True])
def test_one_batch_without_tf_data_matches_the_pipeline(model, static_shapes):
  # 23 sentences in one batch of 32 take the eager path (mixed lengths, padded); in batches of 4, the tf.data one.
  embedder = SentenceEmbedder(model, "first-last-avg", max_seq_length=16, static_shapes=static_shapes)
  np.testing.assert_allclose(encode(embedder, SENTENCES, 32), encode(embedder, SENTENCES, 4),
                             atol=1e-5)
  assert encode(embedder, [], 32).shape == (0, embedder.dim)


@pytest.mark.distributed
def test_mirrored_strategy_matches_single_device_in_input_order(model, cpu_strategy):
  single = encode(SentenceEmbedder(model, "first-last-avg", max_seq_length=16), SENTENCES, 5)
  mirrored = SentenceEmbedder(model, "first-last-avg", max_seq_length=16, strategy=cpu_strategy)
  got = encode(mirrored, SENTENCES, 5)    # 23 sentences: partial batches split unevenly
  np.testing.assert_allclose(got, single, atol=1e-5)
  np.testing.assert_array_equal(got[0], got[2])


@pytest.mark.slow
@pytest.mark.distributed
def test_xla_on_static_shapes_matches_the_dynamic_path(tmp_path, cpu_strategy):
  # A one-block BERT: the test compiles it twice (one device, then each replica), and compiling grows with blocks.
  model = tiny_model(tmp_path, num_layers=1)
  dynamic = encode(SentenceEmbedder(model, "last2avg", max_seq_length=16), SENTENCES, 4)
  xla = SentenceEmbedder(model, "last2avg", max_seq_length=16, use_xla=True)
  assert xla.static_shapes
  np.testing.assert_allclose(encode(xla, SENTENCES, 4), dynamic, atol=1e-4)
  both = SentenceEmbedder(model, "last2avg", max_seq_length=16, strategy=cpu_strategy, use_xla=True)
  np.testing.assert_allclose(encode(both, SENTENCES, 4), dynamic, atol=1e-4)


def _graph_ops(concrete):
  graph = concrete.graph.as_graph_def()
  nodes = list(graph.node) + [n for f in graph.library.function for n in f.node_def]
  return nodes


def test_replica_function_holds_no_string_op(model):
  embedder = SentenceEmbedder(model, "cls", max_seq_length=16)
  batch = next(iter(pipeline.InputPipeline(embedder.tokenizer, 4).dataset(SENTENCES)))
  concrete = embedder.replica_function(["mean-0", "mean-3", "cls-3", "pooler"]).get_concrete_function(batch)
  nodes = _graph_ops(concrete)
  assert any(n.op == "MatMul" or n.op == "BatchMatMulV2" for n in nodes)   # the encoder is inside
  string_nodes = [n.name for n in nodes if any(v.type == tf.string.as_datatype_enum
                                               for k, v in n.attr.items() if k in ("T", "dtype", "Tin", "out_type"))]
  assert not string_nodes
  assert not [n.op for n in nodes if "String" in n.op or "Wordpiece" in n.op or "Normalize" in n.op]


def test_emb_avg_runs_no_transformer_block(model):
  embedder = SentenceEmbedder(model, "emb-avg", max_seq_length=16)
  batch = next(iter(pipeline.InputPipeline(embedder.tokenizer, 4).dataset(SENTENCES)))
  only_embeddings = _graph_ops(embedder.replica_function(["mean-0"]).get_concrete_function(batch))
  assert not [n for n in only_embeddings if "layer_0" in n.name]
  with_blocks = _graph_ops(embedder.replica_function(["mean-1"]).get_concrete_function(batch))
  assert [n for n in with_blocks if "layer_0" in n.name] and not [n for n in with_blocks if "layer_1" in n.name]


@pytest.fixture(scope="module")
def stored_quantities(model):
  """Every quantity the poolings below read, stored once through the tf.data engine (batches of 4)."""
  names = [f"mean-{i}" for i in range(4)] + ["cls-3", "pooler"]
  return SentenceEmbedder(model, "last-avg", max_seq_length=16).encode_quantities(SENTENCES, names, batch_size=4)


@pytest.mark.parametrize("name", ["last-avg", "last2avg", "first-last-avg", "emb-avg", "emb-last-avg", "cls",
                                  "cls-raw", "avg-last-3", "avg-last-last-2", "avg-last-concat-3"])
def test_stored_quantities_reproduce_every_pooling(model, stored_quantities, name):
  embedder = SentenceEmbedder(model, name, max_seq_length=16)
  derived = pooling_lib.combine(embedder.pooling_spec, stored_quantities)
  # The reference pools inside the graph (SentenceEmbedder.embed_inputs -> pooling_ops.pool), not from the quantities,
  # on all the sentences in one padded batch (one-at-a-time equals the engine: test_single_device_matches_...).
  reference = embedder.embed_inputs(embedder.tokenizer(tf.constant(SENTENCES))).numpy()
  np.testing.assert_allclose(derived, reference, atol=1e-5)
