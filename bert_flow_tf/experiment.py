"""One BERT-flow experiment of run_flow.py: embed, fit calibrations, evaluate; the orchestration only.

For each evaluation dataset the sentence vectors are scored as they are ("none"), through a flow fitted on that
dataset's own sentences ("target") and/or one flow fitted on NLI sentences ("nli"), and through the unsupervised
baselines fitted on the same target sentences as the flow. A user's own files (`spec.custom`, see
bert_flow_tf/data/custom.py) go the same way as one more dataset, "custom": calibrations fitted on the training
file, scored on the evaluation file, with a warning for each calibration that lowers the score. Before a target
fit, the isotropy of the fit sentences' vectors is logged (and kept in isotropy.json as "fit sentences").

The settings are an experiment_spec.ExperimentSpec; each calibration a calibration.calibrator one, as
SentenceEncoder's; the scoring scoring.py's. The run's outcome, the analysis' inputs included, is a plain
reporting.record.ExperimentRecord. `Experiment.run` writes what fitting leaves in `output_dir` (flows/<fit_on>-
<dataset>/: checkpoints, flow.json, TensorBoard events; baselines/target-custom-<name>.npz for own data);
experiment_runs.run_experiments runs several over one store and writes the report files.

Legend: N = pairs (or sentences), D = the embedding width.
"""
import os

import numpy as np
from absl import logging

from bert_flow_tf import data
from bert_flow_tf import scoring
from bert_flow_tf.calibration import calibrator
from bert_flow_tf.calibration import fitted_flow
from bert_flow_tf.calibration import flow_fitting
from bert_flow_tf.calibration import pair_sources
from bert_flow_tf.calibration import store_stream
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from bert_flow_tf.embedding.store import EmbeddingStore
from bert_flow_tf.evaluation import isotropy as isotropy_lib
from bert_flow_tf.experiment_spec import target_pairsets
from bert_flow_tf.reporting import scores as scores_lib
from bert_flow_tf.reporting.record import ExperimentRecord
from bert_flow_tf.utils import errors
from bert_flow_tf.utils.timer import Timer

NLI_TASK = "allnli"
# Experiment.flows key of the flow fitted on NLI sentences; a target flow's key is ("target", dataset).
NLI_FLOW = ("nli", "NLI")


class Experiment:
  """Runs an ExperimentSpec: `run()` fits its calibrations and returns its reporting.record.ExperimentRecord.

  `flows` maps (fit_on, dataset) -> the FlowCalibration fitted (or reused) in this run: ("target", "STS-B"),
  NLI_FLOW (fitted once, on the first dataset that asks for it). It is the run's one kept state, for exports.

  Args:
    spec: ExperimentSpec.
    tokenizer: the BertTokenizer of another experiment on the same model and max_seq_length to share; None makes
      one.
    store: an EmbeddingStore to share with other experiments on the same model (e.g. other poolings); None
      makes one in `spec.cache_dir`.
  """

  def __init__(self, spec, tokenizer=None, store=None):
    self.spec = spec
    self.embedder = SentenceEmbedder(spec.model, spec.pooling, spec.max_seq_length,
                                     strategy=spec.strategy, static_shapes=spec.static_shapes, use_xla=spec.use_xla,
                                     tokenizer=tokenizer)
    self.store = store or EmbeddingStore(self.embedder, spec.cache_dir, batch_size=spec.batch_size)
    self.timer = Timer()
    self._tasks = {}
    self.flows = {}

  # -- fit sets ----------------------------------------------------------------------------------------------
  def _task(self, name):
    if name not in self._tasks:
      self._tasks[name] = data.load_task(name, self.spec.data_dir)
    return self._tasks[name]

  def _embed_pairs(self, pairs):
    """(a [N, D], b [N, D]) for a PairSet, from the store."""
    with self.timer.stage("embed"):
      vectors = self.store.vectors([*pairs.sentences_a, *pairs.sentences_b], self.embedder.pooling_spec,
                                   self.spec.show_progress_bar)
    return vectors[:len(pairs)], vectors[len(pairs):]

  def _pairs_vectors(self, pairsets):
    vectors = [self._embed_pairs(p) for p in pairsets]
    return np.concatenate([a for a, _ in vectors]), np.concatenate([b for _, b in vectors])

  def pairsets(self):
    """Every PairSet whose sentences this experiment embeds (evaluation sets, target and NLI fit sets)."""
    c, pairsets = self.spec, []
    for task_name in c.eval_tasks:
      task = self._task(task_name)
      pairsets += getattr(task, data.TASKS[task_name].eval_split)
      if c.fits_stored_vectors:
        pairsets += target_pairsets(task, c.use_full_for_training, c.one_pass_full)
      if (c.lexical_analysis or c.analysis) and task_name == "sts-b":
        pairsets += task.dev
    if c.custom is not None:
      pairsets += (c.custom.train if c.fits_stored_vectors else []) + \
          ([c.custom.eval] if c.custom.eval is not None else [])
    if "nli" in c.fit_on and c.flow_mode == "cached":
      pairsets += self._task(NLI_TASK).train
    return pairsets

  # -- fits --------------------------------------------------------------------------------------------------
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
    provenance = {"model": self.spec.model.source, "sentence_embedding_type": self.embedder.pooling_spec.name,
                  "max_seq_length": self.embedder.max_seq_length, "mode": self.spec.flow_mode,
                  **({"pairs": store_stream.PAIR_SOURCE} if self.spec.fit_from_store else {})}
    try:
      reused = fitted_flow.reuse(flow_dir, fit_config, provenance)
    except errors.UserError as e:
      raise errors.UserError(f"{e.what}; use another --exp_name or remove that directory", e.where) from e
    if reused is not None:
      logging.info("flow %s-%s already fitted in %s; reusing it", fit_on, dataset, flow_dir)
      return self._with_ranges(calibrator.FlowCalibration(reused[0], fit_config, reused[1]), flow_dir, pairsets,
                               vectors, stored)
    if stored is not None:
      pairs = store_stream.StreamedPairs(stored)
    elif self.spec.flow_mode == "cached":
      pairs = pair_sources.CachedPairs(*(vectors or self._pairs_vectors(pairsets)))
    else:
      pairs = pair_sources.FaithfulPairs(self.embedder, [s for p in pairsets for s in p.sentences_a],
                                         [s for p in pairsets for s in p.sentences_b])
    with self.timer.stage(f"fit flow ({fit_on})"):
      glow_model, summary = flow_fitting.fit_flow(pairs, fit_config, flow_dir, name=f"{fit_on}-{dataset}",
                                                  provenance=provenance, show_progress_bar=self.spec.show_progress_bar)
    return self._with_ranges(calibrator.FlowCalibration(glow_model, fit_config, summary), flow_dir, pairsets,
                             vectors, stored)

  def _with_ranges(self, calibration, flow_dir, pairsets, vectors, stored):
    """The flow with its principal axes and int8 ranges fitted on its fit vectors (`calibrator.with_ranges`, as
    SentenceEncoder.fit does) and saved in flow_dir beside it."""
    x = stored if stored is not None else np.concatenate(vectors or self._pairs_vectors(pairsets))
    calibrator.save_ranges(calibrator.with_ranges(calibration, x), flow_dir)
    return calibration

  def _fit_isotropy(self, dataset, fit_vectors):
    """The isotropy of the fit sentences' vectors (isotropy.json's "fit sentences"), logged before fitting."""
    iso, line, near = isotropy_lib.describe_isotropy(
        np.concatenate(fit_vectors), f"the {dataset} fit sentences, {self.embedder.pooling_spec.name}")
    (logging.warning if near else logging.info)("%s", line)
    return iso

  def _calibrations(self, dataset, fit_sets):
    """Fits every asked calibration of one dataset.

    Returns:
      (list of (method, fit_on, calibrator calibration), the fit sentences' isotropy dict or None).
    """
    c, out = self.spec, []
    fit_vectors = stored = fit_isotropy = None  # (a, b) in memory, or the store's blocks (fit_from_store)
    if fit_sets and c.fits_stored_vectors:
      if c.fit_from_store:
        stored = store_stream.fit_set(self.store.folder, self.embedder.pooling_spec,
                                      [s for p in fit_sets for s in (*p.sentences_a, *p.sentences_b)])
      else:
        fit_vectors = self._pairs_vectors(fit_sets)
        fit_isotropy = self._fit_isotropy(dataset, fit_vectors)
    if "target" in c.fit_on:
      self.flows[("target", dataset)] = self._fit_flow("target", dataset, fit_sets, c.target_fit_config, fit_vectors,
                                                       stored)
      out.append((scores_lib.FLOW, "target", self.flows[("target", dataset)]))
    if "nli" in c.fit_on:
      if NLI_FLOW not in self.flows:
        self.flows[NLI_FLOW] = self._fit_flow(*NLI_FLOW, self._task(NLI_TASK).train, c.nli_fit_config)
      out.append((scores_lib.FLOW, "nli", self.flows[NLI_FLOW]))
    if c.baselines:
      fit_x = stored if c.fit_from_store else np.concatenate(fit_vectors)
      with self.timer.stage("fit baselines"):
        out += [(b.method, "target", b) for b in calibrator.fit_baselines(c.baselines, fit_x)]
    return out, fit_isotropy

  # -- evaluation --------------------------------------------------------------------------------------------
  def _evaluate(self, dataset, metric, subsets, calibrations, fit_isotropy):
    """scoring.evaluate_dataset of `subsets`' stored vectors; the fit sentences' isotropy goes first."""
    raw = [self._embed_pairs(s) for s in subsets]
    with self.timer.stage("evaluate"):
      out = scoring.evaluate_dataset(dataset, metric, subsets, raw, calibrations, keep_vectors=self.spec.analysis)
    if fit_isotropy is not None:
      out.isotropy = {"fit sentences": fit_isotropy, **out.isotropy}
    return out

  def evaluate_task(self, task_name):
    """All methods on one evaluation task.

    Returns:
      (scoring.DatasetScores, Table 6 (STS-B dev PairSet, similarities, rhos: scoring.table6) or None).
    """
    info = data.TASKS[task_name]
    task = self._task(task_name)
    needs_target = "target" in self.spec.fit_on or self.spec.baselines
    fit_sets = target_pairsets(task, self.spec.use_full_for_training, self.spec.one_pass_full) \
        if needs_target else []
    calibrations, fit_isotropy = self._calibrations(info.dataset, fit_sets)
    out = self._evaluate(info.dataset, info.metric, getattr(task, info.eval_split), calibrations, fit_isotropy)
    table6 = None
    if (self.spec.lexical_analysis or self.spec.analysis) and task_name == "sts-b":
      dev = task.dev[0]
      table6 = (dev, *scoring.table6(dev, *self._embed_pairs(dev), calibrations))
    return out, table6

  def evaluate_custom(self):
    """The user's own data: calibrations fitted on its training pairs (baselines saved to baselines/), scored
    on its evaluation pairs when there are some.

    Returns:
      scoring.DatasetScores; without evaluation pairs, no scores and only the fit sentences' isotropy.
    """
    custom, dataset = self.spec.custom, data.custom.DATASET
    calibrations, fit_isotropy = self._calibrations(dataset, custom.train)
    for method, _, calibration in calibrations:
      if method != scores_lib.FLOW:
        calibration.baseline.save(os.path.join(self.spec.output_dir, "baselines", f"target-{dataset}-{method}.npz"))
    if custom.eval is None:
      return scoring.DatasetScores([], {} if fit_isotropy is None else {"fit sentences": fit_isotropy})
    return self._evaluate(dataset, "spearman", [custom.eval], calibrations, fit_isotropy)

  # -- the run -----------------------------------------------------------------------------------------------
  def run(self):
    """Fits and evaluates every task (and the own data). Returns the ExperimentRecord, its analysis_markdown
    empty (`run_experiments` writes the analysis from the record's vectors)."""
    c = self.spec
    os.makedirs(c.output_dir, exist_ok=True)
    evaluated, table6 = {}, None  # dataset -> scoring.DatasetScores; Table 6 of STS-B dev
    for task_name in c.eval_tasks:
      logging.info("evaluating %s", task_name)
      evaluated[data.TASKS[task_name].dataset], task_table6 = self.evaluate_task(task_name)
      table6 = task_table6 or table6
    warnings = []
    if c.custom is not None:
      logging.info("evaluating own data (%s)", data.custom.DATASET)
      evaluated[data.custom.DATASET] = self.evaluate_custom()
      warnings = scores_lib.calibration_warnings(evaluated[data.custom.DATASET].scores)
      for line in warnings:
        logging.warning("%s", line)
    lexical_pairs, lexical_similarities, rhos = table6 or (None, {}, {})
    return ExperimentRecord(
        model=c.model.source, pooling=c.pooling,
        pooling_description=self.embedder.pooling_spec.describe(), flow_mode=c.flow_mode,
        target_sentences="train+dev+test" if c.use_full_for_training else "train", has_custom=c.custom is not None,
        scores=[s for e in evaluated.values() for s in e.scores],
        isotropy={dataset: e.isotropy for dataset, e in evaluated.items() if e.isotropy}, warnings=warnings,
        edit_distance_rhos=rhos, analysis_markdown="", timings=dict(self.timer.seconds),
        spaces={dataset: (e.sentences, e.vectors) for dataset, e in evaluated.items() if e.sentences is not None},
        lexical_pairs=lexical_pairs, lexical_similarities=lexical_similarities)
