"""The inverted-file binary index (numpy and in the SavedModel's graph), held to the exact scan
(`hamming_search.search_codes`, itself held to a brute force in binary_search_test) and to exact fp32 search."""
import numpy as np
import pytest
import tensorflow as tf

from bert_flow_tf import exported_encoder
from bert_flow_tf import search
from bert_flow_tf.calibration import calibrator
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from bert_flow_tf.quantization import binary_search_model
from bert_flow_tf.quantization import code_search
from bert_flow_tf.quantization import corpus_codes
from bert_flow_tf.quantization import graph_ops
from bert_flow_tf.quantization import hamming_search
from bert_flow_tf.quantization import int8_ranges
from bert_flow_tf.quantization import ivf_index
from bert_flow_tf.quantization import ivf_probe
from bert_flow_tf.serving import graph_calibration
from bert_flow_tf.serving import op_audit
from bert_flow_tf.serving import session_loader
from tests.embedding.engine_vectors import engine_vectors
from tests.embedding.tiny_model import SENTENCES, tiny_model


def _ids(hits):
  return [[h["corpus_id"] for h in row] for row in hits]


def _scores(hits):
  return [[h["score"] for h in row] for row in hits]


@pytest.fixture(scope="module", name="gaussian")
def fixture_gaussian():
  """1,500 Gaussian vectors of 70 dims (two words, the last one padded), 16 lists."""
  rng = np.random.default_rng(3)
  x = rng.normal(size=[1500, 70]).astype(np.float32)
  q = rng.normal(size=[5, 70]).astype(np.float32)
  corpus = corpus_codes.CorpusCodes.of(x, int8_ranges.fit_ranges(x))
  return x, q, corpus, ivf_index.build(corpus, 16)


@pytest.fixture(scope="module", name="clustered")
def fixture_clustered():
  """4,000 vectors of 32 dims around 40 directions; queries near 8 of the corpus vectors."""
  rng = np.random.default_rng(5)
  centres = rng.normal(size=[40, 32])
  x = (centres[rng.integers(0, 40, 4000)] + 0.35 * rng.normal(size=[4000, 32])).astype(np.float32)
  q = x[rng.choice(4000, 30, replace=False)] + 0.1 * rng.normal(size=[30, 32]).astype(np.float32)
  return x, q.astype(np.float32)


@pytest.mark.parametrize("rescore", [True, False])
def test_probing_every_list_returns_the_exact_scan_in_numpy_and_in_the_graph(gaussian, rescore):
  _, q, corpus, index = gaussian
  want = hamming_search.search_codes(q, corpus, top_k=7, candidates=60, rescore=rescore)
  assert ivf_index.search_index(q, index, top_k=7, candidates=60, nprobe=16, rescore=rescore) == want
  if rescore:
    ids, scores = ivf_probe.IvfBinaryIndex(index).search_vectors(tf.constant(q), tf.constant(7), tf.constant(60),
                                                                 tf.constant(16))
    np.testing.assert_array_equal(ids.numpy(), _ids(want))
    np.testing.assert_allclose(scores.numpy(), _scores(want), atol=1e-5)


def test_the_graphs_hamming_counts_every_bit_at_any_width():
  for words in (1, 3, 4, 7):                          # every bit differs: 64 .. 448 in all (past uint8's 255)
    columns = [tf.fill([5], tf.constant(-1, tf.int64))] * words
    np.testing.assert_array_equal(graph_ops.hamming(columns, tf.zeros([words], tf.int64)).numpy(), [64 * words] * 5)


def test_the_index_stores_each_vector_once_list_by_list(gaussian):
  _, _, corpus, index = gaussian
  assert sorted(index.ids) == list(range(1500)) and index.offsets[0] == 0 and index.offsets[-1] == 1500
  np.testing.assert_array_equal(index.words, corpus.words[index.ids])
  np.testing.assert_array_equal(index.codes, corpus.codes[index.ids])
  back = corpus_codes.dequantize(index.codes, index.ranges)
  lists = np.repeat(np.arange(16), np.diff(index.offsets))
  np.testing.assert_array_equal(lists, np.argmax(back @ index.centroids.T, axis=1))      # the nearest centroid
  for start, end in zip(index.offsets[:-1], index.offsets[1:]):
    assert np.all(np.diff(index.ids[start:end]) > 0)                                       # ascending within a list
  np.testing.assert_allclose(np.linalg.norm(index.centroids, axis=1), 1, atol=1e-5)


def test_few_probes_find_the_exact_neighbours_of_a_clustered_set_and_the_graph_agrees(clustered):
  x, q = clustered
  ranges = int8_ranges.fit_ranges(x)
  index = ivf_index.build(corpus_codes.CorpusCodes.of(x, ranges), 32)
  want = _ids(search.semantic_search(q, x, 10))                                             # exact fp32
  got = ivf_index.search_index(q, index, top_k=10, candidates=200, nprobe=4)
  assert np.mean([len(set(g) & set(w)) / 10 for g, w in zip(_ids(got), want)]) >= 0.95
  one = ivf_index.search_index(q, index, top_k=10, candidates=10, nprobe=1, rescore=False)
  assert np.mean([len(set(g) & set(w)) / 10 for g, w in zip(_ids(one), want)]) < 0.9     # the probes matter
  ids, _ = ivf_probe.IvfBinaryIndex(index).search_vectors(tf.constant(q), tf.constant(10), tf.constant(200),
                                                          tf.constant(4))
  np.testing.assert_array_equal(ids.numpy(), _ids(got))


def test_a_query_probes_more_lists_when_its_first_hold_fewer_than_the_candidates(gaussian):
  _, q, corpus, index = gaussian
  sizes = np.diff(index.offsets)
  scores = search.normalize(q[:1]) @ index.centroids.T
  lists = ivf_index.probed_lists(scores[0], sizes, 1, int(sizes.max()) + 1)
  assert len(lists) >= 2 and sizes[lists].sum() >= sizes.max() + 1
  got = ivf_index.search_index(q, index, top_k=5, candidates=1500, nprobe=1)                 # every vector
  assert got == hamming_search.search_codes(q, corpus, top_k=5, candidates=1500)


def test_bad_lists_and_probes_are_one_line(gaussian):
  _, q, corpus, index = gaussian
  with pytest.raises(ValueError, match=r"num_lists must be an int in 0..1500 \(0: the exact scan"):
    ivf_index.build(corpus, 5000)
  with pytest.raises(ValueError, match="nprobe must be an int >= 1, got 0"):
    ivf_index.search_index(q, index, nprobe=0)
  with pytest.raises(ValueError, match="an inverted-file index needs at least one list"):
    ivf_index.build(corpus, 0)
  assert ivf_index.suggested_num_lists(100_000) == 256 and ivf_index.suggested_num_lists(1_000_000) == 1024
  assert ivf_index.default_nprobe(1024) == 384 and ivf_index.default_nprobe(2) == 1


def test_semantic_search_scans_every_code_unless_asked_for_lists(gaussian):
  x, q, corpus, _ = gaussian
  exact = hamming_search.search_codes(q, corpus, 5, 50)
  assert code_search.semantic_search(q, x, 5, "binary", candidates=50, ranges=corpus.ranges) == exact
  got = code_search.semantic_search(q, x, 5, "binary", candidates=50, ranges=corpus.ranges, num_lists=32, nprobe=2)
  assert got == ivf_index.search_index(q, ivf_index.build(corpus, 32), 5, 50, nprobe=2) and got != exact
  with pytest.raises(ValueError, match=r"^nprobe needs an inverted-file index \(num_lists >= 1\)"):
    code_search.semantic_search(q, x, 5, "binary", ranges=corpus.ranges, nprobe=2)


@pytest.fixture(scope="module", name="tiny_embedder")
def fixture_tiny_embedder(tmp_path_factory):
  return SentenceEmbedder(tiny_model(tmp_path_factory.mktemp("ivf") / "bert"), "last-avg", 16)


@pytest.mark.slow  # exports a SavedModel, loads it twice
def test_the_exported_index_answers_as_numpy_through_both_loaders_and_passes_the_op_audit(tiny_embedder, tmp_path):
  vectors = engine_vectors(tiny_embedder, SENTENCES)
  calibration = calibrator.fit("whitening", vectors)
  corpus_vectors, ranges = calibration.transform(vectors)[:, :12], calibration.int8_ranges[:, :12]
  blocks = ((SENTENCES[s:s + 5], corpus_vectors[s:s + 5]) for s in range(0, len(SENTENCES), 5))
  path = binary_search_model.export_binary_search(
      tiny_embedder, graph_calibration.Affine(calibration.method, *calibration.affine()), blocks, len(SENTENCES),
      ranges, str(tmp_path), num_lists=4, nprobe=2)
  audit = op_audit.audit_saved_model(path)
  assert audit.servable() and {"RaggedRange", "PopulationCount"} <= set(audit.ops["core"])
  index = ivf_index.build(corpus_codes.CorpusCodes.of(corpus_vectors, ranges), 4)   # in memory, at once
  queries = ["a man plays", "the dog", "guitar guitar"]
  q = calibration.transform(engine_vectors(tiny_embedder, queries))[:, :12]
  loaded = tf.saved_model.load(path)
  np.testing.assert_array_equal(loaded.index.ids.numpy(), index.ids)          # built from blocks = in memory
  np.testing.assert_array_equal(loaded.index.centroids.numpy(), index.centroids)
  session = session_loader.SessionModel(path)
  for nprobe in (1, 4):
    want = ivf_index.search_index(q, index, 4, 9, nprobe)
    inputs = {"queries": queries, "k": 4, "candidates": 9, "nprobe": nprobe}
    out = loaded.signatures["search_probe"](**{k: tf.constant(v) for k, v in inputs.items()})
    np.testing.assert_array_equal(out["indices"].numpy(), _ids(want))
    np.testing.assert_allclose(out["scores"].numpy(), _scores(want), atol=1e-5)
    np.testing.assert_array_equal(session.run("search_probe", inputs)["indices"], _ids(want))
  want = ivf_index.search_index(q, index, 4, 9, nprobe=2)                                  # the default nprobe
  out = session.run("serving_default", {"queries": queries, "k": 4, "candidates": 9})
  np.testing.assert_array_equal(out["indices"], _ids(want))
  assert out["sentences"][0, 0].decode() == SENTENCES[want[0][0]["corpus_id"]]
  session.close()
  with pytest.raises(tf.errors.InvalidArgumentError, match="nprobe >= 1"):
    loaded.signatures["search_probe"](queries=tf.constant(queries), k=tf.constant(4), candidates=tf.constant(9),
                                      nprobe=tf.constant(0))


@pytest.mark.slow  # an encoder, its store and an export
def test_an_encoders_stored_corpus_exports_its_index_block_by_block(tmp_path, monkeypatch):
  import bert_flow_tf  # pylint: disable=import-outside-toplevel
  enc = bert_flow_tf.SentenceEncoder(SentenceEmbedder(tiny_model(tmp_path / "bert"), "last-avg", 16),
                                     cache_dir=str(tmp_path / "store"))
  enc.fit(SENTENCES, method="whitening")
  monkeypatch.setattr(binary_search_model, "BLOCK_ROWS", 4)     # 23 sentences in 6 blocks, read back from the store
  enc.export(str(tmp_path / "exp"), corpus=SENTENCES, search="binary", truncate_dim=10, num_lists=4)
  vectors = enc.encode(SENTENCES)[:, :10]
  index = ivf_index.build(corpus_codes.CorpusCodes.of(vectors, enc.calibration.int8_ranges[:, :10]), 4)
  served = exported_encoder.ExportedEncoder(str(tmp_path / "exp"))
  for name in ("ids", "offsets", "codes", "centroids"):
    np.testing.assert_array_equal(getattr(served.binary_search_model.index, name).numpy(), getattr(index, name))
  np.testing.assert_array_equal(served.binary_search_model.index.words.numpy(), index.words.T)   # a row per word
  got = served.search(["a man plays"], k=3, precision="binary", candidates=8, nprobe=1)
  assert _ids(got) == _ids(ivf_index.search_index(enc.encode(["a man plays"])[:, :10], index, 3, 8, 1))
  # Counts past int32 are the whole corpus (the graph's min with M), never wrapped to 3 or a negative k.
  everything = served.search(["a man plays"], k=len(SENTENCES), candidates=len(SENTENCES), nprobe=4)
  assert len(everything[0]) == len(SENTENCES)
  for k, candidates, nprobe in ((2 ** 32 + 3, None, None), (2 ** 31, 2 ** 32 + 5, 2 ** 32 + 1),
                                (np.int64(2 ** 40), np.int64(2 ** 40), np.int64(2 ** 40))):
    assert served.search(["a man plays"], k=k, candidates=candidates, nprobe=nprobe) == everything
