"""One BERT-flow experiment: embed, fit calibrations, evaluate, write the tables (and export).

For each evaluation dataset the sentence vectors are scored as they are ("none"), through a flow fitted on that
dataset's own sentences ("target") and/or one flow fitted on NLI sentences ("nli"), and through the unsupervised
baselines fitted on the same target sentences as the flow. A user's own files (`config.custom`, see
bert_flow_tf/data/custom.py) go the same way as one more dataset, "custom": calibrations fitted on the training
file, scored on the evaluation file, with a warning for each calibration that lowers the score. Before a target
fit, the isotropy of the fit sentences' vectors is logged (and kept in isotropy.json as "fit sentences").
Outputs in `output_dir`: results.json, results.md, isotropy.json, timings.json, flows/<fit_on>-<dataset>/
(checkpoints, flow.json, TensorBoard events), baselines/target-custom-<name>.npz (own data only).
"""
import contextlib
import dataclasses
import functools
import json
import os
import time

import numpy as np
from absl import logging

import glow
from bert_flow_tf.calibration import baselines
from bert_flow_tf import data
from bert_flow_tf import evaluation
from bert_flow_tf.calibration import fitted_flow
from bert_flow_tf.calibration import flow_fitting
from bert_flow_tf.calibration import pair_sources
from bert_flow_tf.utils import errors
from bert_flow_tf.utils import io_utils
from bert_flow_tf.modeling import pooling as pooling_lib
from bert_flow_tf.embedding.store import EmbeddingStore
from bert_flow_tf.embedding.embedder import SentenceEmbedder

NLI_TASK = "allnli"
# Experiment.flows key of the flow fitted on NLI sentences; a target flow's key is ("target", dataset label).
NLI_FLOW = ("nli", "NLI")


@dataclasses.dataclass(frozen=True)
class ExperimentConfig:
  """Everything one run needs (run_flow.py builds it from flags).

  Attributes:
    model: bert_flow_tf.loaders.LoadedModel.
    sentence_embedding_type: str, pooling name.
    max_seq_length: int.
    data_dir: str.
    eval_tasks: tuple of bert_flow_tf.data.EVAL_TASKS names; may be empty when `custom` is given.
    custom: bert_flow_tf.data.custom.CustomData or None: the user's own training pairs and scored pairs,
      evaluated as the dataset "custom" after the eval_tasks (target flow and baselines fitted on its train).
    fit_on: tuple of evaluation.FIT_ON ("target" / "nli"); empty for no flow.
    target_fit: FlowFitConfig of the target setting; nli_fit: of the NLI setting.
    flow_mode: "cached" or "faithful".
    use_full_for_training: bool, target sentences from train+dev+test (else train only).
    one_pass_full: bool, with use_full_for_training, take each distinct split once (STS12-16 have
      train = dev = test; the original saw each pair three times per epoch).
    baselines: tuple of baseline names (bert_flow_tf.calibration.baselines.make_baseline), fitted on the target sentences.
    lexical_analysis: bool, the Table 6 edit-distance correlations on STS-B (dev, as the paper).
    analysis: bool, also the paper's Table 1, Figure 2 (with Table 6), isotropy plots and TensorBoard projector
      files (bert_flow_tf/analysis/report.py; loads matplotlib and wordfreq only then).
    output_dir: str; cache_dir: str or None (the embedding store's folder; None keeps vectors in memory);
      batch_size: int (encoding).
    strategy: tf.distribute.Strategy or None (the default) for embedding and for faithful-mode flow fits;
      static_shapes, use_xla: bool (see SentenceEmbedder, FaithfulPairs). Cached-mode flows and baselines fit on
      the default device.
  """
  model: object
  sentence_embedding_type: str
  data_dir: str
  output_dir: str
  max_seq_length: int = 64
  eval_tasks: tuple = ("sts-b",)
  fit_on: tuple = ("target",)
  target_fit: flow_fitting.FlowFitConfig = flow_fitting.FlowFitConfig()
  nli_fit: flow_fitting.FlowFitConfig = flow_fitting.FlowFitConfig(learning_rate=2e-5, num_train_epochs=0.15)
  flow_mode: str = "cached"
  use_full_for_training: bool = True
  one_pass_full: bool = False
  baselines: tuple = ()
  lexical_analysis: bool = False
  analysis: bool = False
  cache_dir: object = None
  batch_size: int = 64
  strategy: object = None
  static_shapes: bool = False
  use_xla: bool = False
  custom: object = None

  def __post_init__(self):
    if not self.eval_tasks and self.custom is None:
      raise ValueError("nothing to run: no evaluation task and no own data (custom)")
    for task in self.eval_tasks:
      if task not in data.EVAL_TASKS:
        raise ValueError(f"unknown evaluation task {task!r}; allowed: {', '.join(data.EVAL_TASKS)}")
    for where in self.fit_on:
      if where not in evaluation.FIT_ON:
        raise ValueError(f"unknown fit_on {where!r}; allowed: {', '.join(evaluation.FIT_ON)}")
    if self.flow_mode not in flow_fitting.MODES:
      raise ValueError(f"unknown flow_mode {self.flow_mode!r}; allowed: {', '.join(flow_fitting.MODES)}")
    for name in self.baselines:
      baselines.make_baseline(name)


def target_pairsets(task, use_full_for_training, one_pass_full):
  """The PairSets a target-setting fit uses: train (+ dev + test), optionally each distinct set once."""
  sets = list(task.train) + (list(task.dev) + list(task.test) if use_full_for_training else [])
  if one_pass_full:
    sets = list({s.name: s for s in sets}.values())
  if not sets:
    raise ValueError(f"task {task.name} has no training sentences; use --use_full_for_training to fit on "
                     "its dev/test sentences")
  return sets


class Timer:
  """Wall seconds per named stage, summed over the stage's visits."""

  def __init__(self):
    self.seconds = {}

  @contextlib.contextmanager
  def stage(self, name):
    start = time.perf_counter()
    try:
      yield
    finally:
      self.seconds[name] = self.seconds.get(name, 0.) + time.perf_counter() - start


class Experiment:
  """Runs an ExperimentConfig; `run()` returns the list of evaluation.Result.

  `flows` maps (fit_on, dataset label) -> the Glow fitted (or reused) in this run: ("target", "STS-B"), NLI_FLOW.

  Args:
    config: ExperimentConfig.
    store: an EmbeddingStore to share with other experiments on the same model (e.g. other poolings); None
      makes one in `config.cache_dir`.
  """

  def __init__(self, config, store=None):
    self.config = config
    self.embedder = SentenceEmbedder(config.model, config.sentence_embedding_type, config.max_seq_length,
                                     strategy=config.strategy, static_shapes=config.static_shapes,
                                     use_xla=config.use_xla)
    self.store = store or EmbeddingStore(self.embedder, config.cache_dir, batch_size=config.batch_size)
    self.timer = Timer()
    self._tasks = {}
    self.isotropy = {}
    self.warnings = []
    self.lexical = {}
    self.lexical_similarities = {}  # Table 6's similarities on STS-B dev: name -> [N]
    self.lexical_pairs = None       # ... and that PairSet
    self.flows = {}
    self.baselines = {}  # (dataset label, baseline name) -> the calibration fitted in this run
    self.spaces = {}  # with config.analysis: dataset -> (sentences [N], {space: float32 [N, D]}), as evaluated
    self.analysis_markdown = ""

  # -- pieces ---------------------------------------------------------------------------------------------
  def _task(self, name):
    if name not in self._tasks:
      self._tasks[name] = data.load_task(name, self.config.data_dir)
    return self._tasks[name]

  def _embed_pairs(self, pairs):
    """(a [N, D], b [N, D]) for a PairSet, from the store."""
    with self.timer.stage("embed"):
      vectors = self.store.vectors([*pairs.sentences_a, *pairs.sentences_b], self.embedder.pooling)
    return vectors[:len(pairs)], vectors[len(pairs):]

  def _pairs_vectors(self, pairsets):
    vectors = [self._embed_pairs(p) for p in pairsets]
    return np.concatenate([a for a, _ in vectors]), np.concatenate([b for _, b in vectors])

  def _fit_vectors_stored(self):
    """Whether target fits read stored vectors (faithful flows embed their own sentences every step; baselines
    always fit on stored vectors)."""
    return ("target" in self.config.fit_on and self.config.flow_mode == "cached") or bool(self.config.baselines)

  def pairsets(self):
    """Every PairSet whose sentences this experiment embeds (evaluation sets, target and NLI fit sets)."""
    c, pairsets = self.config, []
    for task_name in c.eval_tasks:
      task = self._task(task_name)
      pairsets += getattr(task, data.TASKS[task_name].eval_split)
      if self._fit_vectors_stored():
        pairsets += target_pairsets(task, c.use_full_for_training, c.one_pass_full)
      if (c.lexical_analysis or c.analysis) and task_name == "sts-b":
        pairsets += task.dev
    if c.custom is not None:
      pairsets += (c.custom.train if self._fit_vectors_stored() else []) + \
          ([c.custom.eval] if c.custom.eval is not None else [])
    if "nli" in c.fit_on and c.flow_mode == "cached":
      pairsets += self._task(NLI_TASK).train
    return pairsets

  def _fit(self, fit_on, label, pairsets, fit_config):
    flow_dir = os.path.join(self.config.output_dir, "flows", f"{fit_on}-{label}")
    provenance = {"model": self.config.model.source, "sentence_embedding_type": self.embedder.pooling.name,
                  "max_seq_length": self.embedder.max_seq_length, "mode": self.config.flow_mode}
    try:
      reused = fitted_flow.reuse(flow_dir, fit_config, provenance)
    except errors.UserError as e:
      raise errors.UserError(f"{e.what}; use another --exp_name or remove that directory", e.where) from e
    if reused is not None:
      logging.info("flow %s-%s already fitted in %s; reusing it", fit_on, label, flow_dir)
      return reused[0]
    if self.config.flow_mode == "cached":
      pairs = pair_sources.CachedPairs(*self._pairs_vectors(pairsets))
    else:
      pairs = pair_sources.FaithfulPairs(self.embedder, [s for p in pairsets for s in p.sentences_a],
                                         [s for p in pairsets for s in p.sentences_b])
    with self.timer.stage(f"fit flow ({fit_on})"):
      flow, _ = flow_fitting.fit_flow(pairs, fit_config, flow_dir, name=f"{fit_on}-{label}", provenance=provenance)
    return flow

  def nli_flow(self):
    if NLI_FLOW not in self.flows:
      task = self._task(NLI_TASK)
      self.flows[NLI_FLOW] = self._fit(*NLI_FLOW, task.train, self.config.nli_fit)
    return self.flows[NLI_FLOW]

  def _score(self, dataset, metric, subsets, vectors, method, fit_on):
    """Results of one embedding space on one dataset. vectors: list of (a, b) per subset."""
    sims = [evaluation.cosine(a, b) for a, b in vectors]
    if metric == "auc":
      labels = np.concatenate([s.labels for s in subsets])
      return [evaluation.Result(dataset, method, fit_on, "auc", None,
                                evaluation.auc_x100(np.concatenate(sims), labels))]
    if len(subsets) == 1:
      return [evaluation.Result(dataset, method, fit_on, "spearman", None,
                                evaluation.spearman_x100(sims[0], subsets[0].labels))]
    scores = evaluation.sts_scores(subsets, sims)
    return [evaluation.Result(dataset, method, fit_on, "spearman", agg, scores[agg])
            for agg in ("all", "mean", "wmean")]

  def _diagnose(self, dataset, label, vectors):
    both = np.concatenate([np.concatenate([a, b]) for a, b in vectors])
    self.isotropy.setdefault(dataset, {})[label] = evaluation.isotropy(both)
    if self.config.analysis:
      self.spaces[dataset][1][label] = both.astype(np.float32)

  def _report_isotropy(self, dataset, fit_sets):
    """Logs (and keeps in isotropy.json) the isotropy of the fit sentences' vectors, before fitting."""
    iso, line, near = evaluation.describe_isotropy(
        np.concatenate(self._pairs_vectors(fit_sets)),
        f"the {dataset} fit sentences, {self.embedder.pooling.name}")
    self.isotropy.setdefault(dataset, {})["fit sentences"] = iso
    (logging.warning if near else logging.info)("%s", line)

  def _calibrations(self, dataset, fit_sets):
    """Fits every asked calibration of one dataset: list of (method, fit_on, transform [N, D] -> [N, D'])."""
    c, out = self.config, []
    if fit_sets and self._fit_vectors_stored():
      self._report_isotropy(dataset, fit_sets)
    if "target" in c.fit_on:
      flow = self._fit("target", dataset, fit_sets, c.target_fit)
      self.flows[("target", dataset)] = flow
      out.append(("flow", "target", functools.partial(glow.transform, flow)))
    if "nli" in c.fit_on:
      out.append(("flow", "nli", functools.partial(glow.transform, self.nli_flow())))
    if c.baselines:
      fit_x = np.concatenate(self._pairs_vectors(fit_sets))
      with self.timer.stage("fit baselines"):
        for name in c.baselines:
          calibration = baselines.make_baseline(name).fit(fit_x)
          self.baselines[(dataset, calibration.name)] = calibration
          out.append((calibration.name, "target", calibration.transform))
    return out

  def _evaluate(self, dataset, metric, subsets, calibrations):
    """Scores the raw vectors of `subsets` and each calibration of them. Returns a list of Result."""
    raw = [self._embed_pairs(s) for s in subsets]
    spaces = [("none", None, raw)] + [(method, fit_on, [(transform(a), transform(b)) for a, b in raw])
                                      for method, fit_on, transform in calibrations]
    results = []
    if self.config.analysis:
      self.spaces[dataset] = ([t for s in subsets for t in (*s.sentences_a, *s.sentences_b)], {})
    with self.timer.stage("evaluate"):
      for method, fit_on, vectors in spaces:
        results += self._score(dataset, metric, subsets, vectors, method, fit_on)
        self._diagnose(dataset, method if fit_on is None else f"{method} ({fit_on})", vectors)
    return results

  def evaluate_task(self, task_name):
    """All methods on one evaluation task. Returns a list of Result."""
    info = data.TASKS[task_name]
    task = self._task(task_name)
    needs_target = "target" in self.config.fit_on or self.config.baselines
    fit_sets = target_pairsets(task, self.config.use_full_for_training, self.config.one_pass_full) \
        if needs_target else []
    results = self._evaluate(info.label, info.metric, getattr(task, info.eval_split),
                             self._calibrations(info.label, fit_sets))
    if (self.config.lexical_analysis or self.config.analysis) and task_name == "sts-b":
      self._lexical(task)
    return results

  def evaluate_custom(self):
    """The user's own data: calibrations fitted on its training pairs (baselines saved to baselines/), scored
    on its evaluation pairs when there are some, with a warning per calibration that lowers the score."""
    custom, label = self.config.custom, data.custom.LABEL
    calibrations = self._calibrations(label, custom.train)
    for (dataset, name), calibration in self.baselines.items():
      if dataset == label:
        calibration.save(os.path.join(self.config.output_dir, "baselines", f"target-{label}-{name}.npz"))
    if custom.eval is None:
      return []
    results = self._evaluate(label, "spearman", [custom.eval], calibrations)
    for line in evaluation.calibration_warnings(results):
      logging.warning("%s", line)
      self.warnings.append(line)
    return results

  def _lexical(self, task):
    """Table 6: Spearman between similarity and word edit distance on STS-B dev (gold, raw, flows, baselines)."""
    dev = task.dev[0]
    a, b = self._embed_pairs(dev)
    sims = {"gold": dev.labels, "none": evaluation.cosine(a, b)}
    for (fit_on, dataset), flow in self.flows.items():
      if (fit_on, dataset) in (NLI_FLOW, ("target", "STS-B")):
        sims[f"flow ({fit_on})"] = evaluation.cosine(glow.transform(flow, a), glow.transform(flow, b))
    for (dataset, name), calibration in self.baselines.items():
      if dataset == "STS-B":
        sims[f"{name} (target)"] = evaluation.cosine(calibration.transform(a), calibration.transform(b))
    self.lexical_pairs, self.lexical_similarities = dev, sims
    self.lexical = {name: evaluation.lexical_correlation(dev, s) for name, s in sims.items()}

  # -- the run --------------------------------------------------------------------------------------------
  def run(self):
    os.makedirs(self.config.output_dir, exist_ok=True)
    results = []
    for task_name in self.config.eval_tasks:
      logging.info("evaluating %s", task_name)
      results += self.evaluate_task(task_name)
    if self.config.custom is not None:
      logging.info("evaluating own data (%s)", data.custom.LABEL)
      results += self.evaluate_custom()
    if self.config.analysis:
      from bert_flow_tf.analysis import report  # pylint: disable=g-import-not-at-top  (matplotlib: only when asked)
      with self.timer.stage("analysis"):
        self.analysis_markdown = report.write_analysis(self)
    self.write(results)
    return results

  def write(self, results):
    out = self.config.output_dir
    model_name = self.config.model.source
    evaluation.write_results_json(os.path.join(out, "results.json"), model_name,
                                  self.config.sentence_embedding_type, results)
    io_utils.write_text(os.path.join(out, "isotropy.json"), json.dumps(self.isotropy, indent=2) + "\n")
    io_utils.write_text(os.path.join(out, "timings.json"),
                        json.dumps({k: round(v, 2) for k, v in self.timer.seconds.items()}, indent=2) + "\n")
    io_utils.write_text(os.path.join(out, "results.md"), self.markdown(results))

  def markdown(self, results):
    c = self.config
    lines = [f"# {c.model.source}, {self.embedder.pooling.describe()}", "",
             f"Spearman x100 (STS, SICK-R, custom; STS12-16 'all' = subsets concatenated), ROC-AUC x100 (QNLI). "
             f"Flow mode: {c.flow_mode}; target sentences: "
             f"{'train+dev+test' if c.use_full_for_training else 'train'}"
             f"{'; custom: the training file (else the scored pairs)' if c.custom is not None else ''}.", "",
             evaluation.results_markdown(results) if results else "(no scored pairs: nothing evaluated)", ""]
    if self.warnings:
      lines += ["## Warnings", ""] + [f"- {w}" for w in self.warnings] + [""]
    lines += ["## Isotropy of the evaluated vectors (and of the fit sentences, before fitting)", "",
              "| dataset | space | mean cos (random pairs) | top-1 PC variance share | condition number |",
              "|---|---|---|---|---|"]
    for dataset, spaces in self.isotropy.items():
      for space, d in spaces.items():
        lines.append(f"| {dataset} | {space} | {d['mean_cosine']:.3f} | {d['top1_variance']:.3f} | "
                     f"{d['condition_number']:.3g} |")
    if self.lexical:
      lines += ["", "## Similarity vs word edit distance (STS-B dev, Spearman x100; paper Table 6)", "",
                "| similarity | rho |", "|---|---|"] + [f"| {k} | {v:.2f} |" for k, v in self.lexical.items()]
    if self.analysis_markdown:
      lines += ["", self.analysis_markdown]
    lines += ["", "## Wall time per stage (s)", "", "| stage | seconds |", "|---|---|"]
    lines += [f"| {k} | {v:.1f} |" for k, v in self.timer.seconds.items()]
    return "\n".join(lines) + "\n"


def run_experiments(configs):
  """Runs experiments that differ only in pooling (and output_dir) over one embedding store.

  Every sentence any of them needs is encoded first, in one BERT pass computing the union of the poolings'
  quantities (`pooling.quantities`); each experiment then reads its vectors from the store.

  Args:
    configs: non-empty list of ExperimentConfig on the same model, max_seq_length and cache_dir.

  Returns:
    list of (Experiment, list of evaluation.Result), in the order of `configs`.
  """
  first = Experiment(configs[0])
  experiments = [first] + [Experiment(c, first.store) for c in configs[1:]]
  names = sorted({q for e in experiments for q in pooling_lib.quantities(e.embedder.pooling)})
  with first.timer.stage("embed"):
    pairsets = list({id(p): p for e in experiments for p in e.pairsets()}.values())  # own data shared: once
    first.store.get([s for p in pairsets for s in (*p.sentences_a, *p.sentences_b)], names)
  return [(e, e.run()) for e in experiments]
