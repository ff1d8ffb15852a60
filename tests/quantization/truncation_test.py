"""truncate_dim on a flow keeps the dimensions of largest variance on its fit vectors (an order fitted and saved with
the calibration); whitening keeps its first k; a flow saved without an order keeps the first k. Expectations come
from numpy's variance of the flow's own output, not from the code under test."""
import os

import numpy as np
import pytest
import tensorflow as tf

import bert_flow_tf
from bert_flow_tf.calibration import calibrator
from bert_flow_tf.calibration import flow_fitting
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from bert_flow_tf.quantization import code_search
from bert_flow_tf.quantization import st_layouts
from bert_flow_tf.quantization import truncation
from tests import tiny
from tests.embedding.tiny_model import SENTENCES, tiny_model


def _variance_order(z):
  return np.argsort(-z.astype(np.float64).var(0), kind="stable")


def test_a_flows_order_is_fitted_saved_and_loaded_and_old_folders_keep_the_first_k(tmp_path):
  rng = np.random.default_rng(3)
  x = (rng.normal(size=[200, 16]) * np.linspace(3., 0.2, 16)[::-1]).astype(np.float32)  # spread grows with index
  config = flow_fitting.FlowFitConfig(flow_model_config=tiny.write_glow_config(tmp_path / "glow.json"), batch_size=4)
  cal = calibrator.fit("flow", x, config)
  z = cal.transform(x)
  want = _variance_order(z)
  assert not np.array_equal(want[:5], np.arange(5))                # the flow's first 5 are not its widest 5
  np.testing.assert_array_equal(cal.truncation_order, want)
  np.testing.assert_array_equal(z[:, truncation.kept(cal.truncation_order, 5, 16)], z[:, want[:5]])
  assert truncation.kept(cal.truncation_order, 16, 16) == slice(None)  # no cut: every dimension in place
  cal.save(str(tmp_path / "cal"))
  np.testing.assert_array_equal(calibrator.load_calibration(str(tmp_path / "cal")).truncation_order, want)
  os.remove(tmp_path / "cal" / truncation.ORDER_FILE)              # a flow saved before orders were fitted
  old = calibrator.load_calibration(str(tmp_path / "cal"))
  assert old.truncation_order is None and truncation.kept(old.truncation_order, 5, 16) == slice(0, 5)
  np.save(tmp_path / "cal" / truncation.ORDER_FILE, np.arange(15, dtype=np.int32))
  with pytest.raises(ValueError, match=r"truncation_order.npy: not a truncation order of the calibration's 16 "):
    calibrator.load_calibration(str(tmp_path / "cal"))
  np.save(tmp_path / "cal" / truncation.ORDER_FILE, np.zeros(16, np.int32))  # not a permutation
  with pytest.raises(ValueError, match="truncation_order.npy: not a truncation order"):
    calibrator.load_calibration(str(tmp_path / "cal"))
  assert calibrator.fit("whitening", x).truncation_order is None    # whitening: its first k are its top k


@pytest.mark.slow
def test_a_flow_encoders_encode_search_and_binary_export_keep_the_same_dimensions(tmp_path):
  enc = bert_flow_tf.SentenceEncoder(SentenceEmbedder(tiny_model(tmp_path / "bert"), "last-avg", 16),
                                     cache_dir=str(tmp_path / "store"))
  enc.fit(SENTENCES, flow_config=tiny.write_glow_config(tmp_path / "glow.json"), batch_size=4)
  full = enc.encode(SENTENCES)
  dims = _variance_order(full)[:6]                  # the fit sentences are SENTENCES: their variance sets the order
  assert not np.array_equal(np.sort(dims), np.arange(6))
  np.testing.assert_array_equal(enc.encode(SENTENCES, truncate_dim=6), full[:, dims])
  ranges = enc.calibration.int8_ranges[:, dims]
  np.testing.assert_array_equal(enc.encode(SENTENCES, truncate_dim=6, precision="int8"),
                                st_layouts.quantize_embeddings(full[:, dims], "int8", ranges=ranges))
  queries = ["a man plays", "the dog"]
  want = code_search.semantic_search(enc.encode(queries)[:, dims], full[:, dims], 3, "binary", candidates=8,
                                     ranges=ranges)
  enc.truncate_dim = 6
  assert enc.semantic_search(queries, SENTENCES, top_k=3, precision="binary", candidates=8) == want
  enc.truncate_dim = None
  enc.export(str(tmp_path / "exp"), corpus=SENTENCES, search="binary", truncate_dim=6)
  exported = bert_flow_tf.ExportedEncoder(str(tmp_path / "exp"))
  np.testing.assert_allclose(exported.encode(SENTENCES, truncate_dim=6), full[:, dims], atol=1e-5)
  served = exported.search(queries, k=3, precision="binary", candidates=8)
  assert [[h["corpus_id"] for h in row] for row in served] == [[h["corpus_id"] for h in row] for row in want]
  np.testing.assert_allclose([[h["score"] for h in row] for row in served],
                             [[h["score"] for h in row] for row in want], atol=1e-5)
  assert tf.saved_model.contains_saved_model(str(tmp_path / "exp" / "binary_search" / "1"))
