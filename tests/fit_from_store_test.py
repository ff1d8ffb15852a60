"""Fitting from the store (run_flow.py --fit_from_store, SentenceEncoder.fit(from_store=True)): the flow reads its
pairs from the store on disk (flow.json records it), whitening equals the in-memory fit on the distinct sentences."""
import json

import numpy as np
import pytest

from bert_flow_tf import SentenceEncoder
from bert_flow_tf.calibration import baselines
from bert_flow_tf.calibration import store_stream
from bert_flow_tf.data import order
from tests import tiny_runs
from tests.embedding.tiny_model import SENTENCES


@pytest.fixture(scope="module", name="tiny")
def fixture_tiny(tmp_path_factory):
  tmp = tmp_path_factory.mktemp("tiny")
  return {"dir": tiny_runs.tiny_model_dir(tmp), "flow_config": tiny_runs.tiny_flow_config(tmp / "flow.json")}


@pytest.mark.slow  # a run_flow.py process
def test_run_flow_fits_the_flow_and_whitening_from_the_store(tiny, tmp_path):
  train = tmp_path / "sentences.txt"
  train.write_text("\n".join(SENTENCES + [s.upper() for s in SENTENCES]) + "\n", encoding="utf-8")
  scored = tmp_path / "pairs.tsv"
  scored.write_text("".join(f"{a}\t{b}\t{(7 * i) % 5}\n" for i, (a, b) in enumerate(zip(SENTENCES, SENTENCES[1:]))),
                    encoding="utf-8")
  out = tmp_path / "out"
  result = tiny_runs.run("run_flow", [
      "--model_dir", tiny["dir"], "--sentence_embedding_type=first-last-avg", "--max_seq_length=16",
      f"--train_file={train}", f"--eval_file={scored}", "--fit_from_store", "--baselines=whitening",
      f"--flow_model_config={tiny['flow_config']}", "--flow_batch_pairs=4", f"--output_dir={out}",
      f"--cache_dir={tmp_path / 'cache'}"], cwd=tmp_path)
  assert result.returncode == 0, result.stderr[-3000:]
  methods = [(r["method"], r["fit_on"]) for r in json.loads((out / "results.json").read_text())["results"]]
  assert methods == [("none", None), ("flow", "target"), ("whitening", "target")]
  info = json.loads((out / "flows" / "target-custom" / "flow.json").read_text())
  assert info["complete"] and info["provenance"]["pairs"] == store_stream.PAIR_SOURCE
  distinct = len(set(SENTENCES) | {s.upper() for s in SENTENCES})  # each once: one store shard, ceil(n / 2) pairs
  assert info["num_steps"] == order.num_train_steps(-(-distinct // 2), 4, 1.0)
  assert "fit sentences" not in json.loads((out / "isotropy.json").read_text()).get("custom", {})


def test_the_api_fits_the_flow_from_the_store_restricted_to_its_sentences(tiny, tmp_path):
  enc = SentenceEncoder.from_pretrained(tiny["dir"], pooling="first-last-avg", max_seq_length=16,
                                        cache_dir=str(tmp_path / "cache"))
  enc.encode_raw(["a sentence that is stored but not fitted on", "another one"])
  enc.fit(SENTENCES, flow_config=tiny["flow_config"], batch_size=4, from_store=True)
  summary = enc.calibration.summary
  assert summary["provenance"] == {"pairs": store_stream.PAIR_SOURCE}
  assert summary["num_steps"] == order.num_train_steps(-(-len(set(SENTENCES)) // 2), 4, 1.0)


def test_whitening_from_the_store_equals_whitening_of_the_distinct_sentences(tiny, tmp_path):
  enc = SentenceEncoder.from_pretrained(tiny["dir"], pooling="first-last-avg", max_seq_length=16,
                                        cache_dir=str(tmp_path / "cache"))
  enc.encode_raw(["a sentence that is stored but not fitted on"])
  streamed = enc.fit(SENTENCES + SENTENCES[:3], method="whitening-4", from_store=True).calibration
  raw = enc.encode_raw(sorted(set(SENTENCES)))
  in_memory = baselines.Whitening(4).fit(raw)
  np.testing.assert_allclose(streamed.transform(raw), in_memory.transform(raw), rtol=1e-4, atol=1e-4)


def test_fitting_from_the_store_is_refused_where_it_cannot_apply(tiny):
  in_memory = SentenceEncoder.from_pretrained(tiny["dir"], pooling="last-avg", max_seq_length=16)
  with pytest.raises(ValueError, match="cache_dir"):
    in_memory.fit(SENTENCES, from_store=True)
  with pytest.raises(ValueError, match="list of str"):
    in_memory.fit(in_memory.encode_raw(SENTENCES), from_store=True)


def test_sn_is_not_fitted_from_the_store(tiny, tmp_path):
  enc = SentenceEncoder.from_pretrained(tiny["dir"], pooling="last-avg", max_seq_length=16,
                                        cache_dir=str(tmp_path / "cache"))
  with pytest.raises(ValueError, match="every vector at once"):
    enc.fit(SENTENCES, method="sn", from_store=True)
