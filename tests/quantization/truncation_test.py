"""truncate_dim keeps a calibration's first k dimensions: a flow's output is its latent z turned to z's principal
axes over the fit vectors (fitted and saved with the calibration), so its first k are z's top k, as whitening's
are; a flow saved with a truncation order and no axes keeps its order. Expectations come from numpy's statistics of
the Glow's own latent, not from the code under test."""
import os

import numpy as np
import pytest
import tensorflow as tf

import bert_flow_tf
import glow
from bert_flow_tf import search
from bert_flow_tf.calibration import calibrator
from bert_flow_tf.calibration import flow_fitting
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from bert_flow_tf.quantization import code_search
from bert_flow_tf.quantization import int8_ranges
from bert_flow_tf.quantization import st_layouts
from bert_flow_tf.quantization import truncation
from bert_flow_tf.utils import errors
from tests import tiny
from tests.embedding.tiny_model import SENTENCES, tiny_model


def _cosines(v):
  v = search.normalize(v).astype(np.float64)
  return v @ v.T


def test_a_flows_output_is_its_latent_on_its_principal_axes_fitted_saved_and_loaded(tmp_path):
  rng = np.random.default_rng(3)
  x = (rng.normal(size=[200, 16]) * np.linspace(3., 0.2, 16)[::-1]).astype(np.float32)  # spread grows with index
  config = flow_fitting.FlowFitConfig(flow_model_config=tiny.write_glow_config(tmp_path / "glow.json"), batch_size=4)
  cal = calibrator.fit("flow", x, config)
  z = glow.transform(cal.glow, x).astype(np.float64)                # the latent, as the Glow gives it
  out = cal.transform(x)
  np.testing.assert_allclose(_cosines(out), _cosines(z), atol=1e-5)  # a rotation: every full-width cosine is z's
  cov = np.cov(out.astype(np.float64), rowvar=False, bias=True)
  np.testing.assert_allclose(np.diag(cov), np.linalg.eigvalsh(np.cov(z, rowvar=False, bias=True))[::-1],
                             rtol=1e-4, atol=1e-5)                  # z's variances along its axes, largest first
  np.testing.assert_allclose(cov - np.diag(np.diag(cov)), 0, atol=1e-4 * cov.max())  # uncorrelated
  assert cal.truncation_order is None                               # so its first k are its top k
  half = int8_ranges.CLIP_SIGMAS * out.astype(np.float64).std(0).max()  # one width: the first axis's
  np.testing.assert_allclose(cal.int8_ranges, out.mean(0) + np.array([[-half], [half]]), rtol=1e-4, atol=1e-4)
  cal.save(str(tmp_path / "cal"))
  loaded = calibrator.load_calibration(str(tmp_path / "cal"))
  np.testing.assert_array_equal(loaded.transform(x), out)
  np.testing.assert_array_equal(loaded.int8_ranges, cal.int8_ranges)
  np.save(tmp_path / "cal" / truncation.AXES_FILE, 2 * np.eye(16, dtype=np.float32))  # not orthogonal
  with pytest.raises(errors.UserError, match=r"principal_axes.npy: not the principal axes of the calibration's 16 "):
    calibrator.load_calibration(str(tmp_path / "cal"))
  os.remove(tmp_path / "cal" / truncation.AXES_FILE)               # a flow saved with an order, before axes
  order = np.argsort(-z.var(0), kind="stable").astype(np.int32)
  truncation.save(str(tmp_path / "cal"), order)
  old = calibrator.load_calibration(str(tmp_path / "cal"))
  assert old.axes is None
  np.testing.assert_array_equal(old.truncation_order, order)
  np.testing.assert_allclose(old.transform(x)[:, truncation.kept(old.truncation_order, 5, 16)], z[:, order[:5]],
                             atol=1e-6)
  assert truncation.kept(old.truncation_order, 16, 16) == slice(None)  # no cut: every dimension in place
  np.save(tmp_path / "cal" / truncation.ORDER_FILE, np.arange(15, dtype=np.int32))
  with pytest.raises(ValueError, match=r"truncation_order.npy: not a truncation order of the calibration's 16 "):
    calibrator.load_calibration(str(tmp_path / "cal"))
  np.save(tmp_path / "cal" / truncation.ORDER_FILE, np.zeros(16, np.int32))  # not a permutation
  with pytest.raises(ValueError, match="truncation_order.npy: not a truncation order"):
    calibrator.load_calibration(str(tmp_path / "cal"))
  os.remove(tmp_path / "cal" / truncation.ORDER_FILE)               # neither: the first k
  assert truncation.kept(calibrator.load_calibration(str(tmp_path / "cal")).truncation_order, 5, 16) == slice(0, 5)
  assert calibrator.fit("whitening", x).truncation_order is None    # whitening: its first k are its top k


@pytest.mark.slow
def test_a_flow_encoders_encode_search_and_binary_export_keep_the_same_dimensions(tmp_path):
  enc = bert_flow_tf.SentenceEncoder(SentenceEmbedder(tiny_model(tmp_path / "bert"), "last-avg", 16),
                                     cache_dir=str(tmp_path / "store"))
  enc.fit(SENTENCES, flow_config=tiny.write_glow_config(tmp_path / "glow.json"), batch_size=4)
  full = enc.encode(SENTENCES)
  dims = np.arange(6)                               # the first 6: the fit sentences' (SENTENCES') top 6 axes
  spread = full.astype(np.float64).var(0)
  assert spread[:6].min() > spread[6:].max()
  np.testing.assert_array_equal(enc.encode(SENTENCES, truncate_dim=6), full[:, dims])
  ranges = enc.calibration.int8_ranges[:, dims]
  np.testing.assert_array_equal(enc.encode(SENTENCES, truncate_dim=6, precision="int8"),
                                st_layouts.quantize_embeddings(full[:, dims], "int8", ranges=ranges))
  queries = ["a man plays", "the dog"]
  want = code_search.semantic_search(enc.encode(queries)[:, dims], full[:, dims], 3, "binary", candidates=8,
                                     ranges=ranges)
  enc.truncate_dim = 6
  got = enc.semantic_search(queries, SENTENCES, top_k=3, precision="binary", candidates=8)
  assert [[h["corpus_id"] for h in row] for row in got] == [[h["corpus_id"] for h in row] for row in want]
  np.testing.assert_allclose([[h["score"] for h in row] for row in got],   # the same codes: scores to float rounding
                             [[h["score"] for h in row] for row in want], rtol=1e-6)
  enc.truncate_dim = None
  enc.export(str(tmp_path / "exp"), corpus=SENTENCES, search="binary", truncate_dim=6)
  exported = bert_flow_tf.ExportedEncoder(str(tmp_path / "exp"))
  np.testing.assert_allclose(exported.encode(SENTENCES, truncate_dim=6), full[:, dims], atol=1e-5)
  served = exported.search(queries, k=3, precision="binary", candidates=8)
  assert [[h["corpus_id"] for h in row] for row in served] == [[h["corpus_id"] for h in row] for row in want]
  np.testing.assert_allclose([[h["score"] for h in row] for row in served],
                             [[h["score"] for h in row] for row in want], atol=1e-5)
  assert tf.saved_model.contains_saved_model(str(tmp_path / "exp" / "binary_search" / "1"))
