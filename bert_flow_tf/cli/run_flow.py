"""BERT-flow, unsupervised: embed sentences, fit the flow (and baselines), evaluate, export.

The `bert-flow-run` command; `python run_flow.py` in a clone runs the same `run`.

  python run_flow.py --flagfile=flags/minilm_stsb_flow_target.cfg
  python run_flow.py --model_dir=all-minilm-l6-v2 --train_file=my_sentences.txt --eval_file=my_pairs.tsv

Flags keep the original run_siamese.py names where they exist. Outputs go to
<output_parent_dir>/<exp_name>: results.json, results.md, isotropy.json, timings.json, flags.txt, flows/;
with --analysis also table1.json, figure2_stsb_dev.png, isotropy_<dataset>.png, tb/ (projector).
"""
import dataclasses
import os

# TF's C++ start-up lines (CUDA probing on CPU machines, oneDNN notes) drown the progress; errors still raise.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# This process uses Keras 2 only (tf_keras): TensorFlow then skips importing Keras 3 (~1.5 s of start-up).
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags
from absl import logging

import glow
from bert_flow_tf.calibration import baselines
from bert_flow_tf.cli import model_flags
from bert_flow_tf.loaders import tf1_flow
from bert_flow_tf.cli import one_line_errors
from bert_flow_tf.utils import io_utils
from bert_flow_tf.utils import distribute
from bert_flow_tf.utils import errors
from bert_flow_tf.utils import logs
from bert_flow_tf.modeling import pooling
from bert_flow_tf import data
from bert_flow_tf.cli import engine_flags
from bert_flow_tf.experiment import NLI_FLOW, ExperimentConfig, run_experiments
from bert_flow_tf.calibration.fit_flow import FlowFitConfig

# Model: a directory / preset, or the original's three TF1 flags.
model_flags.define_model_flags()
flags.adopt_module_key_flags(model_flags)
flags.adopt_module_key_flags(engine_flags)
flags.DEFINE_integer("max_seq_length", 64, "Tokens per sentence including [CLS] and [SEP].")
flags.DEFINE_list("sentence_embedding_type", ["avg"],
                  "Pooling, or a comma-separated list computed in one BERT pass (each pooling's outputs then go "
                  "to <experiment dir>/<pooling>/): last-avg, last2avg, first-last-avg, emb-avg, emb-last-avg, cls, cls-raw, or the "
                    "original's avg, avg-last-N (blocks 1 and L..: avg-last-2 = first-last-avg), "
                    "avg-last-last-N, avg-last-concat-N. See bert_flow_tf/modeling/pooling.py.")
# Data and evaluation.
flags.DEFINE_string("task_name", "sts-b", f"Target task (one of {', '.join(data.EVAL_TASKS)}); evaluated by default.")
flags.DEFINE_string("data_dir", "data", "Folder with stsbenchmark/, SICK/, STS/, SNLI/, QNLI/ (README: Data).")
flags.DEFINE_list("eval_tasks", None, f"Tasks to evaluate; default the --task_name; 'all' = "
                  f"{','.join(data.EVAL_TASKS)}.")
flags.DEFINE_list("baselines", [], "Calibrations fitted on the target sentences: whitening, whitening-K, sn, "
                  "natsv-K, sn+natsv-K.")
flags.DEFINE_bool("lexical_analysis", False, "Table 6: similarity vs edit distance on STS-B dev.")
flags.DEFINE_bool("analysis", False, "Also the paper's Table 1 (word-embedding matrix), Figure 2 (with Table 6), "
                  "isotropy plots and TensorBoard projector files, into the experiment directory "
                  "(bert_flow_tf/analysis/).")
flags.DEFINE_string("train_file", None, "Own sentences to fit the flow and baselines on: one per line, or a TSV of "
                    "pairs (see --train_format; README: Your own sentences). Benchmarks then run only if "
                    "--eval_tasks names them.")
flags.DEFINE_enum("train_format", "auto", data.custom.TRAIN_FORMATS, "--train_file layout: lines, pairs "
                  "(sentence1<TAB>sentence2[<TAB>score]), or auto (pairs if its first line holds a tab).")
flags.DEFINE_string("eval_file", None, "Own scored pairs, sentence1<TAB>sentence2<TAB>score (optional header): "
                    "the 'custom' column of the results; without --train_file the flow is fitted on them.")
# Flow.
flags.DEFINE_bool("flow", True, "Fit and evaluate the flow.")
flags.DEFINE_list("fit_on", ["target"], "Where the flow is fitted: target (the task's own sentences), nli.")
flags.DEFINE_enum("flow_mode", "cached", ["cached", "faithful"],
                  "cached: vectors computed once without dropout; faithful: BERT with dropout, recomputed "
                  "every step, as the original.")
flags.DEFINE_string("flow_model_config", glow.DEFAULT_CONFIG, "Glow config name or JSON path (original default).")
flags.DEFINE_enum("flow_init", "original", ["original", "ddi"], "ActNorm init: the original's or data-dependent.")
flags.DEFINE_float("flow_learning_rate", 1e-3, "Target setting learning rate (constant).")
flags.DEFINE_float("num_train_epochs", 1.0, "Target setting epochs.")
flags.DEFINE_float("nli_flow_learning_rate", 2e-5, "NLI setting learning rate.")
flags.DEFINE_float("nli_num_train_epochs", 0.15, "NLI setting epochs.")
flags.DEFINE_integer("train_batch_size", 32, "Sentence pairs per flow step.")
flags.DEFINE_bool("use_full_for_training", True, "Target sentences from train+dev+test (else train only).")
flags.DEFINE_bool("one_pass_full", False, "With use_full_for_training, take each distinct split once (STS12-16 "
                  "list the same file as train, dev and test; the original saw each pair 3 times).")
flags.DEFINE_integer("seed", 1234, "Seeds the flow init and the batch order.")
flags.DEFINE_integer("save_checkpoints_steps", 100, "Flow checkpoint period.")
# Outputs.
flags.DEFINE_string("output_parent_dir", "exp", "Parent of the experiment directory.")
flags.DEFINE_string("exp_name", None, "Experiment directory name; default built from the settings.")
flags.DEFINE_string("exp_name_prefix", "exp", "Prefix of the default experiment name.")
flags.DEFINE_string("cached_dir", None, "Embedding cache; default <output_parent_dir>/cache; '' disables it.")
flags.DEFINE_integer("predict_batch_size", 64, "Sentences per encoding batch.")
flags.DEFINE_string("export_dir", None, "Write the servable SavedModels here (text/1 and ids/1).")
flags.DEFINE_enum("export_flow", "target", ["target", "nli", "none", "init_checkpoint"],
                  "Which flow the export chains: one fitted here, none, or init_checkpoint: the Glow stored in an "
                  "original BERT-flow checkpoint (--init_checkpoint, its bert/flow/... variables; config read from "
                  "them unless --flow_model_config is given), exported unchanged (use with --flow=false).")
FLAGS = flags.FLAGS


def _check_flags():
  """Fails at start, naming the flag, for values the run would trip on later."""
  if FLAGS.task_name not in data.EVAL_TASKS:
    raise app.UsageError(f"--task_name={FLAGS.task_name!r} is not one of {', '.join(data.EVAL_TASKS)}")
  if (_eval_tasks() or "nli" in FLAGS.fit_on) and not os.path.isdir(FLAGS.data_dir):
    raise app.UsageError(f"--data_dir={FLAGS.data_dir!r} does not exist (README: Data)")
  model_flags.model_kwargs(FLAGS)  # fails on incomplete TF1 files or two models
  for name in FLAGS.baselines:
    try:
      baselines.make_baseline(name)
    except ValueError as e:
      raise app.UsageError(f"--baselines: {e}") from e
  for name in FLAGS.sentence_embedding_type:
    try:
      pooling.check_name(name)
    except ValueError as e:
      raise app.UsageError(f"--sentence_embedding_type: {e}") from e
  if FLAGS.export_flow == "init_checkpoint" and not FLAGS.init_checkpoint:
    raise app.UsageError("--export_flow=init_checkpoint reads the Glow from --init_checkpoint, which is not set")
  if FLAGS.export_dir and len(FLAGS.sentence_embedding_type) > 1:
    raise app.UsageError("--export_dir exports one pooling; --sentence_embedding_type lists "
                         f"{len(FLAGS.sentence_embedding_type)}")


def _eval_tasks():
  if FLAGS.eval_tasks is None and (FLAGS.train_file or FLAGS.eval_file):
    return ()
  tasks = FLAGS.eval_tasks or [FLAGS.task_name]
  if tasks == ["all"]:
    return data.EVAL_TASKS
  for task in tasks:
    if task not in data.EVAL_TASKS:
      raise app.UsageError(f"--eval_tasks: {task!r} is not one of {', '.join(data.EVAL_TASKS)} or 'all'")
  return tuple(tasks)


def _exp_name():
  if FLAGS.exp_name:
    return FLAGS.exp_name
  flow = f"flow-{'+'.join(FLAGS.fit_on)}-{FLAGS.flow_mode}" if FLAGS.flow else "noflow"
  model = os.path.basename(os.path.normpath(FLAGS.init_checkpoint or FLAGS.model_dir))
  own = FLAGS.train_file or FLAGS.eval_file
  task = f"{data.custom.LABEL}-{os.path.splitext(os.path.basename(own))[0]}" if own else FLAGS.task_name
  return f"{FLAGS.exp_name_prefix}_{task}_{model}_{'+'.join(FLAGS.sentence_embedding_type)}_{flow}"


def main(argv):
  logs.quiet_tensorflow()
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  _check_flags()
  try:
    custom = data.custom.load_custom(FLAGS.train_file, FLAGS.eval_file, FLAGS.train_format)
  except errors.UserError:
    raise  # already names its file:line
  except (ValueError, FileNotFoundError) as e:
    raise app.UsageError(str(e)) from e
  strategy = engine_flags.strategy_from_flags()  # before any output: a missing device ends the run here
  output_dir = os.path.join(FLAGS.output_parent_dir, _exp_name())
  os.makedirs(output_dir, exist_ok=True)
  io_utils.write_text(os.path.join(output_dir, "flags.txt"), FLAGS.flags_into_string())
  target_fit = FlowFitConfig(flow_model_config=FLAGS.flow_model_config, init=FLAGS.flow_init,
                             learning_rate=FLAGS.flow_learning_rate, num_train_epochs=FLAGS.num_train_epochs,
                             batch_size=FLAGS.train_batch_size, seed=FLAGS.seed,
                             save_checkpoints_steps=FLAGS.save_checkpoints_steps)
  with distribute.variable_scope(strategy):
    model = model_flags.load_model_from_flags(FLAGS)
  poolings = FLAGS.sentence_embedding_type
  configs = [ExperimentConfig(
      model=model, sentence_embedding_type=name, data_dir=FLAGS.data_dir,
      output_dir=output_dir if len(poolings) == 1 else os.path.join(output_dir, name),
      max_seq_length=FLAGS.max_seq_length, eval_tasks=_eval_tasks(),
      fit_on=tuple(FLAGS.fit_on) if FLAGS.flow else (), target_fit=target_fit,
      nli_fit=dataclasses.replace(target_fit, learning_rate=FLAGS.nli_flow_learning_rate,
                                  num_train_epochs=FLAGS.nli_num_train_epochs),
      flow_mode=FLAGS.flow_mode, use_full_for_training=FLAGS.use_full_for_training,
      one_pass_full=FLAGS.one_pass_full, baselines=tuple(FLAGS.baselines),
      lexical_analysis=FLAGS.lexical_analysis, analysis=FLAGS.analysis,
      cache_dir=os.path.join(FLAGS.output_parent_dir, "cache") if FLAGS.cached_dir is None else FLAGS.cached_dir,
      batch_size=FLAGS.predict_batch_size, strategy=strategy,
      static_shapes=engine_flags.static_shapes_from_flags(strategy), use_xla=FLAGS.use_xla,
      custom=custom) for name in poolings]
  experiments = run_experiments(configs)
  for experiment, _ in experiments:
    print(open(os.path.join(experiment.config.output_dir, "results.md"), encoding="utf-8").read())
  if FLAGS.export_dir:
    _export(experiments[0][0])
  logging.info("outputs in %s", output_dir)


def _export(experiment):
  from bert_flow_tf import export  # pylint: disable=g-import-not-at-top
  own = FLAGS.train_file or FLAGS.eval_file
  dataset = data.custom.LABEL if own else data.TASKS[FLAGS.task_name].label
  if FLAGS.export_flow == "init_checkpoint":
    flow = tf1_flow.load_tf1_flow(FLAGS.init_checkpoint,
                                  FLAGS.flow_model_config if FLAGS["flow_model_config"].present else None)
  else:
    key = {"target": ("target", dataset), "nli": NLI_FLOW, "none": None}[FLAGS.export_flow]
    if key is not None and key not in experiment.flows:
      raise app.UsageError(f"--export_flow={FLAGS.export_flow}: no such flow was fitted in this run "
                           f"(--fit_on={','.join(FLAGS.fit_on)})")
    flow = experiment.flows.get(key)
  paths = export.export_models(experiment.embedder, flow, FLAGS.export_dir, overwrite=True)
  logging.info("exported %s (flow: %s): %s and %s", FLAGS.export_dir, FLAGS.export_flow, paths["text"],
               paths["ids"])


def run():
  """The command: parses the flags and runs `main`, with one-line errors."""
  one_line_errors.run(main, flags_module=__name__)


if __name__ == "__main__":
  run()
