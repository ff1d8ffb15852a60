"""BERT-flow, unsupervised: embed sentences, fit the flow (and baselines), evaluate, export (`bert-flow-run`).

  python run_flow.py --flagfile=flags/minilm_stsb_flow_target.cfg
  python run_flow.py --model_dir=all-minilm-l6-v2 --train_file=my_sentences.txt --eval_file=my_pairs.tsv

The original run_siamese.py's flag names are accepted as aliases (docs/flags.md). Outputs go to --output_dir
(default exp/<a name built from the settings>): results.json, results.md, isotropy.json, timings.json, flags.txt,
flows/; with --analysis also table1.json, figure2_stsb_dev.png, isotropy_<dataset>.png, tb/ (projector).
"""
import dataclasses
import os

# This process uses Keras 2 only (tf_keras): TensorFlow then skips importing Keras 3 (~1.5 s of start-up).
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags
from absl import logging

from bert_flow_tf import data
from bert_flow_tf.calibration.fit_config import FlowFitConfig
from bert_flow_tf.cli import aliases
from bert_flow_tf.cli import config_flags
from bert_flow_tf.cli import engine_flags
from bert_flow_tf.cli import model_flags
from bert_flow_tf.cli import one_line_errors
from bert_flow_tf.cli import outputs
from bert_flow_tf.cli import run_flow_flags
from bert_flow_tf.experiment_spec import ExperimentSpec, fit_from_store_problem
from bert_flow_tf.reporting import markdown
from bert_flow_tf.serving import export_folder
from bert_flow_tf.utils import errors
from bert_flow_tf.utils import io_utils
from bert_flow_tf.utils import logs

# Every flag, in the groups --help shows: bert_flow_tf/cli/run_flow_flags.py (names: docs/flags.md).
run_flow_flags.define_flags()
FLAGS = flags.FLAGS


def _check_combinations():
  """Fails at start, naming the flags, for what two flags or the filesystem decide (each value alone was checked
  while the flags were parsed)."""
  if (_eval_tasks() or "nli" in FLAGS.fit_on) and not os.path.isdir(FLAGS.data_dir):
    raise app.UsageError(f"--data_dir={FLAGS.data_dir!r} does not exist (docs/experiments.md: Data)")
  model_flags.model_kwargs(FLAGS)  # fails on incomplete TF1 files or two models
  if FLAGS.export_flow == "init_checkpoint" and not FLAGS.init_checkpoint:
    raise app.UsageError("--export_flow=init_checkpoint reads the Glow from --init_checkpoint, which is not set")
  problem = FLAGS.fit_from_store and fit_from_store_problem(
      FLAGS.cache_dir != "", FLAGS.flow_mode, bool(FLAGS.train_file or FLAGS.eval_file), _eval_tasks(),
      FLAGS.fit_on if FLAGS.fit_flow else [], FLAGS.baselines)
  if problem:
    raise app.UsageError(f"--fit_from_store: {problem}")
  if FLAGS.export_dir and len(FLAGS.pooling) > 1:
    raise app.UsageError(f"--export_dir exports one pooling; --{aliases.given_name(FLAGS, 'pooling')} lists "
                         f"{len(FLAGS.pooling)}")


def _check_fit_set(custom, target_fit_config):
  """Fails when the own training pairs are fewer than one step of the target flow's fit."""
  if custom is None or not FLAGS.fit_flow or "target" not in FLAGS.fit_on or FLAGS.fit_from_store:
    return  # from the store, the pairs are counted once the distinct sentences are stored
  own = FLAGS.train_file or FLAGS.eval_file
  try:
    target_fit_config.num_steps(len(custom.train[0]), own)
  except ValueError as e:
    flag = "--train_file" if FLAGS.train_file else "--eval_file"
    raise app.UsageError(f"{flag}: {e} (lower --{aliases.given_name(FLAGS, 'flow_batch_pairs')} or raise "
                         "--num_train_epochs)") from e


def _eval_tasks():
  if FLAGS.eval_tasks is None and (FLAGS.train_file or FLAGS.eval_file):
    return ()
  tasks = FLAGS.eval_tasks or [FLAGS.task_name]
  return data.EVAL_TASKS if "all" in tasks else tuple(tasks)


def _exp_name():
  """The default --exp_name: <exp_name_prefix>_<task>_<model>_<pooling>_<flow>."""
  flow = f"flow-{'+'.join(FLAGS.fit_on)}-{FLAGS.flow_mode}" if FLAGS.fit_flow else "noflow"
  model = os.path.basename(os.path.normpath(FLAGS.init_checkpoint or FLAGS.model_dir))
  own = FLAGS.train_file or FLAGS.eval_file
  task = f"{data.custom.DATASET}-{os.path.splitext(os.path.basename(own))[0]}" if own else FLAGS.task_name
  return f"{FLAGS.exp_name_prefix}_{task}_{model}_{'+'.join(FLAGS.pooling)}_{flow}"


def main(argv):
  logs.quiet_tensorflow()
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  _check_combinations()
  target_fit_config = config_flags.config_from_flags(FlowFitConfig, FLAGS, names=run_flow_flags.FIT_FLAGS,
                                                      only=tuple(run_flow_flags.FIT_FLAGS))
  nli_fit_config = dataclasses.replace(target_fit_config, **{field: FLAGS[flag].value
                                                              for field, flag in run_flow_flags.NLI_FIT_FLAGS.items()})
  try:
    custom = data.custom.load_custom(FLAGS.train_file, FLAGS.eval_file, FLAGS.train_format)
  except errors.UserError:
    raise  # already names its file:line
  except (ValueError, FileNotFoundError) as e:
    raise app.UsageError(str(e)) from e
  _check_fit_set(custom, target_fit_config)
  with logs.tensorflow_startup(FLAGS.verbosity >= 1):  # the flags were read without TensorFlow: --help is quick
    # pylint: disable=g-import-not-at-top
    from bert_flow_tf.experiment_runs import run_experiments
    from bert_flow_tf.utils import distribute
  strategy = engine_flags.strategy_from_flags()  # before any output: a missing device ends the run here
  output_dir = run_flow_flags.output_dir_from_flags(FLAGS, _exp_name)
  cache_dir = run_flow_flags.cache_dir_from_flags(FLAGS, output_dir)
  for folder, what in ((output_dir, "the output folder"), (FLAGS.export_dir, "--export_dir"),
                       (cache_dir, "the embedding cache (--cache_dir)")):
    if folder:
      outputs.check_writable(folder, what)
  if FLAGS.export_dir:  # the export replaces an earlier one whole, and nothing else: refused now, not after the run
    export_folder.check_replaceable(FLAGS.export_dir, overwrite=True)
  with distribute.variable_scope(strategy):
    model = model_flags.load_model_from_flags(FLAGS)
  model_flags.check_max_seq_length(FLAGS, model)
  os.makedirs(output_dir, exist_ok=True)  # the first output, once every setting has been checked
  io_utils.write_text(os.path.join(output_dir, "flags.txt"), FLAGS.flags_into_string())
  poolings = FLAGS.pooling
  specs = [ExperimentSpec(
      model=model, pooling=name, data_dir=FLAGS.data_dir,
      output_dir=output_dir if len(poolings) == 1 else os.path.join(output_dir, name),
      max_seq_length=FLAGS.max_seq_length, eval_tasks=_eval_tasks(),
      fit_on=tuple(FLAGS.fit_on) if FLAGS.fit_flow else (), target_fit_config=target_fit_config,
      nli_fit_config=nli_fit_config,
      flow_mode=FLAGS.flow_mode, use_full_for_training=FLAGS.use_full_for_training,
      one_pass_full=FLAGS.one_pass_full, baselines=tuple(FLAGS.baselines),
      lexical_analysis=FLAGS.lexical_analysis, analysis=FLAGS.analysis,
      cache_dir=cache_dir, batch_size=FLAGS.encode_batch_sentences, strategy=strategy,
      static_shapes=engine_flags.static_shapes_from_flags(strategy), use_xla=FLAGS.use_xla,
      custom=custom, fit_from_store=FLAGS.fit_from_store, show_progress_bar=FLAGS.progress) for name in poolings]
  runs = run_experiments(specs)
  for finished in runs:
    print(finished.results_md)
  if len(runs) > 1:  # the README's Results table: every pooling's rows in one
    print(markdown.poolings_table([(r.record.pooling, r.record.scores) for r in runs]))
  if FLAGS.export_dir:
    _export(runs[0].experiment)
  print(f"outputs in {output_dir}" + (f"; servable models in {FLAGS.export_dir}" if FLAGS.export_dir else ""))


def _export(experiment):
  """Exports the flow --export_flow names through SentenceEncoder.export, the one exporter (its principal axes in
  the graph, its int8 ranges in export_info.json, the model's Normalize recorded)."""
  # pylint: disable=g-import-not-at-top
  from bert_flow_tf.calibration import calibrator
  from bert_flow_tf.experiment import NLI_FLOW
  from bert_flow_tf.loaders import tf1_flow
  from bert_flow_tf.sentence_encoder import SentenceEncoder
  own = FLAGS.train_file or FLAGS.eval_file
  dataset = data.custom.DATASET if own else data.TASKS[FLAGS.task_name].dataset
  if FLAGS.export_flow == "init_checkpoint":
    calibration = calibrator.FlowCalibration(tf1_flow.load_tf1_flow(
        FLAGS.init_checkpoint, FLAGS.flow_model_config if FLAGS["flow_model_config"].present else None), None, {})
  else:
    key = {"target": ("target", dataset), "nli": NLI_FLOW, "none": None}[FLAGS.export_flow]
    if key is not None and key not in experiment.flows:
      raise app.UsageError(f"--export_flow={FLAGS.export_flow}: no such flow was fitted in this run "
                           f"(--fit_on={','.join(FLAGS.fit_on)})")
    calibration = experiment.flows[key] if key is not None else None
  encoder = SentenceEncoder(experiment.embedder, calibration=calibration, batch_size=FLAGS.encode_batch_sentences)
  paths = encoder.export(FLAGS.export_dir, overwrite=True, litert=FLAGS.export_litert)
  logging.info("exported %s (flow: %s): %s", FLAGS.export_dir, FLAGS.export_flow,
               ", ".join(str(path) for kind, path in sorted(paths.items()) if kind != "info"))


def run():
  """The `bert-flow-run` command (`python run_flow.py` in a clone): flags in, one-line errors out."""
  one_line_errors.run(main, help_groups=run_flow_flags.GROUPS, doc=__doc__, key_flags=run_flow_flags.KEY_FLAGS)


if __name__ == "__main__":
  run()
