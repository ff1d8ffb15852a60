"""run_flow.py's settings beyond the main job, through the entry point, on the tiny BERT and hand-made data.

Every evaluation task and aggregation (STS-B, SICK-R, STS12-16 all/mean/wmean, QNLI AUC), the NLI schedule, the
faithful mode, the export variants and the strategy flags. The run_flow command lines run in one
tests/entry_driver.py process (the one with MirroredStrategy and XLA first: logical CPU devices are fixed at
TensorFlow's first op). Expected scores are recomputed here from the tiny BERT's vectors with scipy.
"""
import json

import numpy as np
import pytest
import scipy.stats
import tensorflow as tf

import glow
from bert_flow_tf import data
from bert_flow_tf import loaders
from bert_flow_tf.calibration import fitted_flow
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from bert_flow_tf.quantization import truncation
from tests import tiny_runs
from tests.embedding.engine_vectors import engine_vectors

WORDS = ["a", "man", "dog", "runs", "plays", "the", "guitar", ".", "x", "y"]
POOLING = "last-avg"
NLI_PAIRS = 80      # SNLI dev + test below: 0.15 epoch at 4 pairs a step is int(0.15 * 80 / 4) = 3 steps
STS_SUBSETS = {12: {"MSRpar": 9, "OnWN": 5}, 13: {"FNWN": 6}, 14: {"images": 4, "tweet-news": 7},
               15: {"belief": 5, "headlines": 8}, 16: {"plagiarism": 6, "postediting": 3}}


def _sentence(rng):
  return " ".join(rng.choice(WORDS, rng.integers(2, 8)))


def _write_data(root):
  """Every benchmark in its layout, with random sentences over the tiny vocab and random scores; QNLI's positives
  are identical pairs (cosine 1), its negatives distinct ones, so its AUC is 100."""
  rng = np.random.default_rng(0)
  pair = lambda: (_sentence(rng), _sentence(rng))
  (root / "stsbenchmark").mkdir(parents=True)
  for split in ("train", "dev", "test"):
    rows = [(*pair(), rng.uniform(0, 5)) for _ in range(12)]
    (root / "stsbenchmark" / f"sts-{split}.csv").write_text(
        "".join(f"main\tx\t2012\t{i:04d}\t{y:.3f}\t{a}\t{b}\n" for i, (a, b, y) in enumerate(rows)))
  (root / "SICK").mkdir()
  for name in ("SICK_train.txt", "SICK_trial.txt", "SICK_test_annotated.txt"):
    rows = [(*pair(), rng.uniform(1, 5)) for _ in range(10)]
    (root / "SICK" / name).write_text("pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n" +
                                      "".join(f"{i}\t{a}\t{b}\t{y:.1f}\tNEUTRAL\n" for i, (a, b, y) in enumerate(rows)))
  for year, subsets in STS_SUBSETS.items():
    folder = root / "STS" / f"STS{year}-en-test"
    folder.mkdir(parents=True)
    prefix = "STS2016" if year == 16 else "STS"
    for subset, n in subsets.items():
      rows = [(*pair(), rng.uniform(0, 5)) for _ in range(n)]
      (folder / f"{prefix}.input.{subset}.txt").write_text("".join(f"{a}\t{b}\n" for a, b, _ in rows))
      (folder / f"{prefix}.gs.{subset}.txt").write_text("".join(f"{y:.2f}\n" for _, _, y in rows))
  (root / "SNLI").mkdir()
  labels = ["entailment", "neutral", "contradiction"]
  for split in ("dev", "test"):
    rows = [(*pair(), labels[i % 3]) for i in range(NLI_PAIRS // 2)]
    for i, name in enumerate(("s1", "s2", "labels")):
      (root / "SNLI" / f"{name}.{split}").write_text("".join(f"{row[i]}\n" for row in rows))
  (root / "QNLI").mkdir()
  rows = [(s, s, "entailment") for s in ("a man plays", "the dog runs .", "x y")] + \
      [("a man plays", "the guitar runs", "not_entailment"), ("the dog runs .", "a x y", "not_entailment"),
       ("x y", "a man plays the guitar .", "not_entailment"), ("guitar", "dog", "not_entailment")]
  (root / "QNLI" / "dev.tsv").write_text("index\tquestion\tsentence\tlabel\n" +
                                         "".join(f"{i}\t{a}\t{b}\t{y}\n" for i, (a, b, y) in enumerate(rows)))
  return str(root)


# name -> extra run_flow arguments; each case writes <root>/exp/<name> and, with an export, <root>/export_<name>.
CASES = {
    "mirrored-xla": ["--num_cpu_replicas=2", "--use_xla", "--nofit_flow", "--export_flow=none", "--cached_dir="],
    "all-tasks": ["--eval_tasks=all", "--fit_on=target,nli", "--baselines=whitening-4", "--export_flow=nli"],
    "faithful": ["--flow_mode=faithful", "--flow_learning_rate=1e-2", "--export_litert"],
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
  root = tmp_path_factory.mktemp("paths")
  model_dir = tiny_runs.tiny_model_dir(root)
  data_dir = _write_data(root / "data")
  flow_config = tiny_runs.tiny_flow_config(root / "tiny_flow.json")
  common = ["--model_dir", model_dir, f"--data_dir={data_dir}", f"--sentence_embedding_type={POOLING}",
            "--max_seq_length=16", f"--flow_model_config={flow_config}", "--train_batch_size=4",
            f"--output_parent_dir={root / 'exp'}"]
  ran = tiny_runs.drive("run_flow", {name: common + [f"--exp_name={name}", f"--export_dir={root / f'export_{name}'}"]
                                      + extra for name, extra in CASES.items()}, root)
  for name, result in ran.items():
    assert result["returncode"] == 0, (name, result["stderr"][-3000:])
  embedder = SentenceEmbedder(loaders.load_model(model_dir), POOLING, max_seq_length=16)
  return {"root": root, "data_dir": data_dir, "embedder": embedder, "ran": ran,
          "results": {name: json.loads((root / "exp" / name / "results.json").read_text())["results"]
                      for name in CASES}}


def _cosines(embedder, pairset):
  a = engine_vectors(embedder, list(pairset.sentences_a))
  b = engine_vectors(embedder, list(pairset.sentences_b))
  return np.sum(a * b, 1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def _auc_x100(scores, labels):
  """ROC-AUC x 100 as the Mann-Whitney U of the positives' ranks (ties averaged)."""
  ranks = scipy.stats.rankdata(scores)
  positives = labels == 1
  n_pos, n_neg = positives.sum(), (~positives).sum()
  return 100 * (ranks[positives].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


@pytest.mark.slow
def test_every_task_and_aggregation_scores_the_uncalibrated_vectors(runs):
  got = {(r["dataset"], r["aggregation"]): r["value"] for r in runs["results"]["all-tasks"] if r["method"] == "none"}
  want = {}
  for task_name in data.EVAL_TASKS:
    info = data.TASKS[task_name]
    subsets = getattr(data.load_task(task_name, runs["data_dir"]), info.eval_split)
    cosines = [_cosines(runs["embedder"], s) for s in subsets]
    if info.metric == "auc":
      want[(info.dataset, None)] = _auc_x100(cosines[0], subsets[0].labels)
    elif len(subsets) == 1:
      want[(info.dataset, None)] = 100 * scipy.stats.spearmanr(cosines[0], subsets[0].labels)[0]
    else:
      per_subset = [100 * scipy.stats.spearmanr(c, s.labels)[0] for c, s in zip(cosines, subsets)]
      sizes = [len(s) for s in subsets]
      assert sizes == list(STS_SUBSETS[int(info.dataset[3:])].values())
      want[(info.dataset, "all")] = 100 * scipy.stats.spearmanr(np.concatenate(cosines),
                                                              np.concatenate([s.labels for s in subsets]))[0]
      want[(info.dataset, "mean")] = np.mean(per_subset)
      want[(info.dataset, "wmean")] = np.dot(per_subset, sizes) / sum(sizes)
  assert set(got) == set(want)
  for key, value in want.items():
    assert got[key] == pytest.approx(value, abs=1e-3), key
  assert got[("QNLI", None)] == 100.0  # identical pairs, cosine 1, are the positives


@pytest.mark.slow
def test_every_calibration_is_scored_on_every_task(runs):
  methods = {(r["dataset"], r["method"], r["fit_on"]) for r in runs["results"]["all-tasks"]}
  for label in data.DATASETS:
    assert {(label, "none", None), (label, "flow", "target"), (label, "flow", "nli"),
            (label, "whitening-4", "target")} <= methods, label


@pytest.mark.slow
def test_nli_flow_follows_the_papers_nli_schedule(runs):
  """lr 2e-5 for 0.15 epoch of the NLI pairs (run_flow.py's defaults), read from the run's own record, and the
  fitted weights moved by what 3 steps at 2e-5 can move them."""
  flow_dir = runs["root"] / "exp" / "all-tasks" / "flows" / "nli-NLI"
  info = json.loads((flow_dir / "flow.json").read_text())
  assert info["complete"] and info["fit"]["learning_rate"] == 2e-5 and info["fit"]["num_train_epochs"] == 0.15
  assert info["num_steps"] == 3 and info["steps_done"] == 3
  # The couplings' last layers start at exactly 0 (W_zeros, b_zeros, logs_zeros), so their values are what the
  # 3 steps moved them. AdamWeightDecay without bias correction moves a weight by lr * m_t / sqrt(v_t) a step:
  # 3.16, 4.25, 4.95 lr for a steady gradient, at most ~12.5 lr in 3 steps (1e-3, the target lr, would give ~1e-2).
  fitted = fitted_flow.load_glow(str(flow_dir))
  moved = max(float(np.abs(v.numpy()).max()) for v in fitted.trainable_variables if "zeros" in v.name)
  assert 5 * 2e-5 < moved <= 13 * 2e-5
  target = json.loads((runs["root"] / "exp" / "all-tasks" / "flows" / "target-STS-B" / "flow.json").read_text())
  assert target["fit"]["learning_rate"] == 1e-3 and target["num_steps"] == 36 // 4  # 3 splits x 12 pairs


@pytest.mark.slow
def test_export_variants_chain_the_asked_flow(runs):
  root, embedder = runs["root"], runs["embedder"]
  sentences = ["a man plays the guitar .", "the dog runs", "x"]
  raw = engine_vectors(embedder, sentences)
  def flow_output(folder):  # the Glow's latent on the principal axes fitted beside it
    return glow.transform(fitted_flow.load_glow(folder), raw) @ truncation.load_axes(folder, raw.shape[1])

  wants = {"all-tasks": flow_output(str(root / "exp" / "all-tasks" / "flows" / "nli-NLI")), "mirrored-xla": raw,
           "faithful": flow_output(str(root / "exp" / "faithful" / "flows" / "target-STS-B"))}
  for name, want in wants.items():
    info = json.loads((root / f"export_{name}" / "export_info.json").read_text())
    assert (info["flow"] is None) == (name == "mirrored-xla"), name
    ids = tf.saved_model.load(str(root / f"export_{name}" / "ids" / "1")).signatures["serving_default"]
    got = list(ids(**embedder.tokenizer(tf.constant(sentences), 16)).values())[0].numpy()
    np.testing.assert_allclose(got, want, atol=1e-5, err_msg=name)
  # --export_litert: the LiteRT file chains the same flow (the tiny model has no Normalize)
  from ai_edge_litert import interpreter  # pylint: disable=import-outside-toplevel
  packed = embedder.tokenizer(tf.constant(sentences), 16)
  runner = interpreter.Interpreter(model_path=str(root / "export_faithful" / "litert" / "model.tflite"))
  got = runner.get_signature_runner()(ids=packed["input_word_ids"].numpy(), mask=packed["input_mask"].numpy(),
                                      segment_ids=packed["input_type_ids"].numpy())["embedding"]
  np.testing.assert_allclose(got, wants["faithful"], atol=1e-4)
  assert not (root / "export_mirrored-xla" / "litert").exists()


@pytest.mark.slow
def test_faithful_mode_fits_with_bert_in_the_loop(runs):
  info = json.loads((runs["root"] / "exp" / "faithful" / "flows" / "target-STS-B" / "flow.json").read_text())
  assert info["provenance"]["mode"] == "faithful" and info["complete"] and info["num_steps"] == 36 // 4
  rows = {(r["method"], r["fit_on"]) for r in runs["results"]["faithful"]}
  assert rows == {("none", None), ("flow", "target")}


@pytest.mark.slow
def test_mirrored_xla_static_shapes_score_as_one_device(runs):
  """The 2-replica XLA run scores STS-B as the one-device all-tasks run does (itself checked against scipy above);
  its export gives the one-device vectors (test_export_variants_chain_the_asked_flow)."""
  assert "embedding on 2 replica(s) of MirroredStrategy; static shapes True, XLA True" in \
      runs["ran"]["mirrored-xla"]["stderr"]
  mirrored = {r["dataset"]: r["value"] for r in runs["results"]["mirrored-xla"]}
  one_device = {r["dataset"]: r["value"] for r in runs["results"]["all-tasks"] if r["method"] == "none"}
  assert mirrored.keys() == {"STS-B"}
  assert mirrored["STS-B"] == pytest.approx(one_device["STS-B"], abs=1e-3)
