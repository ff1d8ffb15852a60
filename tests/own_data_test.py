"""Own data end to end: a sentences file and a scored-pairs file fit, evaluate and export (experiment.py and
run_flow.py --train_file / --eval_file)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from bert_flow_tf import data
from bert_flow_tf import evaluation
from bert_flow_tf.calibration import baselines
from bert_flow_tf.calibration import fit_flow
from bert_flow_tf.calibration.fit_flow import FlowFitConfig
from bert_flow_tf.data import sts
from bert_flow_tf.experiment import ExperimentConfig, run_experiments
from tests.embedding.tiny_model import SENTENCES, tiny_model

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY_FLOW = {"coupling_width": 8, "n_levels": 2, "depth": 1}


@pytest.fixture(name="own_files")
def fixture_own_files(tmp_path):
  """A 46-line sentences file (tiny vocab) and a 22-pair scored TSV with a header."""
  train = tmp_path / "sentences.txt"
  train.write_text("\n".join(SENTENCES + [s.upper() for s in SENTENCES]) + "\n", encoding="utf-8")
  scored = tmp_path / "pairs.tsv"
  scored.write_text("sentence1\tsentence2\tscore\n" + "".join(
      f"{a}\t{b}\t{(7 * i) % 5}\n" for i, (a, b) in enumerate(zip(SENTENCES, SENTENCES[1:]))), encoding="utf-8")
  flow_config = tmp_path / "tiny_flow.json"
  flow_config.write_text(json.dumps(TINY_FLOW))
  return train, scored, flow_config


def test_own_files_fit_evaluate_through_one_store(tmp_path, own_files):
  """Two poolings with SN fitted on the sentences file and scored on the pairs file (no flow: see below)."""
  train, scored, _ = own_files
  custom = data.custom.load_custom(str(train), str(scored))
  model = tiny_model(tmp_path / "model")
  configs = [ExperimentConfig(
      model=model, sentence_embedding_type=pooling, data_dir=str(tmp_path / "no-data"),
      output_dir=str(tmp_path / "out" / pooling), max_seq_length=16, eval_tasks=(), custom=custom, fit_on=(),
      baselines=("sn",)) for pooling in ("last-avg", "first-last-avg")]
  runs = run_experiments(configs)
  distinct = set(SENTENCES) | {s.upper() for s in SENTENCES}
  assert runs[0][0].store.encoded == len(distinct)  # both poolings, train and eval: each sentence once
  for experiment, results in runs:
    out = experiment.config.output_dir
    assert [(r.dataset, r.method, r.fit_on) for r in results] == [("custom", "none", None), ("custom", "sn", "target")]
    a, b = np.split(experiment.store.vectors([*custom.eval.sentences_a, *custom.eval.sentences_b],
                                             experiment.embedder.pooling), 2)
    assert results[0].value == pytest.approx(evaluation.spearman_x100(evaluation.cosine(a, b), custom.eval.labels))
    # The isotropy before fitting is that of the training sentences' vectors.
    fit_x = experiment.store.vectors([*custom.train[0].sentences_a, *custom.train[0].sentences_b],
                                     experiment.embedder.pooling)
    isotropy = json.loads(open(os.path.join(out, "isotropy.json")).read())["custom"]
    assert isotropy["fit sentences"] == evaluation.describe_isotropy(fit_x, "")[0]
    # The fitted baseline is saved and gives the scored SN row back.
    sn = baselines.load_baseline(os.path.join(out, "baselines", "target-custom-sn.npz"))
    assert results[1].value == pytest.approx(evaluation.spearman_x100(
        evaluation.cosine(sn.transform(a), sn.transform(b)), custom.eval.labels))
    markdown = open(os.path.join(out, "results.md")).read()
    assert "| method | custom |" in markdown
    # One warning exactly when the SN score is below the uncalibrated one, naming both scores.
    lowers = results[1].value < results[0].value
    assert len(experiment.warnings) == int(lowers)
    if lowers:
      assert experiment.warnings[0].startswith(f"custom: sn (target) {results[1].value:.2f} < none "
                                               f"{results[0].value:.2f} (spearman)")
    assert ("## Warnings" in markdown) == lowers


def test_eval_file_alone_fits_on_its_pairs(tmp_path, own_files):
  """The flow of an own-data run, fitted (target schedule) on the scored pairs when there is no sentences file."""
  _, scored, flow_config = own_files
  config = ExperimentConfig(
      model=tiny_model(tmp_path / "model"), sentence_embedding_type="last-avg", data_dir=str(tmp_path),
      output_dir=str(tmp_path / "out"), max_seq_length=16, eval_tasks=(),
      custom=data.custom.load_custom(eval_file=str(scored)),
      target_fit=FlowFitConfig(flow_model_config=str(flow_config), batch_size=4))
  [(experiment, results)] = run_experiments([config])
  assert [(r.method, r.fit_on) for r in results] == [("none", None), ("flow", "target")]
  a, b = np.split(experiment.store.vectors([*config.custom.eval.sentences_a, *config.custom.eval.sentences_b],
                                           experiment.embedder.pooling), 2)
  flow = experiment.flows[("target", "custom")]
  assert results[1].value == pytest.approx(evaluation.spearman_x100(
      evaluation.cosine(fit_flow.transform(flow, a), fit_flow.transform(flow, b)), config.custom.eval.labels))
  info = json.loads((tmp_path / "out" / "flows" / "target-custom" / "flow.json").read_text())
  assert info["num_steps"] == 22 // 4


def test_nothing_to_run_is_refused(tmp_path):
  with pytest.raises(ValueError, match="nothing to run"):
    ExperimentConfig(model=None, sentence_embedding_type="last-avg", data_dir="", output_dir=str(tmp_path),
                     eval_tasks=())


def _run_flow(args, cwd):
  return subprocess.run([sys.executable, os.path.join(REPO, "run_flow.py")] + args, capture_output=True,
                        text=True, cwd=cwd, timeout=600)


@pytest.mark.slow
def test_run_flow_on_own_files_end_to_end(tmp_path, data_dir):
  """300 STS-B train sentences, one per line, and 100 scored STS-B dev pairs, on MiniLM: fit, evaluate, export."""
  train, dev, _ = sts.load_stsb(str(data_dir))
  sentences = tmp_path / "sentences.txt"
  sentences.write_text("\n".join(s for pair in zip(train.sentences_a[:150], train.sentences_b[:150])
                                 for s in pair) + "\n", encoding="utf-8")
  pairs = tmp_path / "pairs.tsv"
  pairs.write_text("sentence1\tsentence2\tscore\n" + "".join(
      f"{a}\t{b}\t{y}\n" for a, b, y in zip(dev.sentences_a[:100], dev.sentences_b[:100], dev.labels)),
                   encoding="utf-8")
  flow_config = tmp_path / "tiny_flow.json"
  flow_config.write_text(json.dumps(TINY_FLOW))
  args = ["--model_dir=all-minilm-l6-v2", f"--train_file={sentences}", f"--eval_file={pairs}",
          "--sentence_embedding_type=last-avg", f"--flow_model_config={flow_config}", "--baselines=sn",
          "--train_batch_size=8", f"--output_parent_dir={tmp_path / 'exp'}", "--exp_name=own",
          f"--export_dir={tmp_path / 'export'}"]
  result = _run_flow(args, cwd=tmp_path)
  assert result.returncode == 0, result.stderr[-3000:]
  out = tmp_path / "exp" / "own"
  results = [evaluation.Result(**r) for r in json.loads((out / "results.json").read_text())["results"]]
  assert [(r.dataset, r.method, r.fit_on) for r in results] == [
      ("custom", "none", None), ("custom", "flow", "target"), ("custom", "sn", "target")]
  assert all(0. < r.value <= 100. for r in results)
  assert "| method | custom |" in result.stdout
  for warning in evaluation.calibration_warnings(results):  # each calibration below "none" is warned about
    assert warning in result.stderr and warning in result.stdout
  # The isotropy of the training vectors is reported before fitting, with a caution when it is near isotropic.
  isotropy = json.loads((out / "isotropy.json").read_text())["custom"]["fit sentences"]
  assert f"isotropy of the custom fit sentences, last-avg (300 vectors): mean cosine of random pairs " \
         f"{isotropy['mean_cosine']:.3f}" in result.stderr
  assert ("already close to isotropic" in result.stderr) == (isotropy["mean_cosine"] < evaluation.NEAR_ISOTROPIC_COSINE)
  assert result.stderr.index("isotropy of the custom fit sentences") < result.stderr.index("target-custom: 18 steps in")
  assert json.loads((out / "flows" / "target-custom" / "flow.json").read_text())["num_steps"] == 150 // 8
  info = json.loads((tmp_path / "export" / "export_info.json").read_text())
  assert info["pooling"] == "last-avg" and info["flow"]["config"]["coupling_width"] == 8
  assert (tmp_path / "export" / "text" / "1" / "saved_model.pb").is_file()
  # A bad scored-pairs file stops the run at start with one line naming file:line.
  pairs.write_text("s1\ts2\tscore\na\tb\t1\nc\td\thigh\n", encoding="utf-8")
  bad = _run_flow(args, cwd=tmp_path)
  assert bad.returncode != 0 and f"{pairs}:3: score 'high' is not a number" in bad.stderr
