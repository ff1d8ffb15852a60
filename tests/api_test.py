"""The Python API: SentenceEncoder and ExportedEncoder on the tiny random BERT, and README's example as written."""
import ast
import json
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import bert_flow_tf
import glow
from bert_flow_tf import loaders
from bert_flow_tf.calibration import baselines
from bert_flow_tf.calibration import flow_fitting
from bert_flow_tf.calibration import pair_sources
from bert_flow_tf.data import sts
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from bert_flow_tf.loaders import tf1_checkpoint
from bert_flow_tf.serving import op_audit
from bert_flow_tf.serving import session_loader
from bert_flow_tf.serving import warmup
from bert_flow_tf.utils import io_utils
from tests import tiny_runs
from tests.embedding.engine_vectors import engine_vectors
from tests.embedding.tiny_model import SENTENCES, tiny_model

REPO = pathlib.Path(__file__).resolve().parents[1]
SentenceEncoder = bert_flow_tf.SentenceEncoder
QUERIES = ["the guitar plays a man", "dog runs", "a man"]


@pytest.fixture(scope="module", name="tiny")
def fixture_tiny(tmp_path_factory):
  """The tiny BERT as an HF directory on disk, and a tiny Glow config (width 16 = first-last-avg's D)."""
  tmp = tmp_path_factory.mktemp("api")
  flow_config = tmp / "tiny_flow.json"
  flow_config.write_text(json.dumps({"coupling_width": 8, "n_levels": 2, "depth": 1}))
  return {"dir": tiny_runs.tiny_model_dir(tmp), "flow_config": str(flow_config)}


def _encoder(tiny, pooling="first-last-avg"):
  return SentenceEncoder.from_pretrained(tiny["dir"], pooling=pooling, max_seq_length=16)


def test_encode_a_str_a_list_per_call_batch_and_normalized(tiny, capfd):
  enc = _encoder(tiny)
  want = engine_vectors(SentenceEmbedder(loaders.load_model(tiny["dir"]), "first-last-avg", 16), SENTENCES)
  got = enc.encode(SENTENCES, batch_size=4)
  assert got.shape == (len(SENTENCES), 16) and got.dtype == np.float32
  np.testing.assert_allclose(got, want, atol=1e-6)
  one = enc.encode("a man plays the guitar .")  # one sentence, not its characters
  assert one.shape == (16,)
  np.testing.assert_allclose(one, want[0], atol=1e-6)
  unit = enc.encode(SENTENCES[:3], normalize_embeddings=True)
  np.testing.assert_allclose(unit, want[:3] / np.linalg.norm(want[:3], axis=1, keepdims=True), atol=1e-6)
  assert enc.encode([]).shape == (0, 16)
  assert "encoding" not in capfd.readouterr().err  # no progress line for short inputs
  with pytest.raises(ValueError, match="item 1 is int: 3"):
    enc.encode(["a man", 3])


@pytest.mark.slow
def test_fit_flow_then_save_and_load_bit_for_bit(tiny, tmp_path, monkeypatch):
  enc = _encoder(tiny)
  assert enc.fit(SENTENCES, flow_config=tiny["flow_config"], batch_size=4) is enc
  flow = enc.calibration
  assert flow.method == "flow" and flow.summary["num_steps"] == 12 // 4  # 23 rows -> 12 pairs -> 3 steps
  raw = enc.encode_raw(SENTENCES)
  z = enc.encode(SENTENCES)
  assert np.abs(z - raw).max() > 1e-3
  np.testing.assert_array_equal(z, glow.transform(flow.glow, raw) @ flow.axes)  # the latent on its principal axes
  # The pairs are consecutive rows, the odd last one with the first (as run_flow.py pairs a sentences file).
  rows_a, rows_b = list(range(0, 23, 2)), list(range(1, 23, 2)) + [0]
  ref, _ = flow_fitting.fit_flow(pair_sources.CachedPairs(raw[rows_a], raw[rows_b]),
                                 flow_fitting.FlowFitConfig(flow_model_config=tiny["flow_config"], batch_size=4),
                                 str(tmp_path / "ref"), provenance={"sentence_embedding_type": "first-last-avg",
                                                                    "max_seq_length": 16})
  np.testing.assert_array_equal(z, glow.transform(ref, raw) @ flow.axes)
  # A flow directory as run_flow.py leaves it, checked against the encoder's pooling; its flow.json read once.
  fresh, reads, read = _encoder(tiny), [], io_utils.read_json_object
  monkeypatch.setattr(io_utils, "read_json_object", lambda path, missing: reads.append(path) or read(path, missing))
  bare = fresh.load_flow(str(tmp_path / "ref")).calibration   # fit_flow's folder alone: no axes fitted beside it
  assert bare.axes is None
  np.testing.assert_array_equal(bare.transform(raw) @ flow.axes, z)
  assert reads == [str(tmp_path / "ref" / "flow.json")]
  with pytest.raises(ValueError, match=r"sentence_embedding_type=cls \(the flow was fitted with first-last-avg\)"):
    _encoder(tiny, pooling="cls").load_flow(str(tmp_path / "ref"))

  enc.save(str(tmp_path / "enc"))
  enc.save(str(tmp_path / "enc"))  # replaces the first atomically
  assert sorted(os.listdir(tmp_path)) == ["enc", "ref"]
  loaded = SentenceEncoder.load(str(tmp_path / "enc"))
  assert loaded.fingerprint == enc.fingerprint and loaded.calibration.method == "flow"
  # Bit for bit: the same raw vectors (a fresh encoder batches QUERIES as `loaded` does; `enc` has some of them
  # cached from other batches, which changes their last float bits) give the same calibrated vectors.
  fresh_raw = _encoder(tiny).encode_raw(QUERIES)
  np.testing.assert_array_equal(loaded.encode(QUERIES), flow.transform(fresh_raw))
  np.testing.assert_array_equal(loaded.calibration.transform(raw), z)
  # The fingerprint is of the content: the same weights loaded another way are accepted.
  same = SentenceEncoder.load(str(tmp_path / "enc"), model=tiny_model(tmp_path / "same"))
  np.testing.assert_array_equal(same.calibration.transform(raw), z)


def test_whitening_k_fit_save_load(tiny, tmp_path):
  enc = _encoder(tiny).fit(SENTENCES, method="whitening-4")
  raw = enc.encode_raw(SENTENCES)
  assert enc.dim == 4
  np.testing.assert_allclose(enc.encode(SENTENCES), baselines.Whitening(4).fit(raw).transform(raw), atol=1e-5)
  loaded = SentenceEncoder.load(enc.save(str(tmp_path / "w4")))
  np.testing.assert_array_equal(loaded.calibration.transform(raw), enc.encode(SENTENCES))
  with pytest.raises(ValueError, match=r"unknown calibration method 'pca'; allowed: \"flow\", \"whitening\""):
    enc.fit(SENTENCES, method="pca")


@pytest.mark.slow
def test_export_of_a_whitening_k_encoder(tiny, tmp_path):
  enc = _encoder(tiny).fit(SENTENCES, method="whitening-4")
  enc.export(str(tmp_path / "export"))
  exported = bert_flow_tf.ExportedEncoder(str(tmp_path / "export"))
  assert exported.info["calibration"] == "whitening-4" and exported.dim == 4 and exported.info["flow"] is None
  want = enc.encode(SENTENCES)
  assert np.abs(want).max() > 0.5  # whitened: O(1) values, where 1e-4 is a real check
  np.testing.assert_allclose(exported.encode(SENTENCES), want, atol=1e-4)
  with pytest.raises(TypeError, match=r"^len\(model\): a sentence-transformers model is a list of torch modules"):
    len(exported)  # StApi's refusals (tests/st_api_test.py) answer for an export too


def test_load_refuses_a_calibration_of_another_model_or_pooling(tiny, tmp_path):
  saved = _encoder(tiny).fit(SENTENCES, method="whitening").save(str(tmp_path / "w"))
  other = tiny_model(tmp_path / "other")
  other.encoder.variables[0].assign_add(np.full(other.encoder.variables[0].shape, 1e-3, np.float32))
  with pytest.raises(ValueError) as refused:
    SentenceEncoder.load(saved, model=other)
  message = str(refused.value)
  assert "\n" not in message and message.startswith(f"{saved} was saved from {tiny['dir']} (pooling first-last-avg")
  fingerprints = re.findall(r"fingerprint ([0-9a-f]{16})", message)
  assert len(fingerprints) == 2 and fingerprints[0] != fingerprints[1]
  # The same weights in another file format are the same model.
  source = tiny_model(tmp_path / "tf1_source")
  tf1_dir = str(tmp_path / "tf1")
  tf1_checkpoint.save_tf1_checkpoint(source.encoder, source.config, tf1_dir, vocab_file=source.vocab_file,
                                     allow_exact_gelu=True)
  assert SentenceEncoder.load(saved, model=tf1_dir).calibration.method == "whitening"
  with pytest.raises(ValueError, match=r"pooling first-last-avg, max_seq_length 16, .* not from this encoder's "
                                       r".* \(pooling cls, max_seq_length 16"):
    _encoder(tiny, pooling="cls").load_calibration(saved)


def test_similarity_matrix_and_semantic_search(tiny):
  enc = _encoder(tiny).fit(SENTENCES, method="whitening")
  v = enc.encode(SENTENCES).astype(np.float64)
  unit = v / np.linalg.norm(v, axis=1, keepdims=True)
  want = unit[:3] @ unit.T  # [3, 23], float64
  sim = enc.similarity(SENTENCES[:3], SENTENCES)
  assert sim.shape == (3, len(SENTENCES)) and sim.dtype == np.float32
  np.testing.assert_allclose(sim, want, atol=1e-5)
  np.testing.assert_allclose(enc.similarity(v[:3], v), want, atol=1e-5)
  np.testing.assert_allclose(enc.similarity(SENTENCES[1], SENTENCES), want[1:2], atol=1e-5)
  hits = enc.semantic_search(SENTENCES[:3], SENTENCES, top_k=5)
  for row, got in zip(want, hits):
    ranked = sorted(range(len(row)), key=lambda i: (-round(row[i], 5), i))[:5]
    assert [h["corpus_id"] for h in got] == ranked
    np.testing.assert_allclose([h["score"] for h in got], row[ranked], atol=1e-5)
  assert [h["corpus_id"] for h in hits[0][:2]] == [0, 2]  # the duplicate sentence, lower index first
  assert enc.semantic_search(SENTENCES[:3], v, top_k=5) == hits
  assert len(enc.semantic_search("dog", SENTENCES, top_k=100)[0]) == len(SENTENCES)
  with pytest.raises(ValueError, match="top_k must be an int >= 1, got 0"):
    enc.semantic_search("dog", SENTENCES, top_k=0)


@pytest.mark.slow
def test_export_with_a_corpus_serves_encode_and_search(tiny, tmp_path):
  """The export's text model through ExportedEncoder, and its search model through ExportedEncoder and the TF1
  session loader (the model server's way), against SentenceEncoder in Python."""
  enc = _encoder(tiny).fit(SENTENCES, flow_config=tiny["flow_config"], batch_size=4)
  corpus = tmp_path / "corpus.txt"
  corpus.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
  paths = enc.export(str(tmp_path / "export"), corpus=str(corpus))
  assert sorted(os.listdir(tmp_path / "export")) == ["export_info.json", "ids", "search", "text"]
  exported = bert_flow_tf.ExportedEncoder(str(tmp_path / "export"))
  np.testing.assert_allclose(exported.encode(SENTENCES), enc.encode(SENTENCES), atol=1e-5)
  assert exported.encode("dog").shape == (16,)
  served_bits = exported.encode(SENTENCES[:5], convert_to_tensor=True, precision="ubinary", truncate_dim=8)
  assert served_bits.dtype == tf.uint8 and served_bits.shape == (5, 1)  # sentence-transformers' encode arguments
  with pytest.raises(ValueError, match="an export serves sentence vectors only"):
    exported.encode(["dog"], output_value="token_embeddings")

  want = enc.semantic_search(QUERIES, SENTENCES, top_k=4)
  got = exported.search(QUERIES, k=4)
  session = session_loader.SessionModel(paths["search"])
  served = session.run("serving_default", {"queries": QUERIES, "k": 4})
  warmup_logs = warmup.read(paths["search"])  # the TF Serving warm-up requests run as they are
  assert len(warmup_logs) == 2
  for log in warmup_logs:
    signature, inputs = warmup.request_inputs(log)
    assert session.run(signature, inputs)["indices"].shape == (len(inputs["queries"]), 3)
  session.close()
  for q, (w, g) in enumerate(zip(want, got)):
    ids = [h["corpus_id"] for h in w]
    assert [h["corpus_id"] for h in g] == ids and served["indices"][q].tolist() == ids
    np.testing.assert_allclose([h["score"] for h in g], [h["score"] for h in w], atol=1e-5)
    np.testing.assert_allclose(served["scores"][q], [h["score"] for h in w], atol=1e-5)
    assert [h["sentence"] for h in g] == [SENTENCES[i] for i in ids]
    assert [s.decode() for s in served["sentences"][q]] == [SENTENCES[i] for i in ids]
  assert len(exported.search("dog", k=50)[0]) == len(SENTENCES)  # k capped at the corpus size
  assert exported.search(b"dog", k=3) == exported.search(np.array(["dog"]), k=3) == exported.search("dog", k=3)
  for k in (2 ** 31, 2 ** 32 + 3, np.int64(2 ** 40)):  # past int32 too, never wrapped
    assert exported.search("dog", k=k) == exported.search("dog", k=50)
  for k in (0, -2, 1.5, True):
    with pytest.raises(ValueError, match=f"^k must be an int >= 1, got {k!r}$"):  # one line, not TF's error
      exported.search("dog", k=k)
  np.testing.assert_allclose(exported.similarity(np.array(QUERIES), SENTENCES[:2]),  # numpy strings
                             enc.similarity(QUERIES, SENTENCES[:2]), atol=1e-5)

  audit = op_audit.audit_saved_model(paths["search"])
  assert audit.servable(), audit.problems
  assert {"MatMul", "TopKV2"} <= set(audit.ops[op_audit.CORE])
  assert audit.ops[op_audit.TEXT] == ["FastBertNormalize", "FastWordpieceTokenizeWithOffsets", "NormalizeUTF8"]


def test_importing_the_data_package_does_not_load_tensorflow():
  code = "import sys, bert_flow_tf.data; assert 'tensorflow' not in sys.modules, 'tensorflow imported'"
  result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
  assert result.returncode == 0, result.stderr[-2000:]
  with pytest.raises(AttributeError, match="no_such_name"):
    bert_flow_tf.no_such_name  # pylint: disable=pointless-statement


def readme_python_example():
  """The first ```python block under README's "## Python API" heading."""
  readme = (REPO / "README.md").read_text(encoding="utf-8")
  section = readme.split("\n## Python API\n", 1)[1]
  return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.mark.slow
def test_readme_python_example_runs_as_written(tmp_path, data_dir):
  """README's example, unchanged, in a fresh interpreter, on 300 STS-B train sentences (not README's 11,498)."""
  train, _, _ = sts.load_stsb(str(data_dir))
  sentences = [s for pair in zip(train.sentences_a[:150], train.sentences_b[:150]) for s in pair]
  (tmp_path / "exp" / "own").mkdir(parents=True)
  (tmp_path / "exp" / "own" / "sentences.txt").write_text("\n".join(sentences) + "\n", encoding="utf-8")
  env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
  result = subprocess.run([sys.executable, "-c", readme_python_example()], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
  assert result.returncode == 0, result.stderr[-3000:]
  printed = result.stdout.splitlines()
  assert len(printed) == 2, printed
  scores = [float(v) for v in re.findall(r"-?\d+\.\d+", printed[0])]
  assert len(scores) == 2 and scores[0] > scores[1]  # a guitar player is closer to a guitar player than to stocks
  hits, = ast.literal_eval(printed[1])  # one query
  assert len(hits) == 2 and hits[0]["score"] >= hits[1]["score"]
  assert all("guitar" in sentences[hit["corpus_id"]] for hit in hits)  # "Someone strums a guitar."
  saved = tmp_path / "exp" / "own" / "encoder"
  assert json.loads((saved / "sentence_encoder.json").read_text())["calibration"] == "flow"
