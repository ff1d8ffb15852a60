"""Siamese BERT fine-tuning (NLI or STS regression), optionally with a jointly trained flow: flags -> one run.

The `bert-flow-siamese` command; `python run_siamese.py` in a clone runs the same `run`.
"BERT-NLI-flow" of the paper is this script on allnli, then run_flow.py on `<output_dir>/export/encoder`.

  python run_siamese.py --flagfile=flags/minilm_snli_siamese.cfg
  python run_siamese.py --flagfile=flags/bert_base_allnli_siamese.cfg

See bert_flow_tf/siamese/ for the objectives and the files written.
"""
import os

# TF's C++ start-up lines (CUDA probing on CPU machines, oneDNN notes) drown the progress; errors still raise.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# This process uses Keras 2 only (tf_keras): TensorFlow then skips importing Keras 3 (~1.5 s of start-up).
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags

from bert_flow_tf import siamese
from bert_flow_tf.cli import config_flags
from bert_flow_tf.cli import engine_flags
from bert_flow_tf.cli import model_flags
from bert_flow_tf.cli import one_line_errors
from bert_flow_tf.utils import logs

FLAGS = flags.FLAGS

# The model: --model_dir or the original's three TF1 files. The config's own model fields are filled from these.
model_flags.define_model_flags()
_MODEL_FIELDS = ("model", "bert_config_file", "vocab_file", "init_checkpoint", "do_lower_case")
# Where it runs: the engine flags shared with run_flow.py (--tpu, --num_gpus, --num_cpu_replicas, --use_xla, ...).
_ENGINE_FIELDS = ("tpu", "num_gpus", "use_xla", "static_shapes")
# Every other SiameseConfig field is a flag of the same name. --do_train stays off unless given (the original's).
config_flags.define_config_flags(siamese.SiameseConfig, skip=_MODEL_FIELDS + _ENGINE_FIELDS,
                                 defaults={"do_train": False})
flags.adopt_module_key_flags(model_flags)
flags.adopt_module_key_flags(engine_flags)
flags.adopt_module_key_flags(config_flags)
flags.mark_flags_as_required(["task_name", "data_dir", "output_dir"])


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  logs.quiet_tensorflow()
  model = model_flags.model_kwargs(FLAGS)
  if model.pop("preprocess_dir") is not None:
    raise app.UsageError(f"--hub_preprocess_dir={FLAGS.hub_preprocess_dir!r}: run_siamese.py reads the vocab of a "
                         "TF-Hub encoder from its assets/ or --vocab_file")
  model["model"] = model.pop("model_dir")
  strategy = engine_flags.strategy_from_flags()
  config = config_flags.config_from_flags(siamese.SiameseConfig, FLAGS, **model, tpu=engine_flags.tpu_from_flags(),
                                          num_gpus=FLAGS.num_gpus, use_xla=FLAGS.use_xla,
                                          static_shapes=FLAGS.static_shapes)
  siamese.run(config, strategy=strategy)


def run():
  """The command: parses the flags (--task_name, --data_dir and --output_dir required) and runs `main`."""
  one_line_errors.run(main, flags_module=__name__)


if __name__ == "__main__":
  run()
