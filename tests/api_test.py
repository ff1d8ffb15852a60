"""The Python API (bert_flow_tf/api.py) against the code it wraps, and README's Python API example as written."""
import json
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

import bert_flow_tf
from bert_flow_tf import evaluation
from bert_flow_tf import export
from bert_flow_tf.calibration import fit_flow as fit_flow_lib
from bert_flow_tf.data import sts
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from tests.embedding.tiny_model import SENTENCES, tiny_model

REPO = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture(name="tiny")
def fixture_tiny(tmp_path):
  """(tiny LoadedModel, path of a tiny Glow config)."""
  flow_config = tmp_path / "tiny_flow.json"
  flow_config.write_text(json.dumps({"coupling_width": 8, "n_levels": 2, "depth": 1}))
  return tiny_model(tmp_path / "model"), str(flow_config)


def test_sentences_to_calibrated_vectors(tmp_path, tiny):
  model, flow_config = tiny
  enc = bert_flow_tf.load_encoder(model, pooling="first-last-avg", max_seq_length=16)
  vecs = enc.encode(SENTENCES)
  # Through the store each distinct sentence is encoded once, so batches (and float rounding) differ.
  np.testing.assert_allclose(vecs, SentenceEmbedder(model, "first-last-avg", 16).encode(SENTENCES), atol=1e-6)
  flow = bert_flow_tf.fit_flow(vecs, config=flow_config, batch_size=4)
  assert flow.summary["num_steps"] == 12 // 4  # 23 vectors -> 12 pairs (the last with the first) -> 3 steps
  assert flow.isotropy == evaluation.isotropy(vecs)
  z = flow.transform(vecs)
  np.testing.assert_array_equal(z, fit_flow_lib.transform(flow.glow, vecs))
  # From sentences, into a kept flow_dir: the same fit (same seed, same vectors), readable back.
  kept = bert_flow_tf.fit_flow(SENTENCES, encoder=enc, config=flow_config, batch_size=4,
                               flow_dir=str(tmp_path / "flow"))
  np.testing.assert_allclose(kept.transform(vecs), z, atol=1e-6)
  np.testing.assert_allclose(bert_flow_tf.Flow.load(str(tmp_path / "flow")).transform(vecs), z, atol=1e-6)
  with pytest.raises(ValueError, match="encoder="):
    bert_flow_tf.fit_flow(SENTENCES)
  assert bert_flow_tf.similarity(z[0], z[1]) == pytest.approx(float(evaluation.cosine(z[:1], z[1:2])[0]))
  np.testing.assert_array_equal(bert_flow_tf.similarity(z[:5], z[5:10]), evaluation.cosine(z[:5], z[5:10]))


@pytest.mark.slow
def test_export_model_serves_the_flow(tmp_path, tiny):
  model, flow_config = tiny
  enc = bert_flow_tf.load_encoder(model, pooling="last-avg", max_seq_length=16)
  vecs = enc.encode(SENTENCES)
  flow = bert_flow_tf.fit_flow(vecs, config=flow_config, batch_size=4)
  paths = bert_flow_tf.export_model(enc, flow, str(tmp_path / "export"))
  served = export.encode_with_saved_model(paths["text"], SENTENCES[:6])
  np.testing.assert_allclose(served, flow.transform(vecs[:6]), atol=1e-5)


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
  printed = [float(v) for v in result.stdout.split()]
  assert len(printed) == 2 and all(-1. <= v <= 1. for v in printed)
  assert printed[0] > printed[1]  # a guitar player is closer to a guitar player than to the stock market
  export_dir = tmp_path / "exp" / "own" / "api_export"
  info = json.loads((export_dir / "export_info.json").read_text())
  assert info["pooling"] == "first-last-avg" and info["flow"]["config"]["n_levels"] == 2
  assert (export_dir / "text" / "1" / "saved_model.pb").is_file()
