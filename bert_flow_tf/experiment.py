"""One BERT-flow experiment: embed, fit calibrations, evaluate; the orchestration only.

For each evaluation dataset the sentence vectors are scored as they are ("none"), through a flow fitted on that
dataset's own sentences ("target") and/or one flow fitted on NLI sentences ("nli"), and through the unsupervised
baselines fitted on the same target sentences as the flow. A user's own files (`spec.custom`, see
bert_flow_tf/data/custom.py) go the same way as one more dataset, "custom": calibrations fitted on the training
file, scored on the evaluation file, with a warning for each calibration that lowers the score. Before a target
fit, the isotropy of the fit sentences' vectors is logged (and kept in isotropy.json as "fit sentences").

Every calibration is a calibration.calibrator one (FlowCalibration, BaselineCalibration), as SentenceEncoder's.
What the run reports goes out as a plain reporting.record.ExperimentRecord: bert_flow_tf/reporting/ renders and
writes it, analysis/report.py draws from the evaluated vectors.
Outputs in `output_dir`: results.json, results.md, isotropy.json, timings.json (reporting/files.py),
flows/<fit_on>-<dataset>/ (checkpoints, flow.json, TensorBoard events), baselines/target-custom-<name>.npz (own
data only).

Legend: N = pairs (or sentences), D = the embedding width.
"""
import dataclasses
import os

import numpy as np
from absl import logging

from bert_flow_tf import data
from bert_flow_tf import search
from bert_flow_tf.calibration import baselines as baselines_lib
from bert_flow_tf.calibration import calibrator
from bert_flow_tf.calibration import fitted_flow
from bert_flow_tf.calibration import flow_fitting
from bert_flow_tf.calibration import pair_sources
from bert_flow_tf.calibration import store_stream
from bert_flow_tf.embedding import settings
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from bert_flow_tf.embedding.store import EmbeddingStore
from bert_flow_tf.evaluation import isotropy as isotropy_lib
from bert_flow_tf.evaluation import lexical
from bert_flow_tf.evaluation import metrics
from bert_flow_tf.evaluation import sts
from bert_flow_tf.modeling import pooling as pooling_lib
from bert_flow_tf.reporting import files
from bert_flow_tf.reporting import scores as scores_lib
from bert_flow_tf.reporting.record import ExperimentRecord
from bert_flow_tf.utils import errors
from bert_flow_tf.utils.timer import Timer

NLI_TASK = "allnli"
# Experiment.flows key of the flow fitted on NLI sentences; a target flow's key is ("target", dataset).
NLI_FLOW = ("nli", "NLI")


@dataclasses.dataclass(frozen=True)
class ExperimentSpec:
  """Everything one run needs (run_flow.py builds it from flags).

  Attributes:
    model: bert_flow_tf.loaders.LoadedModel.
    sentence_embedding_type: str, pooling name.
    max_seq_length: int.
    data_dir: str.
    eval_tasks: tuple of bert_flow_tf.data.EVAL_TASKS names; may be empty when `custom` is given.
    custom: bert_flow_tf.data.custom.CustomData or None: the user's own training pairs and scored pairs,
      evaluated as the dataset "custom" after the eval_tasks (target flow and baselines fitted on its train).
    fit_on: tuple of reporting.scores.FIT_ON ("target" / "nli"); empty for no flow.
    target_fit: FlowFitConfig of the target setting; nli_fit: of the NLI setting.
    flow_mode: "cached" or "faithful".
    use_full_for_training: bool, target sentences from train+dev+test (else train only).
    one_pass_full: bool, with use_full_for_training, take each distinct split once (STS12-16 have
      train = dev = test; the original saw each pair three times per epoch).
    baselines: tuple of baseline names (calibration.baselines.FORMS), fitted on the target sentences.
    lexical_analysis: bool, the Table 6 edit-distance correlations on STS-B (dev, as the paper).
    analysis: bool, also the paper's Table 1, Figure 2 (with Table 6), isotropy plots and TensorBoard projector
      files (bert_flow_tf/analysis/report.py; loads matplotlib and wordfreq only then).
    output_dir: str; cache_dir: str or None (the embedding store's folder; None keeps vectors in memory);
      batch_size: int (encoding).
    fit_from_store: bool, fit the own data's target flow and whitening baselines by reading the store on disk
      (cache_dir) block by block, in memory that does not grow with the fit set (`calibration.store_stream`): each
      distinct fit sentence once, paired with the next row of its shard. Needs cache_dir, cached flow_mode,
      `custom` and no other fit set (`fit_from_store_problem`).
    strategy: tf.distribute.Strategy or None (the default) for embedding and for faithful-mode flow fits;
      static_shapes, use_xla: bool (see SentenceEmbedder, FaithfulPairs). Cached-mode flows and baselines fit on
      the default device.
    show_progress_bar: bool or None, the progress lines of encoding and flow fits: None for long jobs, True
      always, False never.
  """
  model: object
  sentence_embedding_type: str
  data_dir: str
  output_dir: str
  max_seq_length: int = settings.MAX_SEQ_LENGTH
  eval_tasks: tuple = ("sts-b",)
  fit_on: tuple = ("target",)
  target_fit: flow_fitting.FlowFitConfig = flow_fitting.FlowFitConfig()
  nli_fit: flow_fitting.FlowFitConfig = flow_fitting.NLI_FIT
  flow_mode: str = "cached"
  use_full_for_training: bool = True
  one_pass_full: bool = False
  baselines: tuple = ()
  lexical_analysis: bool = False
  analysis: bool = False
  cache_dir: object = None
  batch_size: int = settings.BATCH_SENTENCES
  strategy: object = None
  static_shapes: bool = False
  use_xla: bool = False
  custom: object = None
  fit_from_store: bool = False
  show_progress_bar: object = None

  def __post_init__(self):
    if not self.eval_tasks and self.custom is None:
      raise ValueError("nothing to run: no evaluation task and no own data (custom)")
    for task in self.eval_tasks:
      if task not in data.EVAL_TASKS:
        raise ValueError(f"unknown evaluation task {task!r}; allowed: {', '.join(data.EVAL_TASKS)}")
    for where in self.fit_on:
      if where not in scores_lib.FIT_ON:
        raise ValueError(f"unknown fit_on {where!r}; allowed: {', '.join(scores_lib.FIT_ON)}")
    if self.flow_mode not in flow_fitting.MODES:
      raise ValueError(f"unknown flow_mode {self.flow_mode!r}; allowed: {', '.join(flow_fitting.MODES)}")
    for name in self.baselines:
      baselines_lib.check_name(name)
    problem = self.fit_from_store and fit_from_store_problem(bool(self.cache_dir), self.flow_mode,
                                                             self.custom is not None, self.eval_tasks, self.fit_on,
                                                             self.baselines)
    if problem:
      raise ValueError(f"fit_from_store: {problem}")


def fit_from_store_problem(store_on_disk, flow_mode, own_data, eval_tasks, fit_on, baseline_names):
  """Why `fit_from_store` cannot apply to these ExperimentSpec settings (named as run_flow.py's flags), or None.

  Args:
    store_on_disk: bool, cache_dir is a folder; own_data: bool, `custom` is given;
    flow_mode, eval_tasks, fit_on: as ExperimentSpec; baseline_names: ExperimentSpec.baselines.
  """
  if not store_on_disk:
    return "fitting from the store reads the store on disk; cache_dir is unset or '' (in memory)"
  if flow_mode != "cached":
    return f"fitting from the store reads stored vectors; flow_mode={flow_mode} embeds every step"
  if not own_data:
    return "fitting from the store needs own sentences (train_file or eval_file); there are none"
  if eval_tasks and ("target" in fit_on or baseline_names):
    return (f"fitting from the store streams one fit set, the own sentences; eval_tasks={','.join(eval_tasks)} "
            "fits target calibrations on each task's sentences in memory")
  if "nli" in fit_on:
    return "fitting from the store streams the own sentences; fit_on=nli fits a flow on NLI in memory"
  for name in baseline_names:
    if not isinstance(baselines_lib.make_baseline(name), baselines_lib.Whitening):
      return f"fitting from the store fits whitening baselines only; baselines={name} needs every vector at once"
  return None


def target_pairsets(task, use_full_for_training, one_pass_full):
  """The PairSets a target-setting fit uses: train (+ dev + test), optionally each distinct set once."""
  sets = list(task.train) + (list(task.dev) + list(task.test) if use_full_for_training else [])
  if one_pass_full:
    sets = list({s.name: s for s in sets}.values())
  if not sets:
    raise ValueError(f"task {task.name} has no training sentences; use --use_full_for_training to fit on "
                     "its dev/test sentences")
  return sets


class Experiment:
  """Runs an ExperimentSpec; `run()` returns its reporting.record.ExperimentRecord (and writes its files).

  `flows` maps (fit_on, dataset) -> the FlowCalibration fitted (or reused) in this run: ("target", "STS-B"),
  NLI_FLOW.

  Args:
    spec: ExperimentSpec.
    tokenizer: the BertTokenizer of another experiment on the same model and max_seq_length to share; None makes
      one.
    store: an EmbeddingStore to share with other experiments on the same model (e.g. other poolings); None
      makes one in `spec.cache_dir`.
  """

  def __init__(self, spec, tokenizer=None, store=None):
    self.spec = spec
    self.embedder = SentenceEmbedder(spec.model, spec.sentence_embedding_type, spec.max_seq_length,
                                     strategy=spec.strategy, static_shapes=spec.static_shapes, use_xla=spec.use_xla,
                                     tokenizer=tokenizer)
    self.store = store or EmbeddingStore(self.embedder, spec.cache_dir, batch_size=spec.batch_size)
    self.timer = Timer()
    self._tasks = {}
    self.isotropy = {}
    self.warnings = []
    self.flows = {}
    self.baselines = {}  # (dataset, baseline name) -> the BaselineCalibration fitted in this run
    self.edit_distance_rhos = {}    # Table 6: similarity name -> Spearman x 100 with the word edit distance
    self.lexical_similarities = {}  # ... those similarities on STS-B dev: name -> [N]
    self.lexical_pairs = None       # ... and that PairSet
    self.spaces = {}  # with spec.analysis: dataset -> (sentences [N], {space: float32 [N, D]}), as evaluated

  # -- pieces ---------------------------------------------------------------------------------------------
  def _task(self, name):
    if name not in self._tasks:
      self._tasks[name] = data.load_task(name, self.spec.data_dir)
    return self._tasks[name]

  def _embed_pairs(self, pairs):
    """(a [N, D], b [N, D]) for a PairSet, from the store."""
    with self.timer.stage("embed"):
      vectors = self.store.vectors([*pairs.sentences_a, *pairs.sentences_b], self.embedder.pooling,
                                   self.spec.show_progress_bar)
    return vectors[:len(pairs)], vectors[len(pairs):]

  def _pairs_vectors(self, pairsets):
    vectors = [self._embed_pairs(p) for p in pairsets]
    return np.concatenate([a for a, _ in vectors]), np.concatenate([b for _, b in vectors])

  def _fit_vectors_stored(self):
    """Whether target fits read stored vectors (faithful flows embed their own sentences every step; baselines
    always fit on stored vectors)."""
    return ("target" in self.spec.fit_on and self.spec.flow_mode == "cached") or bool(self.spec.baselines)

  def pairsets(self):
    """Every PairSet whose sentences this experiment embeds (evaluation sets, target and NLI fit sets)."""
    c, pairsets = self.spec, []
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

  def _fit_flow(self, fit_on, dataset, pairsets, fit_config, vectors=None, stored=None):
    """The flow of (fit_on, dataset): reused from its folder when complete (`fitted_flow.reuse`), else fitted.

    Args:
      fit_on, dataset: str, name the folder flows/<fit_on>-<dataset>.
      pairsets: the PairSets fitted on (faithful mode embeds their sentences every step).
      fit_config: flow_fitting.FlowFitConfig.
      vectors: (a [N, D], b [N, D]) of `pairsets` from the store (cached mode), or None to look them up.
      stored: store_stream.StoreShards of `pairsets`' sentences (spec.fit_from_store), or None.

    Returns:
      calibrator.FlowCalibration.
    """
    flow_dir = os.path.join(self.spec.output_dir, "flows", f"{fit_on}-{dataset}")
    provenance = {"model": self.spec.model.source, "sentence_embedding_type": self.embedder.pooling.name,
                  "max_seq_length": self.embedder.max_seq_length, "mode": self.spec.flow_mode,
                  **({"pairs": store_stream.PAIR_SOURCE} if self.spec.fit_from_store else {})}
    try:
      reused = fitted_flow.reuse(flow_dir, fit_config, provenance)
    except errors.UserError as e:
      raise errors.UserError(f"{e.what}; use another --exp_name or remove that directory", e.where) from e
    if reused is not None:
      logging.info("flow %s-%s already fitted in %s; reusing it", fit_on, dataset, flow_dir)
      return calibrator.FlowCalibration(reused[0], fit_config, reused[1])
    if stored is not None:
      pairs = store_stream.StreamedPairs(stored)
    elif self.spec.flow_mode == "cached":
      pairs = pair_sources.CachedPairs(*(vectors or self._pairs_vectors(pairsets)))
    else:
      pairs = pair_sources.FaithfulPairs(self.embedder, [s for p in pairsets for s in p.sentences_a],
                                         [s for p in pairsets for s in p.sentences_b])
    with self.timer.stage(f"fit flow ({fit_on})"):
      flow, summary = flow_fitting.fit_flow(pairs, fit_config, flow_dir, name=f"{fit_on}-{dataset}",
                                            provenance=provenance, show_progress_bar=self.spec.show_progress_bar)
    return calibrator.FlowCalibration(flow, fit_config, summary)

  def _stored_fit_set(self, pairsets):
    """The fit sentences of `pairsets` in the store on disk, read block by block (spec.fit_from_store)."""
    return store_stream.fit_set(self.store.folder, self.embedder.pooling,
                                [s for p in pairsets for s in (*p.sentences_a, *p.sentences_b)])

  def nli_flow(self):
    if NLI_FLOW not in self.flows:
      self.flows[NLI_FLOW] = self._fit_flow(*NLI_FLOW, self._task(NLI_TASK).train, self.spec.nli_fit)
    return self.flows[NLI_FLOW]

  def _score(self, dataset, metric, subsets, vectors, method, fit_on):
    """Scores of one embedding space on one dataset. vectors: list of (a, b) per subset."""
    sims = [search.cosine(a, b) for a, b in vectors]
    if metric == "auc":
      gold = np.concatenate([s.labels for s in subsets])
      return [scores_lib.Score(dataset, method, fit_on, "auc", None, metrics.auc_x100(np.concatenate(sims), gold))]
    if len(subsets) == 1:
      return [scores_lib.Score(dataset, method, fit_on, "spearman", None,
                               metrics.spearman_x100(sims[0], subsets[0].labels))]
    aggregated = sts.sts_scores(subsets, sims)
    return [scores_lib.Score(dataset, method, fit_on, "spearman", agg, aggregated[agg])
            for agg in ("all", "mean", "wmean")]

  def _diagnose(self, dataset, space, vectors):
    both = np.concatenate([np.concatenate([a, b]) for a, b in vectors])
    self.isotropy.setdefault(dataset, {})[space] = isotropy_lib.isotropy(both)
    if self.spec.analysis:
      self.spaces[dataset][1][space] = both.astype(np.float32)

  def _report_isotropy(self, dataset, fit_vectors):
    """Logs (and keeps in isotropy.json) the isotropy of the fit sentences' vectors, before fitting."""
    iso, line, near = isotropy_lib.describe_isotropy(
        np.concatenate(fit_vectors), f"the {dataset} fit sentences, {self.embedder.pooling.name}")
    self.isotropy.setdefault(dataset, {})["fit sentences"] = iso
    (logging.warning if near else logging.info)("%s", line)

  def _calibrations(self, dataset, fit_sets):
    """Fits every asked calibration of one dataset: list of (method, fit_on, calibrator calibration)."""
    c, out = self.spec, []
    fit_vectors = stored = None  # (a, b) in memory, or the store's blocks (fit_from_store)
    if fit_sets and self._fit_vectors_stored():
      if c.fit_from_store:
        stored = self._stored_fit_set(fit_sets)
      else:
        fit_vectors = self._pairs_vectors(fit_sets)
        self._report_isotropy(dataset, fit_vectors)
    if "target" in c.fit_on:
      flow = self._fit_flow("target", dataset, fit_sets, c.target_fit, fit_vectors, stored)
      self.flows[("target", dataset)] = flow
      out.append((scores_lib.FLOW, "target", flow))
    if "nli" in c.fit_on:
      out.append((scores_lib.FLOW, "nli", self.nli_flow()))
    if c.baselines:
      fit_x = stored if c.fit_from_store else np.concatenate(fit_vectors)
      with self.timer.stage("fit baselines"):
        for name in c.baselines:
          calibration = calibrator.fit(name, fit_x)
          self.baselines[(dataset, calibration.method)] = calibration
          out.append((calibration.method, "target", calibration))
    return out

  def _evaluate(self, dataset, metric, subsets, calibrations):
    """Scores the raw vectors of `subsets` and each calibration of them (in float64). Returns a list of Score."""
    raw = [self._embed_pairs(s) for s in subsets]
    spaces = [(scores_lib.UNCALIBRATED, None, raw)] + [
        (method, fit_on, [(calibration.transform(a, np.float64), calibration.transform(b, np.float64))
                          for a, b in raw])
        for method, fit_on, calibration in calibrations]
    out = []
    if self.spec.analysis:
      self.spaces[dataset] = ([t for s in subsets for t in (*s.sentences_a, *s.sentences_b)], {})
    with self.timer.stage("evaluate"):
      for method, fit_on, vectors in spaces:
        out += self._score(dataset, metric, subsets, vectors, method, fit_on)
        self._diagnose(dataset, scores_lib.space_name(method, fit_on), vectors)
    return out

  def evaluate_task(self, task_name):
    """All methods on one evaluation task. Returns a list of Score."""
    info = data.TASKS[task_name]
    task = self._task(task_name)
    needs_target = "target" in self.spec.fit_on or self.spec.baselines
    fit_sets = target_pairsets(task, self.spec.use_full_for_training, self.spec.one_pass_full) \
        if needs_target else []
    out = self._evaluate(info.dataset, info.metric, getattr(task, info.eval_split),
                         self._calibrations(info.dataset, fit_sets))
    if (self.spec.lexical_analysis or self.spec.analysis) and task_name == "sts-b":
      self._lexical(task)
    return out

  def evaluate_custom(self):
    """The user's own data: calibrations fitted on its training pairs (baselines saved to baselines/), scored
    on its evaluation pairs when there are some, with a warning per calibration that lowers the score."""
    custom, dataset = self.spec.custom, data.custom.DATASET
    calibrations = self._calibrations(dataset, custom.train)
    for (fitted_on, name), calibration in self.baselines.items():
      if fitted_on == dataset:
        calibration.baseline.save(os.path.join(self.spec.output_dir, "baselines", f"target-{dataset}-{name}.npz"))
    if custom.eval is None:
      return []
    out = self._evaluate(dataset, "spearman", [custom.eval], calibrations)
    for line in scores_lib.calibration_warnings(out):
      logging.warning("%s", line)
      self.warnings.append(line)
    return out

  def _lexical(self, task):
    """Table 6: Spearman between similarity and word edit distance on STS-B dev (gold, raw, flows, baselines)."""
    dev = task.dev[0]
    a, b = self._embed_pairs(dev)
    sims = {"gold": dev.labels, scores_lib.UNCALIBRATED: search.cosine(a, b)}
    calibrations = [(scores_lib.FLOW, fit_on, flow) for (fit_on, dataset), flow in self.flows.items()
                    if (fit_on, dataset) in (NLI_FLOW, ("target", "STS-B"))]
    calibrations += [(name, "target", calibration) for (dataset, name), calibration in self.baselines.items()
                     if dataset == "STS-B"]
    for method, fit_on, calibration in calibrations:
      sims[scores_lib.space_name(method, fit_on)] = search.cosine(calibration.transform(a, np.float64),
                                                                  calibration.transform(b, np.float64))
    self.lexical_pairs, self.lexical_similarities = dev, sims
    self.edit_distance_rhos = {name: lexical.lexical_correlation(dev, s) for name, s in sims.items()}

  def _analysis_markdown(self):
    """Writes the analysis files (analysis/report.py, loaded only here: matplotlib) and returns their markdown."""
    from bert_flow_tf.analysis import report  # pylint: disable=g-import-not-at-top
    with self.timer.stage("analysis"):
      return report.write_analysis(self.spec.output_dir, self.spec.model, self.embedder.pooling.name, self.spaces,
                                   self.lexical_pairs, self.lexical_similarities)

  # -- the run --------------------------------------------------------------------------------------------
  def run(self):
    """Evaluates every task (and the own data), writes the report files. Returns the ExperimentRecord."""
    c = self.spec
    os.makedirs(c.output_dir, exist_ok=True)
    scores = []
    for task_name in c.eval_tasks:
      logging.info("evaluating %s", task_name)
      scores += self.evaluate_task(task_name)
    if c.custom is not None:
      logging.info("evaluating own data (%s)", data.custom.DATASET)
      scores += self.evaluate_custom()
    analysis_markdown = self._analysis_markdown() if c.analysis else ""
    return ExperimentRecord(
        model=c.model.source, sentence_embedding_type=c.sentence_embedding_type,
        pooling_description=self.embedder.pooling.describe(), flow_mode=c.flow_mode,
        target_sentences="train+dev+test" if c.use_full_for_training else "train", has_custom=c.custom is not None,
        scores=scores, isotropy=self.isotropy, warnings=self.warnings, edit_distance_rhos=self.edit_distance_rhos,
        analysis_markdown=analysis_markdown, timings=self.timer.seconds)


@dataclasses.dataclass
class ExperimentRun:
  """One finished experiment: `experiment` (its flows, embedder, store), `record` (what it reports) and
  `results_md` (the text written to results.md)."""
  experiment: Experiment
  record: ExperimentRecord
  results_md: str


def run_experiments(specs):
  """Runs experiments that differ only in pooling (and output_dir) over one embedding store and one tokenizer.

  Every sentence any of them needs is encoded first, in one BERT pass computing the union of the poolings'
  quantities (`pooling.quantities`); each experiment then reads its vectors from the store. Each experiment's
  report files are written when it finishes (reporting/files.py).

  Args:
    specs: non-empty list of ExperimentSpec on the same model, max_seq_length and cache_dir.

  Returns:
    list of ExperimentRun, in the order of `specs`.
  """
  first = Experiment(specs[0])
  experiments = [first] + [Experiment(s, first.embedder.tokenizer, first.store) for s in specs[1:]]
  names = sorted({q for e in experiments for q in pooling_lib.quantities(e.embedder.pooling)})
  with first.timer.stage("embed"):
    pairsets = list({id(p): p for e in experiments for p in e.pairsets()}.values())  # own data shared: once
    first.store.ensure([s for p in pairsets for s in (*p.sentences_a, *p.sentences_b)], names,
                       first.spec.show_progress_bar)
  runs = []
  for e in experiments:
    record = e.run()
    runs.append(ExperimentRun(e, record, files.write_report(e.spec.output_dir, record)))
  return runs
