"""Own data through the experiment: a sentences file and a scored-pairs file fit and evaluate (experiment.py;
run_flow.py --train_file / --eval_file on the real MiniLM is in tests/end_to_end_test.py)."""
import json
import os

import numpy as np
import pytest
import scipy.stats

from bert_flow_tf import data
from bert_flow_tf import search
from bert_flow_tf.evaluation import isotropy as isotropy_lib
from bert_flow_tf.evaluation import metrics
from bert_flow_tf.calibration import baselines
from bert_flow_tf.calibration.flow_fitting import FlowFitConfig
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from bert_flow_tf.experiment_runs import run_experiments
from bert_flow_tf.experiment_spec import ExperimentSpec
from tests import tiny
from tests.embedding.engine_vectors import engine_vectors
from tests.embedding.tiny_model import SENTENCES, tiny_model


@pytest.fixture(name="own_files")
def fixture_own_files(tmp_path):
  """A 46-line sentences file (tiny vocab) and a 22-pair scored TSV with a header."""
  train = tmp_path / "sentences.txt"
  train.write_text("\n".join(SENTENCES + [s.upper() for s in SENTENCES]) + "\n", encoding="utf-8")
  scored = tmp_path / "pairs.tsv"
  scored.write_text("sentence1\tsentence2\tscore\n" + "".join(
      f"{a}\t{b}\t{(7 * i) % 5}\n" for i, (a, b) in enumerate(zip(SENTENCES, SENTENCES[1:]))), encoding="utf-8")
  flow_config = tiny.write_glow_config(tmp_path / "tiny_flow.json")
  return train, scored, flow_config


def test_own_files_fit_evaluate_through_one_store(tmp_path, own_files):
  """Two poolings with SN fitted on the sentences file and scored on the pairs file (no flow: see below)."""
  train, _, _ = own_files
  model = tiny_model(tmp_path / "model")
  # Gold scores that rank the pairs as last-avg's raw cosines do (computed by the reference path): there, "none"
  # scores 100 and SN, which reorders the cosines, lower, so exactly one warning is due.
  pairs = list(zip(SENTENCES, SENTENCES[1:]))
  reference = SentenceEmbedder(model, "last-avg", 16)
  gold = search.cosine(engine_vectors(reference, [a for a, _ in pairs]),
                       engine_vectors(reference, [b for _, b in pairs]))
  scored = tmp_path / "ranked_pairs.tsv"
  scored.write_text("sentence1\tsentence2\tscore\n" + "".join(
      f"{a}\t{b}\t{g:.6f}\n" for (a, b), g in zip(pairs, gold)), encoding="utf-8")
  custom = data.custom.load_custom(str(train), str(scored))
  specs = [ExperimentSpec(
      model=model, pooling=pooling, data_dir=str(tmp_path / "no-data"),
      output_dir=str(tmp_path / "out" / pooling), max_seq_length=16, eval_tasks=(), custom=custom, fit_on=(),
      baselines=("sn",)) for pooling in ("last-avg", "first-last-avg")]
  runs = run_experiments(specs)
  distinct = set(SENTENCES) | {s.upper() for s in SENTENCES}
  assert runs[0].experiment.store.encoded == len(distinct)  # both poolings, train and eval: each sentence once
  for run in runs:
    experiment, results = run.experiment, run.record.scores
    out = experiment.spec.output_dir
    assert [(r.dataset, r.method, r.fit_on) for r in results] == [("custom", "none", None), ("custom", "sn", "target")]
    a, b = np.split(experiment.store.vectors([*custom.eval.sentences_a, *custom.eval.sentences_b],
                                             experiment.embedder.pooling_spec), 2)
    assert results[0].value == pytest.approx(metrics.spearman_x100(search.cosine(a, b), custom.eval.labels))
    # The isotropy before fitting is that of the training sentences' vectors.
    fit_x = experiment.store.vectors([*custom.train[0].sentences_a, *custom.train[0].sentences_b],
                                     experiment.embedder.pooling_spec)
    isotropy = json.loads(open(os.path.join(out, "isotropy.json")).read())["custom"]
    assert isotropy["fit sentences"] == isotropy_lib.describe_isotropy(fit_x, "")[0]
    # The fitted baseline is saved and gives the scored SN row back.
    sn = baselines.load_baseline(os.path.join(out, "baselines", "target-custom-sn.npz"))
    assert results[1].value == pytest.approx(metrics.spearman_x100(
        search.cosine(sn.transform(a), sn.transform(b)), custom.eval.labels))
    markdown = open(os.path.join(out, "results.md")).read()
    assert markdown == run.results_md
    assert "| method | custom |" in markdown
    # One warning exactly when the SN score is below the uncalibrated one, naming both scores.
    rho = lambda x, y: 100 * scipy.stats.spearmanr(search.cosine(x, y), custom.eval.labels)[0]
    none, sn_rho = rho(a, b), rho(sn.transform(a), sn.transform(b))
    if experiment.embedder.pooling_spec.name == "last-avg":
      assert none == pytest.approx(100.0) and sn_rho < 99.0
    want = [f"custom: sn (target) {sn_rho:.2f} < none {none:.2f} (spearman)"] if sn_rho < none else []
    assert [w.split(": this")[0] for w in run.record.warnings] == want
    assert ("## Warnings" in markdown) == bool(want)


def test_eval_file_alone_fits_on_its_pairs(tmp_path, own_files):
  """The flow of an own-data run, fitted (target schedule) on the scored pairs when there is no sentences file."""
  _, scored, flow_config = own_files
  spec = ExperimentSpec(
      model=tiny_model(tmp_path / "model"), pooling="last-avg", data_dir=str(tmp_path),
      output_dir=str(tmp_path / "out"), max_seq_length=16, eval_tasks=(),
      custom=data.custom.load_custom(eval_file=str(scored)),
      target_fit_config=FlowFitConfig(flow_model_config=str(flow_config), batch_size=4))
  [run] = run_experiments([spec])
  experiment, results = run.experiment, run.record.scores
  assert [(r.method, r.fit_on) for r in results] == [("none", None), ("flow", "target")]
  a, b = np.split(experiment.store.vectors([*spec.custom.eval.sentences_a, *spec.custom.eval.sentences_b],
                                           experiment.embedder.pooling_spec), 2)
  flow = experiment.flows[("target", "custom")]
  assert results[1].value == pytest.approx(metrics.spearman_x100(
      search.cosine(flow.transform(a), flow.transform(b)), spec.custom.eval.labels))
  info = json.loads((tmp_path / "out" / "flows" / "target-custom" / "flow.json").read_text())
  assert info["num_steps"] == 22 // 4


def test_nothing_to_run_is_refused(tmp_path):
  with pytest.raises(ValueError, match="nothing to run"):
    ExperimentSpec(model=None, pooling="last-avg", data_dir="", output_dir=str(tmp_path),
                     eval_tasks=())
