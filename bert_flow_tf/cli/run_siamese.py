"""Siamese BERT fine-tuning (NLI or STS regression), optionally with a jointly trained flow: flags -> one run
(the `bert-flow-siamese` command).

"BERT-NLI-flow" of the paper is this script on allnli, then run_flow.py on `<output_dir>/export/encoder`. The
original run_siamese.py's flag names are accepted as aliases (docs/flags.md).

  python run_siamese.py --flagfile=flags/minilm_snli_siamese.cfg
  python run_siamese.py --flagfile=flags/bert_base_allnli_siamese.cfg

See bert_flow_tf/siamese/ for the objectives and the files written.
"""
import os

# This process uses Keras 2 only (tf_keras): TensorFlow then skips importing Keras 3 (~1.5 s of start-up).
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags

from bert_flow_tf.cli import engine_flags
from bert_flow_tf.cli import model_flags
from bert_flow_tf.cli import one_line_errors
from bert_flow_tf.cli import outputs
from bert_flow_tf.cli import siamese_flags
from bert_flow_tf.utils import logs

FLAGS = flags.FLAGS

# Every flag, in the groups --help shows: bert_flow_tf/cli/siamese_flags.py (names: docs/flags.md). The model flags
# (--model_dir or the original's three TF1 files) and the engine flags (--tpu, --num_gpus, ...) fill the config's
# own fields; every other SiameseConfig field is a flag. The output folder is checked in main (--output_dir, or the
# original's --output_parent_dir with --exp_name).
siamese_flags.define_flags()
flags.mark_flags_as_required(siamese_flags.REQUIRED)


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  logs.quiet_tensorflow()
  model = model_flags.model_kwargs(FLAGS)
  if model.pop("preprocess_dir") is not None:
    raise app.UsageError(f"--hub_preprocess_dir={FLAGS.hub_preprocess_dir!r}: run_siamese.py reads the vocab of a "
                         "TF-Hub encoder from its assets/ or --vocab_file")
  model["model"] = model.pop("model_dir")
  config = siamese_flags.config_from_flags(FLAGS, **model, tpu=engine_flags.tpu_from_flags(),
                                           num_gpus=FLAGS.num_gpus, use_xla=FLAGS.use_xla,
                                           static_shapes=FLAGS.static_shapes)
  outputs.check_writable(config.output_dir, "the output folder (--output_dir)")
  with logs.tensorflow_startup(FLAGS.verbosity >= 1):  # the flags were read without TensorFlow: --help is quick
    from bert_flow_tf.siamese import runner  # pylint: disable=g-import-not-at-top
  strategy = engine_flags.strategy_from_flags()
  runner.run(config, strategy=strategy)
  print(f"outputs in {config.output_dir}")


def run():
  """The `bert-flow-siamese` command (`python run_siamese.py` in a clone): flags in, one-line errors out."""
  one_line_errors.run(main, help_groups=siamese_flags.GROUPS, doc=__doc__, key_flags=siamese_flags.KEY_FLAGS)


if __name__ == "__main__":
  run()
