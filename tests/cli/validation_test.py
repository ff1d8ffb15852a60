"""Bad values end in one line before any work: every numeric flag is checked while the flags are parsed, by the
library's own check, so the Python API raises ValueError with the same sentence; output folders are probed first."""
import json
import os

import numpy as np
import pytest
from absl import flags

from bert_flow_tf import loaders
from bert_flow_tf.calibration import calibrator
from bert_flow_tf.calibration import flow_fitting
from bert_flow_tf.cli import encode_flags
from bert_flow_tf.cli import outputs
from bert_flow_tf.cli import run_flow_flags
from bert_flow_tf.cli import siamese_flags
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from bert_flow_tf.embedding.store import EmbeddingStore
from bert_flow_tf.sentence_encoder import SentenceEncoder
from tests import tiny_runs

_DEFINE = {"run_flow": run_flow_flags.define_flags, "encode": encode_flags.define_flags,
           "run_siamese": siamese_flags.define_flags}
_REQUIRED = {"encode": ["--input_file=in.txt", "--output_file=out.npy"]}


def _parse_error(script, arg):
  """The message of the error that parsing `arg` raises, with fresh flags of `script`."""
  fv = flags.FlagValues()
  _DEFINE[script](fv)
  with pytest.raises(flags.IllegalFlagValueError) as raised:
    fv(["prog"] + _REQUIRED.get(script, []) + [arg])
  return str(raised.value)


# (script, flag as typed, the sentence after absl's "flag --name=value: "), written out here.
BAD_FLAGS = [
    ("run_flow", "--max_seq_length=0", "must be an integer >= 3, got 0"),
    ("run_flow", "--max_seq_length=-5", "must be an integer >= 3, got -5"),
    ("encode", "--max_seq_length=2", "must be an integer >= 3, got 2"),
    ("run_siamese", "--max_seq_length=0", "must be an integer >= 3, got 0"),
    ("run_flow", "--encode_batch_sentences=0", "must be an integer >= 1, got 0"),
    ("run_flow", "--predict_batch_size=0", "must be an integer >= 1, got 0"),
    ("encode", "--batch_size=0", "must be an integer >= 1, got 0"),
    ("run_flow", "--num_train_epochs=0", "must be a finite number > 0, got 0.0"),
    ("run_flow", "--num_train_epochs=-1", "must be a finite number > 0, got -1.0"),
    ("run_flow", "--nli_num_train_epochs=inf", "must be a finite number > 0, got inf"),
    ("run_flow", "--flow_batch_pairs=0", "must be an integer >= 1, got 0"),
    ("run_flow", "--train_batch_size=0", "must be an integer >= 1, got 0"),
    ("run_flow", "--flow_learning_rate=nan", "must be a finite number > 0, got nan"),
    ("run_flow", "--flow_learning_rate=0", "must be a finite number > 0, got 0.0"),
    ("run_flow", "--nli_flow_learning_rate=-1e-5", "must be a finite number > 0, got -1e-05"),
    ("run_flow", "--save_checkpoints_steps=0", "must be an integer >= 1, got 0"),
    ("run_flow", "--seed=-1", "must be an integer >= 0, got -1"),
    ("run_flow", "--flow_init=lsuv", "must be one of original, ddi, got 'lsuv'"),
    ("run_flow", "--num_gpus=-1", "must be an integer >= 0, got -1"),
    ("encode", "--num_cpu_replicas=-2", "must be an integer >= 0, got -2"),
    ("run_flow", "--num_tpu_cores=0", "must be an integer >= 1, got 0"),
    ("run_flow", "--task_name=sts-17", "must be one of sts-b, sick-r, sts-12, sts-13, sts-14, sts-15, sts-16, qnli, "
                                       "got 'sts-17'"),
    ("run_flow", "--eval_tasks=sts-b,sts-99", "must be one of sts-b, sick-r, sts-12, sts-13, sts-14, sts-15, sts-16, "
                                              "qnli, all, got 'sts-99'"),
    ("run_flow", "--fit_on=target,wiki", "must be one of target, nli, got 'wiki'"),
    ("run_flow", "--baselines=whitening,pca", "unknown baseline 'pca'"),
    ("run_flow", "--sentence_embedding_type=avg,avg-max", "unknown pooling 'avg-max'"),
    ("encode", "--pooling=max", "unknown pooling 'max'"),
    ("run_siamese", "--pooling=max", "unknown pooling 'max'"),
    ("run_siamese", "--train_batch_size=0", "must be an integer >= 1, got 0"),
    ("run_siamese", "--eval_batch_pairs=-1", "must be an integer >= 1, got -1"),
    ("run_siamese", "--learning_rate=nan", "must be a finite number >= 0, got nan"),
    ("run_siamese", "--flow_learning_rate=-1", "must be a finite number >= 0, got -1.0"),
    ("run_siamese", "--num_train_epochs=0", "must be a finite number > 0, got 0.0"),
    ("run_siamese", "--warmup_proportion=1.5", "must be a number in [0, 1], got 1.5"),
    ("run_siamese", "--num_examples=-2", "must be an integer >= -1, got -2"),
    ("run_siamese", "--dupe_factor=0", "must be an integer >= 1, got 0"),
    ("run_siamese", "--l2_penalty=-0.1", "must be a finite number >= 0, got -0.1"),
]


@pytest.mark.parametrize("script, arg, sentence", BAD_FLAGS)
def test_a_bad_value_fails_while_parsing_naming_the_flag_typed(script, arg, sentence):
  message = _parse_error(script, arg)
  assert message.startswith(f"flag {arg}: "), message
  assert sentence in message, message


def test_a_missing_or_non_json_glow_config_fails_while_parsing(tmp_path):
  (tmp_path / "notes.json").write_text("coupling_width: 8\n")
  (tmp_path / "odd.json").write_text(json.dumps({"coupling_width": 8, "levels": 2}))
  for path, why in ((tmp_path / "missing.json", "no Glow config"), (tmp_path / "notes.json", "Expecting value"),
                    (tmp_path / "odd.json", "unknown Glow config fields ['levels']")):
    message = _parse_error("run_flow", f"--flow_model_config={path}")
    assert message.startswith(f"flag --flow_model_config={path}: '{path}' is not a Glow config: "), message
    assert why in message, message
  fv = flags.FlagValues()
  run_flow_flags.define_flags(fv)
  fv(["prog", "--flow_model_config=config_l2_d2_w32"])  # a shipped name parses


def test_good_values_parse_into_the_fit_config():
  fv = flags.FlagValues()
  run_flow_flags.define_flags(fv)
  fv(["prog", "--flow_learning_rate=0.01", "--train_batch_size=4", "--num_train_epochs=0.5", "--flow_init=ddi",
      "--seed=0"])
  from bert_flow_tf.cli import config_flags  # pylint: disable=g-import-not-at-top
  got = config_flags.config_from_flags(flow_fitting.FlowFitConfig, fv, names=run_flow_flags.FIT_FLAGS,
                                       only=tuple(run_flow_flags.FIT_FLAGS))
  assert got == flow_fitting.FlowFitConfig(learning_rate=0.01, batch_size=4, num_train_epochs=0.5, init="ddi",
                                           seed=0)
  assert (fv.nli_flow_learning_rate, fv.nli_num_train_epochs) == (2e-5, 0.15)  # the paper's NLI setting


# The Python API: the same sentences as ValueError, named by its keywords.
API_CASES = [
    (dict(learning_rate=float("nan")), "learning_rate must be a finite number > 0, got nan"),
    (dict(learning_rate=0.0), "learning_rate must be a finite number > 0, got 0.0"),
    (dict(num_train_epochs=-1.0), "num_train_epochs must be a finite number > 0, got -1.0"),
    (dict(batch_size=0), "batch_size must be an integer >= 1, got 0"),
    (dict(seed=-1), "seed must be an integer >= 0, got -1"),
    (dict(init="lsuv"), "init must be one of original, ddi, got 'lsuv'"),
]


@pytest.mark.parametrize("kwargs, message", API_CASES)
def test_the_fit_config_refuses_what_the_flags_refuse(kwargs, message):
  with pytest.raises(ValueError) as raised:
    flow_fitting.FlowFitConfig(**kwargs)
  assert str(raised.value) == message


@pytest.fixture(scope="module", name="tiny")
def fixture_tiny(tmp_path_factory):
  tmp = tmp_path_factory.mktemp("validation")
  return {"dir": tiny_runs.tiny_model_dir(tmp), "flow_config": tiny_runs.tiny_flow_config(tmp / "flow.json"),
          "tmp": tmp}


def test_sentence_encoder_fit_checks_its_settings_before_embedding(tiny):
  enc = SentenceEncoder.from_pretrained(tiny["dir"], max_seq_length=16)
  sentences = [f"sentence number {i} ." for i in range(10)]
  api = dict(flow_config=tiny["flow_config"])
  for kwargs, message in API_CASES:
    keywords = {"flow_config": tiny["flow_config"], **kwargs}
    with pytest.raises(ValueError, match=f"^{message}$".replace("(", r"\(").replace(")", r"\)")):
      enc.fit(sentences, **keywords)
  for config, why in ((tiny["tmp"] / "missing.json", "no Glow config"), (tiny["dir"] + "/vocab.txt", "Expecting")):
    with pytest.raises(ValueError, match=f"flow_config|flow_model_config .* is not a Glow config: {why}"):
      enc.fit(sentences, flow_config=str(config))
  with pytest.raises(ValueError, match="the sentences has 5 sentence pairs, less than one step of batch_size 32"):
    enc.fit(sentences, **api)
  assert enc.store.encoded == 0 and enc.calibration is None  # nothing was embedded
  enc.fit(sentences, batch_size=5, **api)  # 5 pairs make one step
  assert enc.calibration.fit_config.batch_size == 5 and enc.store.encoded == 10


def test_calibrator_fit_takes_one_fit_config():
  x = np.random.default_rng(0).normal(size=[8, 4]).astype(np.float32)
  with pytest.raises(ValueError, match="is not a Glow config"):
    calibrator.fit("flow", x, flow_fitting.FlowFitConfig(flow_model_config="config_nope"))
  with pytest.raises(ValueError, match="4 sentence pairs, less than one step of batch_size 32"):
    calibrator.fit("flow", x)


def test_embedding_settings_are_checked_by_the_library(tiny):
  model = loaders.load_model(tiny["dir"])
  with pytest.raises(ValueError, match=r"^max_seq_length must be an integer >= 3, got 0$"):
    SentenceEmbedder(model, max_seq_length=0)
  with pytest.raises(ValueError, match=r"^max_seq_length must be at most the model's max_position_embeddings 64, "
                                       r"got 100000$"):
    SentenceEncoder.from_pretrained(model, max_seq_length=100000)
  with pytest.raises(ValueError, match=r"^batch_size must be an integer >= 1, got 0$"):
    SentenceEncoder.from_pretrained(model, max_seq_length=16, batch_size=0)
  with pytest.raises(ValueError, match=r"^batch_size must be an integer >= 1, got 0$"):
    EmbeddingStore(SentenceEmbedder(model, max_seq_length=16), batch_size=0)


def test_an_output_folder_is_probed_and_nothing_is_left(tmp_path):
  outputs.check_writable(str(tmp_path / "a" / "b"), "--export_dir")  # can be made: nothing is made
  assert os.listdir(tmp_path) == []
  (tmp_path / "file").write_text("x")
  with pytest.raises(NotADirectoryError) as raised:
    outputs.check_writable(str(tmp_path / "file" / "out"), "--export_dir")
  assert raised.value.filename == str(tmp_path / "file") and "--export_dir" in raised.value.strerror
  unwritable = "/sys/kernel" if os.geteuid() == 0 else str(tmp_path / "ro")
  if os.geteuid() != 0:
    os.mkdir(unwritable, 0o555)
  with pytest.raises(OSError) as raised:
    outputs.check_writable(os.path.join(unwritable, "x", "y"), "the output folder")
  assert raised.value.filename == os.path.join(unwritable, "x")
  assert raised.value.strerror.startswith("the output folder cannot be written: ")
