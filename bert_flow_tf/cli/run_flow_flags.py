"""The flags of run_flow.py, in the groups its --help shows.

  run_flow_flags.define_flags()     # at the script's top; then one_line_errors.run(main, help_groups=GROUPS)

Names follow docs/flags.md: one name per concept across run_flow.py, run_siamese.py and encode; the original
BERT-flow's names are aliases (ALIASES). As every command's, the flags are a config dataclass's fields
(`config_flags`): RunFlowOptions' and the flow's FlowFitConfig's, beside the shared model and engine flags; each
value is checked as it is parsed, by the library's own check. run_flow.py's main checks what two flags or the
filesystem decide, before any work.
"""
import dataclasses
import os

from absl import flags

from bert_flow_tf import data
from bert_flow_tf.calibration import baselines
from bert_flow_tf.calibration import fit_config
from bert_flow_tf.cli import aliases
from bert_flow_tf.cli import config_flags
from bert_flow_tf.cli import engine_flags
from bert_flow_tf.cli import model_flags
from bert_flow_tf.reporting import scores
from bert_flow_tf.utils import checks

# alias -> canonical flag
ALIASES = {"sentence_embedding_type": "pooling", "predict_batch_size": "encode_batch_sentences",
           "train_batch_size": "flow_batch_pairs", "cached_dir": "cache_dir", "flow": "fit_flow"}
# FlowFitConfig field -> its flag (the target setting's); weight_decay_rate and log_every_steps keep their defaults.
FIT_FLAGS = {"flow_model_config": "flow_model_config", "init": "flow_init", "learning_rate": "flow_learning_rate",
             "num_train_epochs": "num_train_epochs", "batch_size": "flow_batch_pairs", "seed": "seed",
             "save_checkpoints_steps": "save_checkpoints_steps"}
# The NLI setting's own flags (fit_config.NLI_FIT_CONFIG's values); its other settings are the target's flags.
NLI_FIT_FLAGS = {"learning_rate": "nli_flow_learning_rate", "num_train_epochs": "nli_num_train_epochs"}

GROUPS = (
    ("Model and pooling", model_flags.FLAG_NAMES + ("max_seq_length", "pooling")),
    ("Data and evaluation", ("task_name", "data_dir", "eval_tasks", "train_file", "train_format", "eval_file",
                             "baselines", "lexical_analysis", "analysis")),
    ("Flow", ("fit_flow", "fit_on", "flow_mode", "fit_from_store", "flow_model_config", "flow_init",
              "flow_learning_rate", "num_train_epochs", "nli_flow_learning_rate", "nli_num_train_epochs",
              "flow_batch_pairs", "use_full_for_training", "one_pass_full", "seed", "save_checkpoints_steps")),
    ("Outputs", ("output_dir", "output_parent_dir", "exp_name", "exp_name_prefix", "cache_dir", "export_dir",
                 "export_flow", "export_litert", "progress")),
    *engine_flags.help_groups("Encoding and devices", ["encode_batch_sentences"]),
)
# What --help shows (--helpfull: every flag): the flags of the README's commands.
KEY_FLAGS = ("model_dir", "max_seq_length", "pooling", "task_name", "data_dir", "eval_tasks", "train_file",
             "eval_file", "baselines", "fit_flow", "fit_on", "flow_mode", "flow_learning_rate", "num_train_epochs",
             "flow_batch_pairs", "seed", "output_dir", "cache_dir", "export_dir", "progress",
             "encode_batch_sentences", "tpu", "num_gpus")


_EVAL_TASK_OR_ALL = checks.one_of(data.EVAL_TASKS + ("all",))
_BASELINE = lambda _, name: baselines.check_name(name)  # pylint: disable=unnecessary-lambda-assignment


def _checked(check, default=None):
  return dataclasses.field(default=default, metadata=checks.checked(check))


@dataclasses.dataclass(frozen=True)
class RunFlowOptions:
  """What run_flow.py does besides the model, the embedding, the devices and the fit settings: one flag per field
  (the checks in the fields' metadata run while the flags are parsed).

  Attributes:
    task_name: Target task (one of sts-b, sick-r, sts-12..sts-16, qnli); evaluated by default.
    data_dir: Folder with stsbenchmark/, SICK/, STS/, SNLI/, QNLI/ (docs/experiments.md: Data).
    eval_tasks: Tasks to evaluate; unset: the --task_name (none with --train_file or --eval_file); 'all' = every
      one of --task_name's.
    baselines: Calibrations fitted on the target sentences: whitening, whitening-K, sn, natsv-K, sn+natsv-K (K a
      positive integer).
    lexical_analysis: Table 6: similarity vs edit distance on STS-B dev.
    analysis: Also the paper's Table 1 (word-embedding matrix), Figure 2 (with Table 6), isotropy plots and
      TensorBoard projector files, into the output folder (bert_flow_tf/analysis/).
    train_file: Own sentences to fit the flow and baselines on: one per line, or a TSV of pairs (see
      --train_format; README: Your own sentences). Benchmarks then run only if --eval_tasks names them.
    train_format: --train_file layout: lines, pairs (sentence1<TAB>sentence2[<TAB>score]), or auto (pairs if its
      first line holds a tab).
    eval_file: Own scored pairs, sentence1<TAB>sentence2<TAB>score (optional header): the 'custom' column of the
      results; without --train_file the flow is fitted on them.
    fit_flow: Fit and evaluate the flow (--nofit_flow: the raw vectors and the baselines only).
    fit_on: Where the flow is fitted: target (the task's own sentences), nli.
    flow_mode: cached: vectors computed once without dropout; faithful: BERT with dropout, recomputed every step,
      as the original.
    fit_from_store: Fit the flow (and whitening baselines) on --train_file's sentences by reading the embedding
      store (--cache_dir) block by block: memory that does not grow with the file (docs/beam.md). Each distinct
      sentence once, paired with the next row of its store shard.
    use_full_for_training: Target sentences from train+dev+test (else train only).
    one_pass_full: With use_full_for_training, take each distinct split once (STS12-16 list the same file as
      train, dev and test; the original saw each pair 3 times).
    output_dir: The output folder (results.json, flows/, ...); unset: <output_parent_dir>/<exp_name>. When given,
      those two are ignored (so it overrides a flagfile's).
    output_parent_dir: The original's way to name the output folder: its parent (with --exp_name), when
      --output_dir is unset.
    exp_name: The output folder's name under --output_parent_dir; unset:
      <exp_name_prefix>_<task>_<model>_<pooling>_<flow>.
    exp_name_prefix: Prefix of the built --exp_name.
    cache_dir: Embedding cache (the embedding store); unset: a cache/ folder beside the output folder (exp/cache by
      default); '' keeps it in memory.
    export_dir: Write the servable SavedModels here (text/1 and ids/1); unset: no export.
    export_flow: Which flow the export chains: target or nli (fitted here), none, or init_checkpoint: the Glow
      stored in an original BERT-flow checkpoint (--init_checkpoint, its bert/flow/... variables; config read from
      them unless --flow_model_config is given), exported unchanged (use with --nofit_flow).
    export_litert: Also write <export_dir>/litert/model.tflite and model_int8.tflite (token ids in, the exported
      vector out; MediaPipe's TextEmbedder loads them: docs/serving.md, LiteRT). Needs the litert extra.
  """
  task_name: str = _checked(checks.one_of(data.EVAL_TASKS), "sts-b")
  data_dir: str = "data"
  eval_tasks: tuple = _checked(checks.each(_EVAL_TASK_OR_ALL))
  baselines: tuple = _checked(checks.each(_BASELINE), ())
  lexical_analysis: bool = False
  analysis: bool = False
  train_file: str = None
  train_format: str = _checked(checks.one_of(data.custom.TRAIN_FORMATS), "auto")
  eval_file: str = None
  fit_flow: bool = True
  fit_on: tuple = _checked(checks.each(checks.one_of(scores.FIT_ON)), ("target",))
  flow_mode: str = _checked(checks.one_of(fit_config.MODES), "cached")
  fit_from_store: bool = False
  use_full_for_training: bool = True
  one_pass_full: bool = False
  output_dir: str = None
  output_parent_dir: str = "exp"
  exp_name: str = None
  exp_name_prefix: str = "exp"
  cache_dir: str = None
  export_dir: str = None
  export_flow: str = _checked(checks.one_of(("target", "nli", "none", "init_checkpoint")), "target")
  export_litert: bool = False

  def __post_init__(self):
    checks.check_fields(self)


def define_flags(flag_values=flags.FLAGS):
  """Defines every flag of run_flow.py (GROUPS) and its ALIASES in `flag_values`, each checked while parsed: the
  shared model, embedding and engine flags, then RunFlowOptions' fields and FlowFitConfig's (the target setting's
  FIT_FLAGS, the NLI setting's NLI_FIT_FLAGS)."""
  fv = flag_values
  model_flags.define_model_flags(fv)
  engine_flags.define_engine_flags(fv)
  model_flags.define_max_seq_length(fv)
  model_flags.define_pooling(fv, several=True)
  model_flags.define_encode_batch_sentences(fv)
  engine_flags.define_progress(fv)
  config_flags.define_config_flags(RunFlowOptions, flag_values=fv)
  config_flags.define_config_flags(fit_config.FlowFitConfig, only=tuple(FIT_FLAGS), names=FIT_FLAGS,
                                   flag_values=fv)
  config_flags.check_flag(fv, "flow_model_config", fit_config.load_glow_config)
  config_flags.define_config_flags(fit_config.FlowFitConfig, only=tuple(NLI_FIT_FLAGS), names=NLI_FIT_FLAGS,
                                   defaults={f: getattr(fit_config.NLI_FIT_CONFIG, f) for f in NLI_FIT_FLAGS},
                                   flag_values=fv)
  for flag in NLI_FIT_FLAGS.values():
    fv[flag].help = "NLI setting (--fit_on=nli): " + fv[flag].help
  aliases.define_aliases(ALIASES, fv)


def output_dir_from_flags(flag_values, default_exp_name):
  """--output_dir if given (it wins over a flagfile's --output_parent_dir/--exp_name), else the original's
  <output_parent_dir>/<exp_name>.

  Args:
    flag_values: the parsed flags.
    default_exp_name: callable () -> str, the --exp_name to use when it is unset.
  """
  fv = flag_values
  if fv.output_dir:
    return fv.output_dir
  return os.path.join(fv.output_parent_dir, fv.exp_name or default_exp_name())


def cache_dir_from_flags(flag_values, output_dir):
  """--cache_dir, or a cache/ folder beside the output folder `output_dir` ('' keeps the vectors in memory)."""
  if flag_values.cache_dir is not None:
    return flag_values.cache_dir
  return os.path.join(os.path.dirname(os.path.normpath(output_dir)), "cache")
