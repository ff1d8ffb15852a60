"""Calibrated int8 ranges, binary search with int8 rescoring (numpy and SavedModel), and the text model's quantized
outputs, held to expectations computed here from the floats (sign mismatches, bucket middles), not from the code
under test."""
import os

import numpy as np
import pytest
import tensorflow as tf

from bert_flow_tf import exported_encoder
from bert_flow_tf.calibration import calibrator
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from bert_flow_tf.quantization import binary_search_model
from bert_flow_tf.quantization import graph_quantizer
from bert_flow_tf.quantization import code_search
from bert_flow_tf.quantization import corpus_codes
from bert_flow_tf.quantization import hamming_search
from bert_flow_tf.quantization import int8_ranges
from bert_flow_tf.quantization import st_layouts
from bert_flow_tf.serving import export
from bert_flow_tf.serving import graph_calibration
from bert_flow_tf.serving import op_audit
from tests.embedding.engine_vectors import engine_vectors
from tests.embedding.tiny_model import SENTENCES, tiny_model


def _read_back(x, ranges):
  """float64 [M, D]: the int8 codes of x read back to their bucket middles (code c holds [c + 128, c + 129) steps
  from lo)."""
  codes = st_layouts.quantize_embeddings(x, "int8", ranges=ranges).astype(np.float64)
  lo, hi = ranges.astype(np.float64)
  return lo + (codes + 128.5) * (hi - lo) / 255


def _sign_mismatches(q, x, ranges, rotation):
  """int [n, M]: the signs of (q - m) R that differ from those of x's codes read back, less m and turned by R; m
  the ranges' middle."""
  m = ranges.astype(np.float64).mean(axis=0)
  return (((q - m) @ rotation > 0)[:, None, :] != ((_read_back(x, ranges) - m) @ rotation > 0)[None, :, :]).sum(-1)


def _brute_force(q, x, ranges, k, candidates, rotation):
  """The expected (indices [n, k], scores [n, k]): sign mismatches (`_sign_mismatches`), the `candidates` fewest
  (lower index first on ties), rescored by the cosine of q and the codes read back."""
  distance = _sign_mismatches(q, x, ranges, rotation)                                   # [n, M]
  back = _read_back(x, ranges)
  back /= np.linalg.norm(back, axis=1, keepdims=True)
  out_ids, out_scores = [], []
  for row_q, row_d in zip(q.astype(np.float64), distance):
    cand = sorted(range(len(x)), key=lambda i, d=row_d: (d[i], i))[:candidates]
    cos = back[cand] @ (row_q / np.linalg.norm(row_q))
    order = sorted(range(len(cand)), key=lambda j, c=cos: (-c[j], j))[:k]
    out_ids.append([cand[j] for j in order])
    out_scores.append([cos[j] for j in order])
  return np.array(out_ids), np.array(out_scores)


@pytest.fixture(name="gaussian", params=[130, 400])
def fixture_gaussian(request):
  """130 dims: three words, the last one padded; 400: seven words (uint8 sums of 3 + 3 + 1 words in the graph)."""
  rng = np.random.default_rng(7)
  x = rng.normal(size=[600, request.param]).astype(np.float32)
  q = rng.normal(size=[5, request.param]).astype(np.float32)
  q = np.concatenate([q, -x[:1]])                      # all bits differ from x[0]: 400 > 255, no uint8 wrap
  return x, q, int8_ranges.fit_ranges(x)


def test_hamming_search_equals_brute_force_in_numpy_and_in_the_graph(gaussian):
  x, q, ranges = gaussian
  corpus = corpus_codes.CorpusCodes(len(x), ranges)
  for start in range(0, len(x), 128):                  # filled a block at a time
    corpus.add(x[start:start + 128])
  # At 130 dimensions the rotation fitted on the codes; at 400 a given random one (fitting there takes seconds;
  # sign_rotation_test holds the fit).
  given = np.linalg.qr(np.random.default_rng(5).normal(size=[x.shape[1]] * 2))[0] if x.shape[1] > 256 else None
  corpus.finish(rotation=given)
  rotation = corpus.rotation.astype(np.float64)
  np.testing.assert_allclose(rotation @ rotation.T, np.eye(x.shape[1]), atol=1e-5)      # a rotation
  want_ids, want_scores = _brute_force(q, x, ranges, 7, 40, rotation)
  got = hamming_search.search_codes(q, corpus, top_k=7, candidates=40)
  np.testing.assert_array_equal([[h["corpus_id"] for h in row] for row in got], want_ids)
  np.testing.assert_allclose([[h["score"] for h in row] for row in got], want_scores, atol=1e-6)
  index = binary_search_model.BinaryIndex(corpus)
  ids, scores = index.search_vectors(tf.constant(q), tf.constant(7), tf.constant(40))
  np.testing.assert_array_equal(ids.numpy(), want_ids)
  np.testing.assert_allclose(scores.numpy(), want_scores, atol=1e-6)
  every_candidate, _ = index.search_vectors(tf.constant(q), tf.constant(40), tf.constant(40))
  np.testing.assert_array_equal(every_candidate.numpy(), _brute_force(q, x, ranges, 40, 40, rotation)[0])
  # Without rescoring: the Hamming order, scored as the cosine of the rotated +-1 sign vectors.
  distance = _sign_mismatches(q, x, ranges, rotation)
  plain = hamming_search.search_codes(q, corpus, top_k=7, candidates=40, rescore=False)
  for row, d in zip(plain, distance):
    assert [h["corpus_id"] for h in row] == sorted(range(len(x)), key=lambda i, d=d: (d[i], i))[:7]
    assert [h["score"] for h in row] == [1 - 2 * d[h["corpus_id"]] / x.shape[1] for h in row]


def test_the_graphs_counting_select_is_top_k_with_the_lower_index_first_on_ties():
  distance = np.random.default_rng(2).integers(0, 12, size=5000).astype(np.int32)   # many ties
  for c in (1, 7, 333, 4999, 5000):
    want = sorted(range(len(distance)), key=lambda i: (distance[i], i))[:c]
    got = binary_search_model.nearest_by_count(tf.constant(distance), tf.constant(c), 11)
    np.testing.assert_array_equal(got.numpy(), want)


def test_rescoring_reorders_the_hamming_candidates():
  q = np.ones([1, 64], np.float32)
  same_signs = np.full(64, 0.1, np.float32)            # 0.1: over half an int8 bucket (0.04) from 0
  same_signs[0] = 10.                                   # Hamming 0, cosine 0.20
  two_flipped = np.ones(64, np.float32)
  two_flipped[:2] = -0.1                                # Hamming 2, cosine 0.98
  x = np.stack([same_signs, two_flipped, -np.ones(64, np.float32)])
  corpus = corpus_codes.CorpusCodes(len(x), np.array([[-10.] * 64, [10.] * 64], np.float32)).add(x)
  corpus.finish(rotation=np.eye(64))                    # the plain sign bits
  index = binary_search_model.BinaryIndex(corpus)
  for candidates, rescore, want in ((2, True, [1, 0]), (2, False, [0, 1]), (1, True, [0])):
    got = hamming_search.search_codes(q, corpus, top_k=len(want), candidates=candidates, rescore=rescore)
    assert [h["corpus_id"] for h in got[0]] == want
    if rescore:
      ids, _ = index.search_vectors(tf.constant(q), tf.constant(len(want)), tf.constant(candidates))
      assert ids.numpy().tolist() == [want]


@pytest.mark.parametrize("top_k,candidates,message", [
    (0, 10, "top_k must be an int >= 1, got 0"), (5, 2, r"candidates \(2\) must be at least top_k \(5\)"),
    (True, 10, "top_k must be an int >= 1, got True")])
def test_bad_k_is_one_line(top_k, candidates, message):
  x = np.random.default_rng(3).normal(size=[20, 8]).astype(np.float32)
  with pytest.raises(ValueError, match=message):
    hamming_search.search_codes(x[:2], corpus_codes.CorpusCodes.of(x, int8_ranges.fit_ranges(x)), top_k, candidates)


def test_each_precision_answers_top_k_hits():
  x = np.random.default_rng(4).normal(size=[20, 8]).astype(np.float32)
  for precision in ("float32", "binary"):  # float32's top_k once went to search.semantic_search's query_chunk_size
    assert [len(row) for row in code_search.semantic_search(x[:2], x, top_k=3, precision=precision)] == [3, 3]


def test_an_empty_corpus_finds_nothing_for_each_query():
  q = np.ones([2, 8], np.float32)
  ranges = np.array([[-1.] * 8, [1.] * 8], np.float32)
  for precision in ("float32", "binary"):  # as sentence-transformers' util.semantic_search: an empty list per query
    assert code_search.semantic_search(q, np.zeros([0, 8], np.float32), precision=precision,
                                       ranges=ranges) == [[], []], precision


def test_ranges_follow_the_gaussian_rule_and_stream_block_by_block(gaussian):
  x = gaussian[0] * np.linspace(0.5, 3., gaussian[0].shape[1], dtype=np.float32) + 2.
  ranges = int8_ranges.fit_ranges(x)
  mean, std = x.astype(np.float64).mean(0), x.astype(np.float64).std(0)
  np.testing.assert_allclose(ranges, [mean - 3.9 * std, mean + 3.9 * std], rtol=1e-6)
  np.testing.assert_allclose(int8_ranges.fit_ranges(iter([x[:77], x[77:300], x[300:]])), ranges, rtol=1e-5)
  with pytest.raises(ValueError, match="N >= 2"):
    int8_ranges.fit_ranges(x[:1])


@pytest.mark.parametrize("method", ["whitening", "whitening-5"])
def test_ranges_are_fitted_with_the_calibration_and_saved_with_it(gaussian, method, tmp_path):
  x = gaussian[0][:, :16] @ np.random.default_rng(1).normal(size=[16, 16]).astype(np.float32) + 3.
  calibration = calibrator.fit(method, x)
  want = int8_ranges.fit_ranges(calibration.transform(x))
  assert calibration.int8_ranges.shape == (2, calibration.dim)
  np.testing.assert_array_equal(calibration.int8_ranges, want)
  calibration.save(str(tmp_path / "cal"))
  np.testing.assert_array_equal(calibrator.load_calibration(str(tmp_path / "cal")).int8_ranges, want)
  os.remove(tmp_path / "cal" / int8_ranges.RANGES_FILE)      # a calibration saved before ranges existed
  assert calibrator.load_calibration(str(tmp_path / "cal")).int8_ranges is None
  np.save(tmp_path / "cal" / int8_ranges.RANGES_FILE, np.zeros([3, 4], np.float32))
  with pytest.raises(ValueError, match="int8_ranges.npy: not int8 ranges"):
    calibrator.load_calibration(str(tmp_path / "cal"))
  np.save(tmp_path / "cal" / int8_ranges.RANGES_FILE, np.zeros([2, calibration.dim + 1], np.float32))
  with pytest.raises(ValueError, match="int8_ranges.npy: int8 ranges of width"):
    calibrator.load_calibration(str(tmp_path / "cal"))
  (tmp_path / "cal" / int8_ranges.RANGES_FILE).write_bytes(b"")  # an empty file: one line, not numpy's EOFError
  with pytest.raises(ValueError, match="int8_ranges.npy: unreadable int8 ranges"):
    calibrator.load_calibration(str(tmp_path / "cal"))


@pytest.fixture(scope="module", name="tiny_embedder")
def fixture_tiny_embedder(tmp_path_factory):
  return SentenceEmbedder(tiny_model(tmp_path_factory.mktemp("qs") / "bert"), "last-avg", 16)


@pytest.mark.slow  # exports and loads a SavedModel: over 3.5 s
def test_the_binary_search_saved_model_answers_as_numpy(tiny_embedder, tmp_path):
  vectors = engine_vectors(tiny_embedder, SENTENCES)
  calibration = calibrator.fit("whitening", vectors)
  flow = graph_calibration.Affine(calibration.method, *calibration.affine())
  width = 12                                           # truncated to the first 12 whitened dimensions
  corpus_vectors = calibration.transform(vectors)[:, :width]
  ranges = calibration.int8_ranges[:, :width]
  blocks = ((SENTENCES[s:s + 5], corpus_vectors[s:s + 5]) for s in range(0, len(SENTENCES), 5))
  path = binary_search_model.export_binary_search(tiny_embedder, flow, blocks, len(SENTENCES), ranges, str(tmp_path))
  assert path == str(tmp_path / "binary_search" / "1")
  audit = op_audit.audit_saved_model(path)
  assert audit.servable() and {"BitwiseXor", "PopulationCount"} <= set(audit.ops["core"])
  serve = tf.saved_model.load(path).signatures["serving_default"]
  queries = ["a man plays", "the dog", "guitar guitar"]
  out = serve(queries=tf.constant(queries), k=tf.constant(4), candidates=tf.constant(9))
  want = hamming_search.search_codes(calibration.transform(engine_vectors(tiny_embedder, queries))[:, :width],
                                     corpus_codes.CorpusCodes.of(corpus_vectors, ranges), 4, 9)
  np.testing.assert_array_equal(out["indices"].numpy(), [[h["corpus_id"] for h in row] for row in want])
  np.testing.assert_allclose(out["scores"].numpy(), [[h["score"] for h in row] for row in want], atol=1e-5)
  assert out["sentences"].numpy()[0, 0].decode() == SENTENCES[want[0][0]["corpus_id"]]
  with pytest.raises(tf.errors.InvalidArgumentError, match="candidates >= k"):
    serve(queries=tf.constant(queries), k=tf.constant(4), candidates=tf.constant(3))
  with pytest.raises(ValueError, match="23 corpus vectors added to a corpus of 5"):
    binary_search_model.export_binary_search(tiny_embedder, flow, [(SENTENCES, corpus_vectors)], 5, ranges,
                                             str(tmp_path / "other"))


@pytest.mark.slow  # exports SavedModels
def test_the_text_model_emits_one_quantized_output_per_precision(tiny_embedder, tmp_path):
  vectors = engine_vectors(tiny_embedder, SENTENCES)
  ranges = int8_ranges.fit_ranges(vectors)
  quantizer = graph_quantizer.GraphQuantizer(("int8", "binary"), ranges, 16)
  paths = export.export_models(tiny_embedder, None, str(tmp_path), quantizer=quantizer)
  out = exported_encoder.load_text_model(paths["text"]).signatures["serving_default"](sentences=tf.constant(SENTENCES))
  assert sorted(out) == ["embeddings", "embeddings_binary", "embeddings_int8"]
  embeddings = out["embeddings"].numpy()
  np.testing.assert_array_equal(out["embeddings_int8"].numpy(),
                                st_layouts.quantize_embeddings(embeddings, "int8", ranges=ranges))
  np.testing.assert_array_equal(out["embeddings_binary"].numpy(), st_layouts.quantize_embeddings(embeddings,
                                                                                                 "binary"))
  with pytest.raises(ValueError, match="precision 'int4' is not supported"):
    graph_quantizer.GraphQuantizer(("int4",), ranges, 16)
  with pytest.raises(ValueError, match=r"int8 outputs need int8 ranges \[2, 16\]"):
    graph_quantizer.GraphQuantizer(("int8",), None, 16)


@pytest.mark.slow
def test_an_encoders_corpus_exports_block_by_block_and_exported_encoder_searches_it(tmp_path, monkeypatch):
  import bert_flow_tf  # pylint: disable=import-outside-toplevel
  enc = bert_flow_tf.SentenceEncoder(SentenceEmbedder(tiny_model(tmp_path / "bert"), "last-avg", 16),
                                     cache_dir=str(tmp_path / "store"))
  enc.fit(SENTENCES, method="whitening")
  ranges = enc.calibration.int8_ranges
  queries = ["a man plays", "the dog"]
  assert enc.semantic_search(queries, SENTENCES, top_k=3, precision="binary", candidates=8) == \
      code_search.semantic_search(enc.encode(queries), enc.encode(SENTENCES), 3, "binary", candidates=8,
                                  ranges=ranges)
  np.testing.assert_array_equal(enc.encode(queries, precision="int8"),   # the saved ranges, not the call's
                                st_layouts.quantize_embeddings(enc.encode(queries), "int8", ranges=ranges))
  np.testing.assert_array_equal(enc.encode(queries, precision="uint8", truncate_dim=10),
                                st_layouts.quantize_embeddings(enc.encode(queries)[:, :10], "uint8",
                                                               ranges=ranges[:, :10]))
  np.testing.assert_array_equal(enc.encode(queries, precision="int8", normalize_embeddings=True),  # sentence_codes
                                enc.encode(queries, precision="int8"))
  monkeypatch.setattr(binary_search_model, "BLOCK_ROWS", 4)     # 23 sentences in 6 blocks
  paths = enc.export(str(tmp_path / "exp"), corpus=SENTENCES, search="binary", truncate_dim=10,
                     precisions=("int8", "binary"))
  assert sorted(paths) == ["binary_search", "ids", "info", "text"]
  served = bert_flow_tf.ExportedEncoder(str(tmp_path / "exp"))
  got = served.search(queries, k=3, precision="binary", candidates=8)
  want = code_search.semantic_search(enc.encode(queries)[:, :10], enc.encode(SENTENCES)[:, :10], 3,
                                     "binary", candidates=8, ranges=ranges[:, :10])
  assert [[h["corpus_id"] for h in row] for row in got] == [[h["corpus_id"] for h in row] for row in want]
  np.testing.assert_allclose([[h["score"] for h in row] for row in got],
                             [[h["score"] for h in row] for row in want], atol=1e-5)
  assert got[0][0]["sentence"] == SENTENCES[got[0][0]["corpus_id"]]
  out = served.text_model.signatures["serving_default"](sentences=tf.constant(queries))
  np.testing.assert_array_equal(out["embeddings_int8"].numpy(),
                                st_layouts.quantize_embeddings(out["embeddings"].numpy(), "int8", ranges=ranges))
  assert served.search(queries, k=3, candidates=8) == got  # precision None: the export's one search model
  with pytest.raises(ValueError, match=r"^this export's corpus is searched in binary only: pass precision='binary', "
                                       r"or export it with search='float32'$"):
    served.search(queries, precision="float32")
  with pytest.raises(ValueError, match="nprobe needs a binary search export with an inverted-file index"):
    served.search(queries, precision="binary", nprobe=2)                 # 23 sentences: the exact scan
  with pytest.raises(ValueError, match="search precision 'int8' is not supported"):
    served.search(queries, precision="int8")
  with pytest.raises(ValueError, match="search precision 'int8' is not supported"):
    enc.semantic_search(queries, SENTENCES, precision="int8")
  # One candidates rule on every search path: None is max(100, top_k); fewer than top_k is one line.
  assert len(enc.semantic_search(queries, SENTENCES, top_k=20, precision="binary")[0]) == 20
  assert len(served.search(queries, k=20, precision="binary")[0]) == 20
  for call in (lambda: enc.semantic_search(queries, SENTENCES, top_k=5, precision="binary", candidates=2),
               lambda: served.search(queries, k=5, precision="binary", candidates=2),
               lambda: code_search.semantic_search(enc.encode(queries), enc.encode(SENTENCES), 5, "binary",
                                                   candidates=2)):
    with pytest.raises(ValueError, match=r"^candidates \(2\) must be at least top_k \(5\)"):
      call()
  with pytest.raises(ValueError, match=r"truncate_dim must be an int in 1..16 \(the embedding width\), got 17"):
    enc.export(str(tmp_path / "other"), corpus=SENTENCES, search="binary", truncate_dim=17)
