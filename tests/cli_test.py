"""The entry points' flags: model flags and their checks, config dataclass -> flags -> config, one name per
concept with the original's names as aliases, and the grouped --help."""
import dataclasses
import inspect
import os
import re
import subprocess

import pytest
from absl import app
from absl import flags

from bert_flow_tf import siamese
from bert_flow_tf.calibration import flow_fitting
from bert_flow_tf.cli import aliases
from bert_flow_tf.cli import beam_flags
from bert_flow_tf.cli import config_flags
from bert_flow_tf.cli import encode_flags
from bert_flow_tf.cli import flag_help
from bert_flow_tf.cli import model_flags
from bert_flow_tf.cli import run_flow_flags
from bert_flow_tf.cli import siamese_flags
from bert_flow_tf.modeling import pooling
from bert_flow_tf.sentence_encoder import SentenceEncoder
from bert_flow_tf.utils import errors
from tests import tiny_runs


def _model_flags(*argv):
  fv = flags.FlagValues()
  model_flags.define_model_flags(fv)
  fv(["prog"] + list(argv))
  return fv


def test_model_kwargs_directory_or_tf1_files():
  assert model_flags.model_kwargs(_model_flags()) == {
      "model_dir": "all-minilm-l6-v2", "bert_config_file": None, "vocab_file": None, "init_checkpoint": None,
      "do_lower_case": None, "preprocess_dir": None}
  tf1 = model_flags.model_kwargs(_model_flags("--bert_config_file=c.json", "--vocab_file=v.txt",
                                              "--init_checkpoint=m.ckpt", "--do_lower_case"))
  assert (tf1["model_dir"], tf1["bert_config_file"], tf1["do_lower_case"]) == (None, "c.json", True)


@pytest.mark.parametrize("argv, message", [
    (["--init_checkpoint=m.ckpt"], "missing: --bert_config_file, --vocab_file"),
    (["--bert_config_file=c.json", "--vocab_file=v"], "missing: --init_checkpoint"),
    (["--model_dir=x", "--bert_config_file=c", "--vocab_file=v", "--init_checkpoint=m"], "--model_dir='x' cannot"),
])
def test_model_kwargs_names_the_bad_flags(argv, message):
  with pytest.raises(app.UsageError, match=message):
    model_flags.model_kwargs(_model_flags(*argv))


@dataclasses.dataclass(frozen=True)
class _Config:
  """A config.

  Attributes:
    name: str. Who.
    splits: tuple of str, the splits (a
      continuation line).
    steps, keep: int. Counts.
    rate: float.
    flow: bool. Whether.
    model: str or None. Filled by the caller.
  """
  name: str
  splits: tuple = ("train",)
  steps: int = 10
  keep: int = 3
  rate: float = 0.5
  flow: bool = True
  model: str = None


def test_attribute_docs_joins_continuations_and_shares_entries():
  docs = config_flags.attribute_docs(_Config)
  assert docs["splits"] == "tuple of str, the splits (a continuation line)."
  assert docs["steps"] == docs["keep"] == "int. Counts."
  assert sorted(docs) == sorted(f.name for f in dataclasses.fields(_Config))


def test_config_flags_round_trip():
  fv = flags.FlagValues()
  config_flags.define_config_flags(_Config, skip=("model",), defaults={"flow": False}, flag_values=fv)
  assert "model" not in fv and fv["steps"].help == "int. Counts."
  fv(["prog", "--name=a", "--splits=dev,test", "--rate=0.25"])
  config = config_flags.config_from_flags(_Config, fv, model="m")
  assert config == _Config(name="a", splits=("dev", "test"), steps=10, keep=3, rate=0.25, flow=False, model="m")


def test_config_flags_refuse_unknown_names_and_types():
  with pytest.raises(ValueError, match="no field\\(s\\) modle"):
    config_flags.define_config_flags(_Config, skip=("modle",), flag_values=flags.FlagValues())

  @dataclasses.dataclass
  class Odd:
    """Attributes:
      x: dict. No flag kind.
    """
    x: dict = None

  with pytest.raises(TypeError, match="Odd.x"):
    config_flags.define_config_flags(Odd, flag_values=flags.FlagValues())


# --- One name per concept (docs/flags.md): canonical flags, the original's names as aliases, grouped --help. ---

_SCRIPTS = {"run_flow": run_flow_flags, "run_siamese": siamese_flags, "encode": encode_flags, "beam": beam_flags}
_REQUIRED = {"encode": ("--input_file=in.txt", "--output_file=out.npy"),  # each script's required flags
             "beam": ("--input_pattern=*.txt", "--cache_dir=c")}


def _script_flags(script, *argv):
  fv = flags.FlagValues()
  _SCRIPTS[script].define_flags(fv)
  fv(["prog"] + list(_REQUIRED.get(script, ())) + list(argv))
  return fv


# Written out here, not read from the code: script -> {old name: canonical name}.
_EXPECTED_ALIASES = {
    "run_flow": {"sentence_embedding_type": "pooling", "predict_batch_size": "encode_batch_sentences",
                 "train_batch_size": "flow_batch_pairs", "cached_dir": "cache_dir"},
    "run_siamese": {"sentence_embedding_type": "pooling", "train_batch_size": "train_batch_pairs",
                    "eval_batch_size": "eval_batch_pairs", "predict_batch_size": "predict_batch_pairs"},
    "encode": {"sentence_embedding_type": "pooling", "batch_size": "encode_batch_sentences"},
    "beam": {"sentence_embedding_type": "pooling", "predict_batch_size": "encode_batch_sentences",
             "cached_dir": "cache_dir"},
}


@pytest.mark.parametrize("script", sorted(_SCRIPTS))
def test_each_script_has_exactly_the_expected_aliases(script):
  assert aliases.aliases_of(_script_flags(script)) == _EXPECTED_ALIASES[script]


@pytest.mark.parametrize("script, alias, text, canonical, want", [
    ("run_flow", "sentence_embedding_type", "avg,cls", "pooling", ["avg", "cls"]),
    ("run_flow", "predict_batch_size", "7", "encode_batch_sentences", 7),
    ("run_flow", "train_batch_size", "9", "flow_batch_pairs", 9),
    ("run_flow", "cached_dir", "", "cache_dir", ""),
    ("run_siamese", "sentence_embedding_type", "cls", "pooling", "cls"),
    ("run_siamese", "train_batch_size", "5", "train_batch_pairs", 5),
    ("run_siamese", "eval_batch_size", "6", "eval_batch_pairs", 6),
    ("run_siamese", "predict_batch_size", "3", "predict_batch_pairs", 3),
    ("encode", "sentence_embedding_type", "first-last-avg", "pooling", "first-last-avg"),
    ("encode", "batch_size", "4", "encode_batch_sentences", 4),
])
def test_an_alias_sets_its_canonical_flag(script, alias, text, canonical, want):
  fv = _script_flags(script, f"--{alias}={text}")
  assert fv[canonical].value == want and fv[canonical].present
  assert not fv[canonical].using_default_value
  assert aliases.given_name(fv, canonical) == alias
  assert aliases.given_name(_script_flags(script, f"--{canonical}={text}"), canonical) == canonical


def test_aliases_in_a_flagfile_and_flags_txt_round_trip(tmp_path):
  cfg = tmp_path / "original.cfg"
  cfg.write_text("--sentence_embedding_type=avg\n--train_batch_size=8\n--predict_batch_size=16\n--cached_dir=c\n")
  fv = _script_flags("run_flow", f"--flagfile={cfg}")
  assert (fv.pooling, fv.flow_batch_pairs, fv.encode_batch_sentences, fv.cache_dir) == (["avg"], 8, 16, "c")
  # flags.txt (flags_into_string) writes each value once, under the canonical name, and reads back the same.
  text = fv.flags_into_string()
  assert "--pooling=avg" in text and "sentence_embedding_type" not in text and "cached_dir" not in text
  (tmp_path / "flags.txt").write_text(text)
  again = _script_flags("run_flow", f"--flagfile={tmp_path / 'flags.txt'}")
  assert (again.pooling, again.flow_batch_pairs, again.encode_batch_sentences, again.cache_dir) == (
      ["avg"], 8, 16, "c")


def test_a_bad_value_through_an_alias_names_the_alias():
  with pytest.raises(flags.IllegalFlagValueError, match=r"--batch_size=abc"):
    _script_flags("encode", "--batch_size=abc")


def test_siamese_config_reads_the_renamed_flags_and_errors_name_what_was_typed():
  model = dict(model="m", bert_config_file=None, vocab_file=None, init_checkpoint=None, do_lower_case=None,
               tpu=None, num_gpus=0, use_xla=False, static_shapes=False)
  base = ("--task_name=sts-b", "--data_dir=d", "--output_dir=o", "--do_train")
  config = siamese_flags.config_from_flags(_script_flags(
      "run_siamese", *base, "--sentence_embedding_type=cls", "--train_batch_size=5", "--predict_batch_pairs=3"),
                                           **model)
  assert (config.sentence_embedding_type, config.train_batch_size, config.predict_batch_size) == ("cls", 5, 3)
  assert config.eval_batch_size == 64 and config.output_dir == "o"
  # A value out of range fails while parsing (tests/cli/validation_test.py); what two fields decide, in main.
  with pytest.raises(flags.IllegalFlagValueError, match=r"^flag --train_batch_size=0: must be an integer >= 1"):
    _script_flags("run_siamese", *base, "--train_batch_size=0")
  with pytest.raises(errors.UserError) as raised:
    siamese_flags.config_from_flags(_script_flags("run_siamese", *base, "--predict_pool"), **model)
  assert raised.value.where == "--do_predict, --predict_pool" and raised.value.what == "predict_pool needs do_predict"


@pytest.mark.parametrize("argv, want", [
    (["--output_dir=runs/a"], "runs/a"),
    (["--output_parent_dir=p", "--exp_name=e", "--output_dir=runs/a"], "runs/a"),  # it overrides a flagfile's
    (["--output_parent_dir=runs", "--exp_name=b"], os.path.join("runs", "b")),
    ([], os.path.join("exp", "built")),
    (["--exp_name_prefix=p"], os.path.join("exp", "built")),
])
def test_run_flow_output_dir_and_the_cache_beside_it(argv, want):
  fv = _script_flags("run_flow", *argv)
  output_dir = run_flow_flags.output_dir_from_flags(fv, lambda: "built")
  assert output_dir == want
  assert run_flow_flags.cache_dir_from_flags(fv, output_dir) == os.path.join(os.path.dirname(want), "cache")
  assert run_flow_flags.cache_dir_from_flags(_script_flags("run_flow", *argv, "--cache_dir="), output_dir) == ""


def test_run_siamese_output_dir_or_the_originals_pair():
  assert siamese_flags.output_dir_from_flags(_script_flags("run_siamese", "--output_dir=o")) == "o"
  assert siamese_flags.output_dir_from_flags(_script_flags(
      "run_siamese", "--output_parent_dir=p", "--exp_name=e")) == os.path.join("p", "e")
  assert siamese_flags.output_dir_from_flags(_script_flags(
      "run_siamese", "--output_parent_dir=p", "--exp_name=e", "--output_dir=o")) == "o"
  for argv in ([], ["--exp_name=e"], ["--output_parent_dir=p"]):
    with pytest.raises(app.UsageError, match="no output folder"):
      siamese_flags.output_dir_from_flags(_script_flags("run_siamese", *argv))


def test_shared_concepts_have_one_name_and_one_default_in_every_script():
  fvs = {script: _script_flags(script) for script in _SCRIPTS}
  for name in ("model_dir", "max_seq_length", "pooling", "tpu", "num_gpus", "use_xla", "static_shapes"):
    defaults = {script: fv[name].default for script, fv in fvs.items() if name in fv}  # beam: no engine flags
    defaults = {script: value[0] if isinstance(value, list) else value for script, value in defaults.items()}
    assert len(set(defaults.values())) == 1, (name, defaults)
  assert fvs["run_flow"]["pooling"].default == ["last-avg"]  # the original's avg computes the same
  assert (fvs["run_flow"]["encode_batch_sentences"].default == fvs["encode"]["encode_batch_sentences"].default
          == fvs["beam"]["encode_batch_sentences"].default)
  assert "output_dir" in fvs["run_flow"] and "output_dir" in fvs["run_siamese"]
  # The library and the Python API default to the same model and batch of sentences; the Python API takes the
  # model's own pooling and length (its sentence-transformers folder: mean pooling, 256), the commands the paper's.
  api_defaults = {k: v.default for k, v in inspect.signature(SentenceEncoder.from_pretrained).parameters.items()}
  assert api_defaults["pooling"] is None and api_defaults["max_seq_length"] is None
  assert fvs["encode"]["pooling"].default == "last-avg" and fvs["encode"]["max_seq_length"].default == 64
  assert api_defaults["model"] == fvs["encode"]["model_dir"].default
  assert api_defaults["batch_size"] == fvs["encode"]["encode_batch_sentences"].default
  assert siamese.SiameseConfig.__dataclass_fields__["sentence_embedding_type"].default == "last-avg"
  # A batch size names its unit: sentences or pairs.
  for fv in fvs.values():
    sizes = [n for n, f in fv._flags().items() if "batch" in n and not aliases.is_alias(f)]  # pylint: disable=protected-access
    assert sizes and all(n.endswith(("_sentences", "_pairs")) for n in sizes), sizes


@pytest.mark.parametrize("script", sorted(_SCRIPTS))
def test_help_groups_list_every_flag_of_the_script_once(script):
  fv = flags.FlagValues()
  _SCRIPTS[script].define_flags(fv)
  own = sorted(name for name, flag in fv._flags().items()  # pylint: disable=protected-access
               if name == flag.name and not aliases.is_alias(flag))
  grouped = [name for _, names in _SCRIPTS[script].GROUPS for name in names]
  assert sorted(grouped) == own
  text = flag_help.help_text(fv, _SCRIPTS[script].GROUPS, "Title line.\n\n  python x.py --a\n\nMore.")
  assert text.startswith("Title line.\n\n  python x.py --a\n\n") and "More." not in text
  main, alias_part = text.split("Accepted aliases")
  for name in own:
    assert f"  --{name} (default: " in main or f"  --[no]{name} (default: " in main, name
  for alias, canonical in _EXPECTED_ALIASES[script].items():
    assert f"--{alias} " not in main and f"--{alias} " in alias_part and f"= --{canonical}" in alias_part
  assert not re.search(r"(^|[^.])\.\./", text)  # no path outside the repository (".../x.ckpt" is an ellipsis)


def test_help_shows_the_real_defaults():
  fv = flags.FlagValues()
  run_flow_flags.define_flags(fv)
  text = flag_help.help_text(fv, run_flow_flags.GROUPS)
  for line in ("--pooling (default: last-avg)", "--flow_batch_pairs (default: 32)", "--[no]flow (default: true)",
               "--[no]analysis (default: false)", "--cache_dir (default: unset)", "--output_parent_dir (default: exp)",
               "--encode_batch_sentences (default: 64)", "--fit_on (default: target)"):
    assert f"\n  {line}\n" in text, line


def test_help_groups_refuse_aliases_unknown_and_repeated_flags():
  fv = flags.FlagValues()
  encode_flags.define_flags(fv)
  with pytest.raises(ValueError, match="alias --batch_size"):
    flag_help.check_groups(fv, [("A", ("batch_size",))])
  with pytest.raises(ValueError, match="--nope, which is not defined"):
    flag_help.check_groups(fv, [("A", ("nope",))])
  with pytest.raises(ValueError, match="'A' and 'B'"):
    flag_help.check_groups(fv, [("A", ("pooling",)), ("B", ("pooling",))])


_KEY_FLAGS = {"run_flow": run_flow_flags.KEY_FLAGS, "run_siamese": siamese_flags.KEY_FLAGS}


@pytest.mark.parametrize("script", sorted(_KEY_FLAGS))
def test_help_lists_the_key_flags_on_one_screen_and_helpfull_every_flag(script):
  fv = flags.FlagValues()
  _SCRIPTS[script].define_flags(fv)
  short = flag_help.help_text(fv, _SCRIPTS[script].GROUPS, "Title.", _KEY_FLAGS[script])
  full = flag_help.full_help_text(fv, _SCRIPTS[script].GROUPS, "Title.")
  assert len(short.splitlines()) < 100 and len(full.splitlines()) > len(short.splitlines())
  own = [n for n, f in fv._flags().items() if n == f.name and not aliases.is_alias(f)]  # pylint: disable=protected-access
  listed = lambda text: {n for n in own if re.search(rf"^  --(\[no\])?{n} \(default: ", text, re.M)}
  assert listed(short) == set(_KEY_FLAGS[script]) and listed(full) == set(own)
  assert f"{len(own) - len(_KEY_FLAGS[script])} more flags: --helpfull" in short
  for name in ("model_dir", "max_seq_length", "pooling", "output_dir"):
    assert name in _KEY_FLAGS[script]
  assert "Accepted aliases" in short and "Accepted aliases" in full


def test_every_pooling_help_comes_from_the_pooling_list():
  for script in ("run_flow", "run_siamese", "encode"):
    fv = _script_flags(script)
    assert fv["pooling"].help.startswith(model_flags.POOLING_HELP), script
  for name in pooling.POOLING_NAMES:
    assert name in model_flags.POOLING_HELP


def test_the_fit_flags_are_the_fit_configs_fields():
  fv = _script_flags("run_flow")
  defaults = flow_fitting.FlowFitConfig()
  for field, flag in run_flow_flags.FIT_FLAGS.items():
    assert fv[flag].default == getattr(defaults, field), flag
  for field, flag in run_flow_flags.NLI_FIT_FLAGS.items():
    assert fv[flag].default == getattr(flow_fitting.NLI_FIT_CONFIG, field), flag
  assert (flow_fitting.NLI_FIT_CONFIG.learning_rate, flow_fitting.NLI_FIT_CONFIG.num_train_epochs) == (2e-5, 0.15)
  assert (defaults.learning_rate, defaults.num_train_epochs, defaults.batch_size) == (1e-3, 1.0, 32)


@pytest.mark.slow
def test_help_exits_0_with_the_groups():
  """--help across the process boundary: the scripts wire their groups in, print them and exit 0 (absl: 1)."""
  runs = {script: subprocess.Popen(tiny_runs.command(script, [flag]), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, cwd=tiny_runs.REPO, env=dict(os.environ, PYTHONPATH=tiny_runs.REPO))
          for script, flag in (("run_flow", "--help"), ("run_siamese", "--help"), ("encode", "-h"))}
  for script, process in runs.items():
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, (script, err[-2000:])
    assert "Model and pooling:\n  --model_dir (default: all-minilm-l6-v2)" in out, script
    assert "Accepted aliases" in out and "--logtostderr" not in out, script
    assert len(out.splitlines()) < 100, (script, len(out.splitlines()))
  # --help is answered before required flags are checked and before the flagfile is read.
  result = subprocess.run(tiny_runs.command("run_siamese", ["--flagfile=missing.cfg", "--helpfull"]),
                          capture_output=True, text=True, cwd=tiny_runs.REPO, timeout=300,
                          env=dict(os.environ, PYTHONPATH=tiny_runs.REPO))
  assert result.returncode == 0 and "logtostderr" in result.stdout, result.stderr[-2000:]
  assert "--keep_checkpoint_max (default: 3)" in result.stdout  # a flag --help leaves out
