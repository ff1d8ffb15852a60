"""ExperimentSpec: the settings of one run_flow experiment, checked when built, and the fit sets they select.

  ExperimentSpec           what to embed, fit and evaluate (run_flow.py builds it from flags)
  fit_from_store_problem   why streaming the fit set from the store cannot apply to some settings (or None)
  target_pairsets          the PairSets a target-setting fit reads
"""
import dataclasses

from bert_flow_tf import data
from bert_flow_tf.calibration import baselines as baselines_lib
from bert_flow_tf.calibration import fit_config
from bert_flow_tf.embedding import settings
from bert_flow_tf.reporting import scores as scores_lib


@dataclasses.dataclass(frozen=True)
class ExperimentSpec:
  """Everything one run needs (run_flow.py builds it from flags).

  Attributes:
    model: bert_flow_tf.loaders.LoadedModel.
    pooling: str, pooling name.
    max_seq_length: int.
    data_dir: str.
    eval_tasks: tuple of bert_flow_tf.data.EVAL_TASKS names; may be empty when `custom` is given.
    custom: bert_flow_tf.data.custom.CustomData or None: the user's own training pairs and scored pairs,
      evaluated as the dataset "custom" after the eval_tasks (target flow and baselines fitted on its train).
    fit_on: tuple of reporting.scores.FIT_ON ("target" / "nli"); empty for no flow.
    target_fit_config: FlowFitConfig of the target setting; nli_fit_config: of the NLI setting.
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
    show_progress_bar: bool or None, the progress lines of encoding and flow fits (utils.progress): None auto,
      True always, False never.
  """
  model: object
  pooling: str
  data_dir: str
  output_dir: str
  max_seq_length: int = settings.MAX_SEQ_LENGTH
  eval_tasks: tuple = ("sts-b",)
  fit_on: tuple = ("target",)
  target_fit_config: fit_config.FlowFitConfig = fit_config.FlowFitConfig()
  nli_fit_config: fit_config.FlowFitConfig = fit_config.NLI_FIT_CONFIG
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
    if self.flow_mode not in fit_config.MODES:
      raise ValueError(f"unknown flow_mode {self.flow_mode!r}; allowed: {', '.join(fit_config.MODES)}")
    for name in self.baselines:
      baselines_lib.check_name(name)
    problem = self.fit_from_store and fit_from_store_problem(bool(self.cache_dir), self.flow_mode,
                                                             self.custom is not None, self.eval_tasks, self.fit_on,
                                                             self.baselines)
    if problem:
      raise ValueError(f"fit_from_store: {problem}")

  @property
  def fits_stored_vectors(self):
    """Whether target fits read stored vectors (faithful flows embed their own sentences every step; baselines
    always fit on stored vectors)."""
    return ("target" in self.fit_on and self.flow_mode == "cached") or bool(self.baselines)


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
