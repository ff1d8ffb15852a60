"""TF1-checkpoint and TF-Hub writers and loaders: round trips, strictness, and the three formats on real MiniLM."""
import json
import re

import numpy as np
import pytest
import tensorflow as tf

from bert_flow_tf import loaders
from bert_flow_tf.modeling import pooling
from bert_flow_tf.modeling import pooling_ops
from bert_flow_tf.modeling.config import BertConfig
from tests.tiny import WIDE, bert_config
from bert_flow_tf.modeling.bert_encoder import BertEncoder
from bert_flow_tf.loaders import tf1_checkpoint
from bert_flow_tf.loaders import tfhub

TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(94)]  # 99 tokens


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
  """A random tiny encoder (H=32, L=2, vocab 99, tanh GELU) with its vocab file."""
  tf.random.set_seed(1)
  config = bert_config(99, **WIDE)
  vocab = tmp_path_factory.mktemp("vocab") / "tiny-vocab.txt"  # saved by both writers as vocab.txt
  vocab.write_text("\n".join(TOKENS) + "\n")
  return BertEncoder(config).build_variables(), config, str(vocab)


@pytest.fixture(scope="module")
def tf1_dir(tiny, tmp_path_factory):
  encoder, config, vocab = tiny
  out = tmp_path_factory.mktemp("tf1")
  tf1_checkpoint.save_tf1_checkpoint(encoder, config, str(out), vocab_file=vocab)
  return out


@pytest.fixture(scope="module")
def hub_dir(tiny, tmp_path_factory):
  encoder, _, vocab = tiny
  out = tmp_path_factory.mktemp("hub")
  tfhub.save_hub_encoder(encoder, str(out), vocab_file=vocab, do_lower_case=False)
  return out


@pytest.fixture(scope="module")
def hub_model(hub_dir):
  """hub_dir loaded once by load_hub_model (a SavedModel load is about a second), for the tests that only read it."""
  return tfhub.load_hub_model(str(hub_dir))


def _inputs():
  ids = tf.constant([[2, 10, 57, 3, 0, 0], [2, 98, 6, 7, 40, 3]], tf.int32)
  return {"input_word_ids": ids, "input_mask": tf.cast(ids > 0, tf.int32),
          "input_type_ids": tf.constant([[0, 0, 0, 0, 0, 0], [0, 0, 0, 1, 1, 1]], tf.int32)}


def _read_ckpt(prefix):
  reader = tf.train.load_checkpoint(prefix)
  return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


def _write_ckpt(out_dir, config_file, tensors):
  """Writes `tensors` under their names as `<out_dir>/bert_model.ckpt` beside a copy of the config."""
  out_dir.mkdir()
  (out_dir / "bert_config.json").write_text(config_file.read_text())
  prefix = str(out_dir / "bert_model.ckpt")
  names = sorted(tensors)
  tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names, shape_and_slices=[""] * len(names),
                    tensors=[tf.constant(tensors[n]) for n in names])
  return prefix


def test_tf1_round_trip_is_exact(tiny, tf1_dir):
  encoder, config, _ = tiny
  assert json.loads((tf1_dir / "bert_config.json").read_text())["hidden_act"] == "gelu"
  assert (tf1_dir / "vocab.txt").read_text() == "\n".join(TOKENS) + "\n"
  names = {name for name, _ in tf.train.list_variables(str(tf1_dir / "bert_model.ckpt"))}
  assert "bert/encoder/layer_1/attention/self/query/kernel" in names and "bert/pooler/dense/bias" in names
  loaded, loaded_config = tf1_checkpoint.load_tf1_encoder(str(tf1_dir / "bert_config.json"),
                                                          str(tf1_dir / "bert_model.ckpt"))
  assert loaded_config == config
  want, got = encoder(_inputs()), loaded(_inputs())
  for key in ("embedding_output", "sequence_output", "pooled_output"):
    np.testing.assert_array_equal(got[key].numpy(), want[key].numpy())
  for w, g in zip(want["encoder_outputs"], got["encoder_outputs"]):
    np.testing.assert_array_equal(g.numpy(), w.numpy())


def test_hf_round_trip_is_exact_and_gelu_word_is_hf(tiny, tmp_path):
  from bert_flow_tf.loaders import safetensors as hf_loader
  encoder, config, vocab = tiny
  hf_loader.save_hf_encoder(encoder, config, str(tmp_path), vocab_file=vocab, do_lower_case=False)
  assert json.loads((tmp_path / "config.json").read_text())["hidden_act"] == "gelu_new"  # HF's tanh GELU
  loaded = loaders.load_model(str(tmp_path))
  assert (loaded.format, loaded.do_lower_case, loaded.config) == ("hf", False, config)
  want, got = encoder(_inputs()), loaded.encoder(_inputs())
  for key in ("embedding_output", "sequence_output", "pooled_output"):
    np.testing.assert_array_equal(got[key].numpy(), want[key].numpy())


def test_tf1_missing_variable_is_named(tf1_dir, tmp_path):
  tensors = _read_ckpt(str(tf1_dir / "bert_model.ckpt"))
  del tensors["bert/encoder/layer_1/output/dense/kernel"]
  prefix = _write_ckpt(tmp_path / "ckpt", tf1_dir / "bert_config.json", tensors)
  with pytest.raises(ValueError, match=r"missing 1 tensor\(s\): bert/encoder/layer_1/output/dense/kernel"):
    tf1_checkpoint.load_tf1_encoder(str(tmp_path / "ckpt" / "bert_config.json"), prefix)


def test_tf1_wrong_shape_names_both_shapes(tf1_dir, tmp_path):
  tensors = _read_ckpt(str(tf1_dir / "bert_model.ckpt"))
  tensors["bert/pooler/dense/kernel"] = np.zeros([32, 16], np.float32)
  prefix = _write_ckpt(tmp_path / "ckpt", tf1_dir / "bert_config.json", tensors)
  with pytest.raises(ValueError, match=r"bert/pooler/dense/kernel: stored \(32, 16\), model \(32, 32\)"):
    tf1_checkpoint.load_tf1_encoder(str(tmp_path / "ckpt" / "bert_config.json"), prefix)


def test_tf1_ignores_optimizer_slots_step_and_heads_but_nothing_else(tiny, tf1_dir, tmp_path):
  tensors = _read_ckpt(str(tf1_dir / "bert_model.ckpt"))
  tensors["bert/pooler/dense/kernel/adam_m"] = tensors["bert/pooler/dense/kernel"] + 1.0
  tensors["bert/pooler/dense/kernel/adam_v"] = tensors["bert/pooler/dense/kernel"] + 2.0
  tensors["global_step"] = np.array(1000, np.int64)
  tensors["cls/predictions/output_bias"] = np.zeros([99], np.float32)
  prefix = _write_ckpt(tmp_path / "extras", tf1_dir / "bert_config.json", tensors)
  loaded, _ = tf1_checkpoint.load_tf1_encoder(str(tmp_path / "extras" / "bert_config.json"), prefix)
  np.testing.assert_array_equal(loaded.pooler.kernel.numpy(), tiny[0].pooler.kernel.numpy())
  tensors["output_weights"] = np.zeros([2, 32], np.float32)  # a fine-tuned classifier head is not ignored
  prefix = _write_ckpt(tmp_path / "head", tf1_dir / "bert_config.json", tensors)
  with pytest.raises(ValueError, match=r"1 unused tensor\(s\): output_weights"):
    tf1_checkpoint.load_tf1_encoder(str(tmp_path / "head" / "bert_config.json"), prefix)


def test_tf1_missing_files_are_named(tf1_dir, tmp_path):
  missing_config = str(tmp_path / "bert_config.json")
  with pytest.raises(FileNotFoundError, match=re.escape(missing_config)):
    tf1_checkpoint.load_tf1_encoder(missing_config, str(tf1_dir / "bert_model.ckpt"))
  with pytest.raises(FileNotFoundError, match=re.escape(str(tmp_path / "nothing.ckpt.index"))):
    tf1_checkpoint.load_tf1_encoder(str(tf1_dir / "bert_config.json"), str(tmp_path / "nothing.ckpt"))


def test_tf1_exact_gelu_is_refused_unless_allowed(tiny, tmp_path):
  encoder, config, _ = tiny
  exact = BertConfig(**{**config.to_dict(), "hidden_act": "gelu_erf"})
  with pytest.raises(ValueError, match="allow_exact_gelu"):
    tf1_checkpoint.save_tf1_checkpoint(encoder, exact, str(tmp_path / "refused"))
  assert not (tmp_path / "refused").exists()
  prefix = tf1_checkpoint.save_tf1_checkpoint(encoder, exact, str(tmp_path / "exact"), allow_exact_gelu=True)
  assert json.loads((tmp_path / "exact" / "bert_config.json").read_text())["hidden_act"] == "gelu_erf"
  _, loaded_config = tf1_checkpoint.load_tf1_encoder(str(tmp_path / "exact" / "bert_config.json"), prefix)
  assert loaded_config == exact


def test_hub_round_trip(tiny, hub_dir, hub_model):
  encoder, model = tiny[0], hub_model
  assert (hub_dir / "assets" / "vocab.txt").read_text() == "\n".join(TOKENS) + "\n"
  assert (model.num_layers, model.hidden_size, model.do_lower_case, model.format) == (2, 32, False, "tfhub")
  assert model.vocab_file == str(hub_dir / "assets" / "vocab.txt")
  assert len(model.encoder.trainable_weights) == len(encoder.trainable_weights)
  want, got = encoder(_inputs()), model.encoder(_inputs())
  assert "embedding_output" not in got
  for key in ("sequence_output", "pooled_output"):
    np.testing.assert_allclose(got[key].numpy(), want[key].numpy(), rtol=0, atol=1e-6)
  for w, g in zip(want["encoder_outputs"], got["encoder_outputs"], strict=True):
    np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=0, atol=1e-6)


def test_hub_training_flag_turns_dropout_on(hub_model):
  encoder = hub_model.encoder
  inference = encoder(_inputs(), training=False)["sequence_output"].numpy()
  np.testing.assert_array_equal(encoder(_inputs())["sequence_output"].numpy(), inference)
  assert np.abs(encoder(_inputs(), training=True)["sequence_output"].numpy() - inference).max() > 1e-3
  with tf.GradientTape() as tape:
    loss = tf.reduce_sum(encoder(_inputs(), training=True)["pooled_output"])
  grads = tape.gradient(loss, encoder.trainable_variables)
  assert all(g is not None for g in grads)


def test_hub_vocab_lookup_order(tiny, tmp_path):
  encoder, _, vocab = tiny
  tfhub.save_hub_encoder(encoder, str(tmp_path / "bare"))
  with pytest.raises(FileNotFoundError, match=re.escape(str(tmp_path / "bare" / "assets" / "vocab.txt"))):
    tfhub.load_hub_model(str(tmp_path / "bare"))
  preprocess_assets = tmp_path / "preprocess" / "assets"
  preprocess_assets.mkdir(parents=True)
  (preprocess_assets / "vocab.txt").write_text("\n".join(TOKENS) + "\n")
  model = tfhub.load_hub_model(str(tmp_path / "bare"), preprocess_dir=str(tmp_path / "preprocess"))
  assert model.vocab_file == str(preprocess_assets / "vocab.txt") and model.do_lower_case
  assert tfhub.load_hub_model(str(tmp_path / "bare"), vocab_file=vocab, do_lower_case=False).vocab_file == vocab


def test_detect_format_and_load_model(tf1_dir, hub_dir):
  assert loaders.detect_format(str(tf1_dir)) == "tf1"
  assert loaders.detect_format(str(hub_dir)) == "tfhub"
  tf1_model, hub_model = loaders.load_model(str(tf1_dir)), loaders.load_model(str(hub_dir))
  assert (tf1_model.format, tf1_model.num_layers, tf1_model.hidden_size) == ("tf1", 2, 32)
  assert (hub_model.format, hub_model.num_layers, hub_model.hidden_size) == ("tfhub", 2, 32)
  np.testing.assert_allclose(hub_model.encoder(_inputs())["pooled_output"].numpy(),
                             tf1_model.encoder(_inputs())["pooled_output"].numpy(), rtol=0, atol=1e-6)


def test_load_model_from_the_three_tf1_files(tf1_dir):
  files = {"bert_config_file": str(tf1_dir / "bert_config.json"), "vocab_file": str(tf1_dir / "vocab.txt"),
           "init_checkpoint": str(tf1_dir / "bert_model.ckpt")}
  loaded = loaders.load_model(None, do_lower_case=False, **files)
  assert (loaded.format, loaded.num_layers, loaded.do_lower_case, loaded.source) == (
      "tf1", 2, False, files["init_checkpoint"])
  np.testing.assert_allclose(loaded.encoder(_inputs())["pooled_output"].numpy(),
                             loaders.load_model(str(tf1_dir)).encoder(_inputs())["pooled_output"].numpy(), atol=0)
  with pytest.raises(ValueError, match="vocab_file=None"):
    loaders.load_model(None, **{**files, "vocab_file": None})
  with pytest.raises(ValueError, match="model_dir='all-minilm-l6-v2'.*not both"):
    loaders.load_model("all-minilm-l6-v2", **files)


def _stsb_sentences(data_dir, count):
  lines = (data_dir / "stsbenchmark" / "sts-dev.csv").read_text(encoding="utf-8").splitlines()
  sentences = []
  for line in lines[:count // 2]:
    fields = line.split("\t")
    sentences += [fields[5], fields[6]]
  return sentences


def _token_inputs(tokenizer_json, sentences):
  import tokenizers  # pylint: disable=import-outside-toplevel
  tokenizer = tokenizers.Tokenizer.from_file(str(tokenizer_json))
  tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
  tokenizer.no_truncation()
  encodings = tokenizer.encode_batch(sentences)
  return {"input_word_ids": tf.constant([e.ids for e in encodings], tf.int32),
          "input_mask": tf.constant([e.attention_mask for e in encodings], tf.int32),
          "input_type_ids": tf.constant([e.type_ids for e in encodings], tf.int32)}


@pytest.mark.slow
def test_minilm_agrees_across_hf_tf1_and_hub(minilm_dir, data_dir, tmp_path):
  hf = loaders.load_model(str(minilm_dir))
  assert hf.config.hidden_act == "gelu_erf"
  tf1_checkpoint.save_tf1_checkpoint(hf.encoder, hf.config, str(tmp_path / "tf1"),
                                     vocab_file=hf.vocab_file, allow_exact_gelu=True)
  tfhub.save_hub_encoder(hf.encoder, str(tmp_path / "hub"), vocab_file=hf.vocab_file,
                         do_lower_case=hf.do_lower_case)
  tf1, hub = loaders.load_model(str(tmp_path / "tf1")), loaders.load_model(str(tmp_path / "hub"))
  assert (tf1.format, hub.format) == ("tf1", "tfhub")
  assert (hub.num_layers, hub.hidden_size, hub.do_lower_case) == (6, 384, True)
  inputs = _token_inputs(minilm_dir / "tokenizer.json", _stsb_sentences(data_dir, 20))
  outputs = {m.format: m.encoder(inputs) for m in (hf, tf1, hub)}
  for name in ("last-avg", "first-last-avg", "cls-raw"):
    pooling_spec = pooling.resolve(name, 6)
    reference = pooling_ops.pool(pooling_spec, outputs["hf"], inputs["input_mask"]).numpy()
    assert reference.shape == (20, 384) and np.abs(reference).max() > 1e-2
    for fmt in ("tf1", "hub"):
      got = pooling_ops.pool(pooling_spec, outputs["tf1" if fmt == "tf1" else "tfhub"], inputs["input_mask"]).numpy()
      diff = np.abs(got - reference).max()
      print(f"{name} hf vs {fmt}: max abs diff {diff:.3g}")
      assert diff <= 1e-5, (name, fmt, diff)
