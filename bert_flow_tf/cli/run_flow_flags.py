"""The flags of run_flow.py, in the groups its --help shows.

  run_flow_flags.define_flags()     # at the script's top; then one_line_errors.run(main, help_groups=GROUPS)

Names follow docs/flags.md: one name per concept across run_flow.py, run_siamese.py and encode; the original
BERT-flow's names are aliases (ALIASES).
"""
import os

from absl import flags

import glow
from bert_flow_tf import data
from bert_flow_tf.calibration import baselines
from bert_flow_tf.cli import aliases
from bert_flow_tf.cli import engine_flags
from bert_flow_tf.cli import model_flags

# alias -> canonical flag
ALIASES = {"sentence_embedding_type": "pooling", "predict_batch_size": "encode_batch_sentences",
           "train_batch_size": "flow_batch_pairs", "cached_dir": "cache_dir"}

GROUPS = (
    ("Model and pooling", model_flags.FLAG_NAMES + ("max_seq_length", "pooling")),
    ("Data and evaluation", ("task_name", "data_dir", "eval_tasks", "train_file", "train_format", "eval_file",
                             "baselines", "lexical_analysis", "analysis")),
    ("Flow", ("flow", "fit_on", "flow_mode", "fit_from_store", "flow_model_config", "flow_init", "flow_learning_rate",
              "num_train_epochs", "nli_flow_learning_rate", "nli_num_train_epochs", "flow_batch_pairs",
              "use_full_for_training", "one_pass_full", "seed", "save_checkpoints_steps")),
    ("Outputs", ("output_dir", "output_parent_dir", "exp_name", "exp_name_prefix", "cache_dir", "export_dir",
                 "export_flow")),
    *engine_flags.help_groups("Encoding and devices", ["encode_batch_sentences"]),
)


def define_flags(flag_values=flags.FLAGS):
  """Defines every flag of run_flow.py (GROUPS) and its ALIASES in `flag_values`."""
  fv = flag_values
  model_flags.define_model_flags(fv)
  engine_flags.define_engine_flags(fv)
  model_flags.define_max_seq_length(fv)
  flags.DEFINE_list("pooling", [model_flags.DEFAULT_POOLING],
                    "Pooling, or a comma-separated list computed in one BERT pass (each pooling's outputs then go "
                    "to <output_dir>/<pooling>/): last-avg, last2avg, first-last-avg, emb-avg, emb-last-avg, cls, "
                    "cls-raw, or the original's avg (= last-avg), avg-last-N (blocks 1 and L..: avg-last-2 = "
                    "first-last-avg), avg-last-last-N, avg-last-concat-N. See bert_flow_tf/modeling/pooling.py.",
                    flag_values=fv)
  # Data and evaluation.
  flags.DEFINE_string("task_name", "sts-b", f"Target task (one of {', '.join(data.EVAL_TASKS)}); evaluated by "
                      "default.", flag_values=fv)
  flags.DEFINE_string("data_dir", "data", "Folder with stsbenchmark/, SICK/, STS/, SNLI/, QNLI/ (docs/experiments.md: Data).",
                      flag_values=fv)
  flags.DEFINE_list("eval_tasks", None, f"Tasks to evaluate; unset: the --task_name (none with --train_file or "
                    f"--eval_file); 'all' = {','.join(data.EVAL_TASKS)}.", flag_values=fv)
  flags.DEFINE_list("baselines", [], f"Calibrations fitted on the target sentences: {baselines.FORMS}.",
                    flag_values=fv)
  flags.DEFINE_bool("lexical_analysis", False, "Table 6: similarity vs edit distance on STS-B dev.", flag_values=fv)
  flags.DEFINE_bool("analysis", False, "Also the paper's Table 1 (word-embedding matrix), Figure 2 (with Table 6), "
                    "isotropy plots and TensorBoard projector files, into the output folder "
                    "(bert_flow_tf/analysis/).", flag_values=fv)
  flags.DEFINE_string("train_file", None, "Own sentences to fit the flow and baselines on: one per line, or a TSV "
                      "of pairs (see --train_format; README: Your own sentences). Benchmarks then run only if "
                      "--eval_tasks names them.", flag_values=fv)
  flags.DEFINE_enum("train_format", "auto", data.custom.TRAIN_FORMATS, "--train_file layout: lines, pairs "
                    "(sentence1<TAB>sentence2[<TAB>score]), or auto (pairs if its first line holds a tab).",
                    flag_values=fv)
  flags.DEFINE_string("eval_file", None, "Own scored pairs, sentence1<TAB>sentence2<TAB>score (optional header): "
                      "the 'custom' column of the results; without --train_file the flow is fitted on them.",
                      flag_values=fv)
  # Flow.
  flags.DEFINE_bool("flow", True, "Fit and evaluate the flow.", flag_values=fv)
  flags.DEFINE_list("fit_on", ["target"], "Where the flow is fitted: target (the task's own sentences), nli.",
                    flag_values=fv)
  flags.DEFINE_enum("flow_mode", "cached", ["cached", "faithful"],
                    "cached: vectors computed once without dropout; faithful: BERT with dropout, recomputed "
                    "every step, as the original.", flag_values=fv)
  flags.DEFINE_bool("fit_from_store", False, "Fit the flow (and whitening baselines) on --train_file's sentences by "
                    "reading the embedding store (--cache_dir) block by block: memory that does not grow with the "
                    "file (docs/beam.md). Each distinct sentence once, paired with the next row of its store shard.",
                    flag_values=fv)
  flags.DEFINE_string("flow_model_config", glow.DEFAULT_CONFIG, "Glow config name or JSON path (original "
                      "default).", flag_values=fv)
  flags.DEFINE_enum("flow_init", "original", ["original", "ddi"], "ActNorm init: the original's or "
                    "data-dependent.", flag_values=fv)
  flags.DEFINE_float("flow_learning_rate", 1e-3, "Target setting learning rate (constant).", flag_values=fv)
  flags.DEFINE_float("num_train_epochs", 1.0, "Target setting epochs.", flag_values=fv)
  flags.DEFINE_float("nli_flow_learning_rate", 2e-5, "NLI setting learning rate.", flag_values=fv)
  flags.DEFINE_float("nli_num_train_epochs", 0.15, "NLI setting epochs.", flag_values=fv)
  flags.DEFINE_integer("flow_batch_pairs", 32, "Sentence pairs per flow step (the original's pair loss: 2x as "
                       "many vectors).", flag_values=fv)
  flags.DEFINE_bool("use_full_for_training", True, "Target sentences from train+dev+test (else train only).",
                    flag_values=fv)
  flags.DEFINE_bool("one_pass_full", False, "With use_full_for_training, take each distinct split once (STS12-16 "
                    "list the same file as train, dev and test; the original saw each pair 3 times).",
                    flag_values=fv)
  flags.DEFINE_integer("seed", 1234, "Seeds the flow init and the batch order.", flag_values=fv)
  flags.DEFINE_integer("save_checkpoints_steps", 100, "Flow checkpoint period.", flag_values=fv)
  # Outputs.
  flags.DEFINE_string("output_dir", None, "The output folder (results.json, flows/, ...); unset: "
                      "<output_parent_dir>/<exp_name>. When given, those two are ignored (so it overrides a "
                      "flagfile's).", flag_values=fv)
  flags.DEFINE_string("output_parent_dir", "exp", "The original's way to name the output folder: its parent "
                      "(with --exp_name), when --output_dir is unset.", flag_values=fv)
  flags.DEFINE_string("exp_name", None, "The output folder's name under --output_parent_dir; unset: "
                      "<exp_name_prefix>_<task>_<model>_<pooling>_<flow>.", flag_values=fv)
  flags.DEFINE_string("exp_name_prefix", "exp", "Prefix of the built --exp_name.", flag_values=fv)
  flags.DEFINE_string("cache_dir", None, "Embedding cache (the embedding store); unset: a cache/ folder beside "
                      "the output folder (exp/cache by default); '' keeps it in memory.", flag_values=fv)
  flags.DEFINE_string("export_dir", None, "Write the servable SavedModels here (text/1 and ids/1); unset: no "
                      "export.", flag_values=fv)
  flags.DEFINE_enum("export_flow", "target", ["target", "nli", "none", "init_checkpoint"],
                    "Which flow the export chains: one fitted here, none, or init_checkpoint: the Glow stored in an "
                    "original BERT-flow checkpoint (--init_checkpoint, its bert/flow/... variables; config read "
                    "from them unless --flow_model_config is given), exported unchanged (use with --flow=false).",
                    flag_values=fv)
  flags.DEFINE_integer("encode_batch_sentences", model_flags.DEFAULT_ENCODE_BATCH_SENTENCES,
                       "Sentences per BERT encoding batch (speed only; results do not depend on it).",
                       flag_values=fv)
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
