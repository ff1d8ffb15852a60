"""Parity with PyTorch `transformers` on the real all-MiniLM-L6-v2 weights.

The reference is `tests/fixtures/minilm_parity.npz`, written by `scripts/make_parity_fixture.py` (torch, not run
in CI): 42 sentences (20 STS-B test pairs, an empty string, one over 64 pieces), their HF ids and masks (S = 64)
and the HF BertModel's embeddings for five poolings.
"""
import pathlib

import numpy as np
import pytest
import tensorflow as tf

from bert_flow_tf import loaders
from bert_flow_tf.modeling import pooling
from bert_flow_tf.modeling import pooling_ops
from bert_flow_tf.modeling import tokenizer

FIXTURE = pathlib.Path(__file__).parents[1] / "fixtures" / "minilm_parity.npz"
POOLINGS = ("last-avg", "first-last-avg", "emb-avg", "cls-raw", "cls")
TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def reference():
  with np.load(FIXTURE) as data:
    return {name: data[name] for name in data.files}


@pytest.fixture(scope="module")
def model(minilm_dir):
  return loaders.load_model(str(minilm_dir))


@pytest.fixture(scope="module")
def outputs(model, reference):
  ids = tf.constant(reference["input_ids"], tf.int32)
  return model.encoder({"input_word_ids": ids, "input_mask": tf.constant(reference["attention_mask"], tf.int32),
                        "input_type_ids": tf.zeros_like(ids)})


def test_fixture_covers_the_edge_cases(reference):
  lengths = reference["attention_mask"].sum(axis=1)
  assert reference["input_ids"].shape == (42, 64)
  assert lengths.min() == 2                       # the empty string: [CLS] [SEP]
  assert lengths.max() == 64                      # the long sentence, truncated
  assert reference["sentences"][lengths.argmin()] == ""


@pytest.mark.parametrize("name", POOLINGS)
def test_pooling_matches_transformers(name, model, outputs, reference):
  pooling_spec = pooling.resolve(name, model.num_layers)
  ours = pooling_ops.pool(pooling_spec, outputs, tf.constant(reference["attention_mask"])).numpy()
  diff = np.abs(ours - reference[name]).max()
  print(f"{name}: max abs diff {diff:.2e} over {ours.shape}")
  assert ours.shape == reference[name].shape
  assert diff <= TOLERANCE, f"{name}: max abs diff {diff:.2e} > {TOLERANCE}"


def test_tokenizer_matches_transformers(model, reference):
  tok = tokenizer.BertTokenizer(model.vocab_file, model.do_lower_case, max_seq_length=64)
  packed = tok(tf.constant(reference["sentences"].tolist()))
  np.testing.assert_array_equal(packed["input_word_ids"].numpy(), reference["input_ids"])
  np.testing.assert_array_equal(packed["input_mask"].numpy(), reference["attention_mask"])
