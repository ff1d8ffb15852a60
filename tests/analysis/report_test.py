"""An experiment with the analysis on (tiny BERT, tiny STS-B files): every file written, results.md links them."""
import json

import numpy as np
import pytest
import scipy.stats

from bert_flow_tf.analysis import report
from bert_flow_tf.experiment_runs import run_experiments
from bert_flow_tf.experiment_spec import ExperimentSpec
from tests.analysis.references import png_size
from tests.analysis.references import word_levenshtein
from tests.embedding.tiny_model import tiny_model

WORDS = ["a", "man", "dog", "runs", "plays", "the", "guitar", "."]


def _stsb(folder, rows=16):
  """STS-B csv files (the original release's 7 fields) of random sentences over the tiny vocab."""
  rng = np.random.default_rng(0)
  sentence = lambda: " ".join(rng.choice(WORDS, rng.integers(2, 9)))
  (folder / "stsbenchmark").mkdir(parents=True)
  for split in ("train", "dev", "test"):
    lines = [f"main\tx\t2012\t{i:04d}\t{rng.uniform(0, 5):.3f}\t{sentence()}\t{sentence()}" for i in range(rows)]
    (folder / "stsbenchmark" / f"sts-{split}.csv").write_text("\n".join(lines) + "\n")
  return folder


@pytest.mark.slow
def test_an_experiment_with_the_analysis_writes_every_file(tmp_path):
  # No flow here (its fit costs seconds; the Table 6 flow rows are older than this test): "sn" stands in.
  out = tmp_path / "exp"
  spec = ExperimentSpec(model=tiny_model(tmp_path / "model"), pooling="last-avg",
                        data_dir=str(_stsb(tmp_path / "data")), output_dir=str(out), max_seq_length=16,
                        fit_on=(), baselines=("sn",), analysis=True)
  [run] = run_experiments([spec])
  experiment, rhos = run.experiment, run.record.edit_distance_rhos
  assert list(rhos) == ["gold", "none", "sn (target)"]
  for name in (report.FIGURE2_FILE, "isotropy_sts-b.png"):
    width, height = png_size(out / name)
    assert width > 300 and height > 300 and (out / name).stat().st_size > 10_000
  table1 = json.loads((out / report.TABLE1_FILE).read_text())
  assert table1["model"] == spec.model.source and table1["num_words"] == [7, 0, 0, 0]
  assert table1["paper"]["mean_norm"] == [0.95, 1.04, 1.22, 1.45]
  tb = out / "tb"
  assert (tb / "projector_config.pbtxt").read_text().count("embeddings {") == 2   # none, sn
  assert len((tb / "metadata.tsv").read_text().splitlines()) == len((tb / "sn_target.tsv").read_text().splitlines())
  results = (out / "results.md").read_text()
  assert results == run.results_md
  table6 = results.index("(STS-B dev, Spearman x100; paper Table 6)")
  assert table6 < results.index(f"]({report.FIGURE2_FILE})") < results.index("](isotropy_sts-b.png)")
  assert f"| sn (target) | {rhos['sn (target)']:.2f} |" in results
  assert "| Mean l2-norm |" in results and "## TensorBoard projector" in results
  dev = run.record.lexical_pairs
  # Table 6's "none" row from scratch: cosine of the stored vectors against a word-level Levenshtein distance.
  a, b = np.split(experiment.store.vectors([*dev.sentences_a, *dev.sentences_b], experiment.embedder.pooling_spec), 2)
  cosine = np.sum(a * b, 1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
  distances = [word_levenshtein(x.split(), y.split()) for x, y in zip(dev.sentences_a, dev.sentences_b)]
  assert rhos["none"] == pytest.approx(100 * scipy.stats.spearmanr(cosine, distances)[0], abs=1e-4)
