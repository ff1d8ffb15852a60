"""The bad-input matrix: every entry point run on bad input, bad files and bad flags.

Each case either gives its defined result (README: Errors and odd input) or ends with exit status 1 and one
message line on stderr, `error: <what> (<where>)`, where <where> names the file:line, file or flag; stderr holds no
traceback, and no output is left. Each entry point's cases run in one tests/entry_driver.py process (TensorFlow is
imported once per entry point), on the tiny random BERT of tests/embedding/tiny_model.py; one case per entry point
also runs as a process of its own, which must end the same way.
"""
import concurrent.futures
import json
import os
import pathlib
import shutil

import numpy as np
import pytest

from bert_flow_tf.utils import errors
from tests import tiny_runs
from tests.embedding.tiny_model import VOCAB


def test_one_line_names_the_place():
  assert errors.one_line(errors.UserError("bad score", "a.csv:3")) == "error: bad score (a.csv:3)"
  assert errors.one_line(errors.missing_file("no such\nfile", "x.txt")) == "error: no such file (x.txt)"
  assert errors.one_line(ValueError("--task_name: no"), (ValueError,)) == "error: no (--task_name)"
  assert errors.one_line(ValueError("Unknown command line flag 'no_such'"), (ValueError,)) == \
      "error: Unknown command line flag 'no_such' (--no_such)"
  assert errors.one_line(ValueError("a bug")) is None
  assert str(errors.UserError("bad score", "a.csv:3")) == "a.csv:3: bad score"


def _write_flow(folder, dim):
  """A fitted flow of width `dim` (a few steps on random vectors), as run_flow.py writes it."""
  from bert_flow_tf.calibration import flow_fitting, pair_sources  # pylint: disable=g-import-not-at-top
  folder.parent.mkdir(parents=True, exist_ok=True)
  rng = np.random.default_rng(0)
  pairs = pair_sources.CachedPairs(rng.normal(size=[16, dim]).astype(np.float32),
                               rng.normal(size=[16, dim]).astype(np.float32))
  fit_config = flow_fitting.FlowFitConfig(flow_model_config=tiny_runs.tiny_flow_config(folder.parent / "flow.json"),
                                          batch_size=8)
  flow_fitting.fit_flow(pairs, fit_config, str(folder), provenance={"sentence_embedding_type": "last-avg",
                                                                    "max_seq_length": 64})
  return str(folder)


def _model_variant(model, folder, change):
  shutil.copytree(model, folder)
  change(folder)
  return str(folder)


def _bigger_config(folder):
  config = json.loads((folder / "config.json").read_text())
  (folder / "config.json").write_text(json.dumps({**config, "hidden_size": 32}))


def _longer_vocab(folder):
  with open(folder / "vocab.txt", "a", encoding="utf-8") as f:
    f.write("".join(f"extra{i}\n" for i in range(5)))


def _truncate(path):
  path.write_bytes(path.read_bytes()[:path.stat().st_size // 2])


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
  root = tmp_path_factory.mktemp("matrix")
  model = tiny_runs.tiny_model_dir(root)
  ok = root / "ok.txt"
  ok.write_text("a man plays the guitar .\nthe dog runs .\n")
  (root / "bad_utf8.txt").write_bytes(b"a man\n\xff\xfe runs\n")
  (root / "nul.txt").write_bytes(b"a man\nthe\x00dog\n")
  (root / "file").write_text("a file, not a folder\n")
  (root / "out_dir").mkdir()
  (root / "notes").mkdir()
  (root / "notes" / "notes.txt").write_text("not an export\n")
  (root / "read_only").mkdir(mode=0o555)
  unwritable = _unwritable_folder(root)
  (root / "bad.cfg").write_text("--batch_size=4\nbatch_size 8\n")
  (root / "bad_pairs.tsv").write_text("s1\ts2\tscore\na\tb\t1\nc\td\thigh\n", encoding="utf-8")
  corrupt_flow = _write_flow(root / "flow16_corrupt" / "flow", 16)
  for data in (root / "flow16_corrupt" / "flow").glob("ckpt-*.data-*"):
    _truncate(data)
  data = root / "data" / "stsbenchmark"
  data.mkdir(parents=True)
  for split in ("train", "dev", "test"):
    rows = [f"main-captions\tMSRvid\t2012test\t{i:04d}\t{i % 5}.000\ta man plays .\tthe dog runs ." for i in range(4)]
    if split == "train":
      rows[2] = "main-captions\tMSRvid\t2012test\t0002\t2.000\tonly six fields"
    (data / f"sts-{split}.csv").write_text("\n".join(rows) + "\n")
  snli = root / "data" / "SNLI"
  snli.mkdir()
  for split in ("dev", "test"):
    (snli / f"s1.{split}").write_text("a man .\nthe dog .\n")
    (snli / f"s2.{split}").write_text("the dog .\na man .\n")
    (snli / f"labels.{split}").write_text("entailment\nmaybe\n")
  return dict(root=root, model=model, ok=str(ok), unwritable=unwritable, flow8=_write_flow(root / "flow8" / "flow", 8),
              corrupt_flow=corrupt_flow,
              bigger=_model_variant(model, root / "bigger", _bigger_config),
              longer_vocab=_model_variant(model, root / "longer_vocab", _longer_vocab),
              truncated=_model_variant(model, root / "truncated", lambda f: _truncate(f / "model.safetensors")))


def _encode(s, *args, model="model", output="out.npy"):
  return ("encode", ["--model_dir", s[model] if model in s else model, f"--output_file={s['root'] / output}"]
          + list(args), output)


def _unwritable_folder(root):
  """A folder the test user cannot create files in: a 0o555 one, or (root ignores modes) sysfs's /sys/kernel."""
  folder = pathlib.Path("/sys/kernel") if os.geteuid() == 0 else root / "read_only"
  with pytest.raises(PermissionError):  # the premise of the "unwritable output folder" cases
    (folder / "probe").write_bytes(b"")
  return folder


def _run_flow(s, *args, exp="exp"):
  return ("run_flow", ["--model_dir", s["model"], f"--data_dir={s['root'] / 'data'}",
                       f"--output_parent_dir={s['root'] / exp}", "--exp_name=e"] + list(args), exp)


# name -> (setup -> (script, args, output that must not appear), where the error line must point)
CASES = {
    "missing input file": (lambda s: _encode(s, f"--input_file={s['root'] / 'missing.txt'}"), "missing.txt)"),
    "directory as input file": (lambda s: _encode(s, f"--input_file={s['root']}"), "matrix0)"),
    "non-UTF-8 line": (lambda s: _encode(s, f"--input_file={s['root'] / 'bad_utf8.txt'}"), "bad_utf8.txt:2)"),
    "NUL byte": (lambda s: _encode(s, f"--input_file={s['root'] / 'nul.txt'}"), "nul.txt:2)"),
    "output folder is a file": (lambda s: _encode(s, f"--input_file={s['ok']}", output="file/out.npy"),
                                "/file)"),
    "output is a directory": (lambda s: _encode(s, f"--input_file={s['ok']}", output="out_dir"), "/out_dir)"),
    "unwritable output folder": (lambda s: _encode(s, f"--input_file={s['ok']}",
                                                   output=str(s["unwritable"] / "out.npy")),
                                 lambda s: f"{s['unwritable']})"),
    "malformed flagfile line": (lambda s: _encode(s, f"--input_file={s['ok']}",
                                                  f"--flagfile={s['root'] / 'bad.cfg'}"), "bad.cfg:2)"),
    "bad flag value": (lambda s: _encode(s, f"--input_file={s['ok']}", "--batch_size=abc"), "(--batch_size)"),
    "unknown pooling": (lambda s: _encode(s, f"--input_file={s['ok']}", "--sentence_embedding_type=avg-max"),
                        "(--sentence_embedding_type)"),
    "config shapes differ from the checkpoint": (lambda s: _encode(s, f"--input_file={s['ok']}", model="bigger"),
                                                 "bigger/model.safetensors)"),
    "vocab of the wrong size": (lambda s: _encode(s, f"--input_file={s['ok']}", model="longer_vocab"),
                                "longer_vocab/vocab.txt)"),
    "truncated safetensors": (lambda s: _encode(s, f"--input_file={s['ok']}", model="truncated"),
                              "truncated/model.safetensors)"),
    "flow checkpoint of another width": (lambda s: _encode(s, f"--input_file={s['ok']}",
                                                           f"--flow_checkpoint={s['flow8']}"),
                                         "(--flow_checkpoint)"),
    "corrupt flow checkpoint": (lambda s: _encode(s, f"--input_file={s['ok']}",
                                                  f"--flow_checkpoint={s['corrupt_flow']}"), "/flow/ckpt-2)"),
    "malformed STS row": (lambda s: _run_flow(s, exp="exp_sts")[:2] + ("exp_sts/e/results.json",),
                          "sts-train.csv:3)"),
    "unknown task": (lambda s: _run_flow(s, "--task_name=sts-17", exp="exp_task"), "(--task_name)"),
    "missing data folder": (lambda s: ("run_flow", [f"--data_dir={s['root'] / 'nodata'}",
                                                    f"--output_parent_dir={s['root'] / 'exp_nodata'}"],
                                       "exp_nodata"), "(--data_dir)"),
    "unwritable output folder (run_flow)": (
        lambda s: ("run_flow", ["--model_dir", s["model"], f"--data_dir={s['root'] / 'data'}",
                                f"--output_parent_dir={s['unwritable'] / 'exp'}"], str(s["unwritable"] / "exp")),
        lambda s: f"{s['unwritable']}/exp)"),
    "unknown flag": (lambda s: _run_flow(s, "--no_such_flag=1", exp="exp_flag"), "(--no_such_flag)"),
    "unknown pooling (run_flow)": (lambda s: _run_flow(s, "--sentence_embedding_type=avg-last-x",
                                                       exp="exp_pooling"), "(--sentence_embedding_type)"),
    "malformed scored pairs": (lambda s: _run_flow(s, f"--eval_file={s['root'] / 'bad_pairs.tsv'}",
                                                   exp="exp_pairs"), "bad_pairs.tsv:3)"),
    "original flow without its checkpoint": (lambda s: _run_flow(s, "--export_flow=init_checkpoint",
                                                                 f"--export_dir={s['root'] / 'export_x'}",
                                                                 exp="exp_init"), "(--export_flow)"),
    "fit from the store without own sentences": (lambda s: _run_flow(s, "--fit_from_store", exp="exp_store"),
                                                 "(--fit_from_store)"),
    "fit from the store in faithful mode": (lambda s: _run_flow(s, "--fit_from_store", f"--train_file={s['ok']}",
                                                                "--flow_mode=faithful", exp="exp_store2"),
                                            "(--fit_from_store)"),
    "two TPU names": (lambda s: _run_flow(s, "--tpu=a", "--use_tpu", "--tpu_name=b", exp="exp_tpu2"), "(--tpu)"),
    "no TPU here": (lambda s: _run_flow(s, "--tpu=local", exp="exp_tpu"), "(--tpu)"),
    # An output folder that cannot be written ends the run before any work; bad flag values: BAD_VALUES below.
    "unwritable export folder": (lambda s: _run_flow(s, f"--export_dir={s['unwritable'] / 'export'}",
                                                     exp="exp_export"), lambda s: f"{s['unwritable']}/export)"),
    "export folder holding other files": (lambda s: _run_flow(s, f"--export_dir={s['root'] / 'notes'}",
                                                              exp="exp_notes"), "/notes)"),
    "siamese: unknown task": (lambda s: ("run_siamese", ["--task_name=snli-x", f"--data_dir={s['root'] / 'data'}",
                                                         f"--output_dir={s['root'] / 'siamese_task'}"], "siamese_task"),
                              "(--task_name)"),
    "siamese: bad label": (lambda s: ("run_siamese", ["--task_name=snli", f"--data_dir={s['root'] / 'data'}",
                                                      "--train_splits=dev", "--model_dir", s["model"],
                                                      "--do_train", f"--output_dir={s['root'] / 'siamese'}"],
                                      "siamese/export"), "labels.dev:2)"),
}
# Bad flag values, each ending as above, naming the flag: (script, the flag as typed; paths relative to the case's
# folder, `setup`'s root). --max_seq_length=100000 is over the tiny model's max_position_embeddings (64), found once
# the model is loaded; ok.txt's 2 lines are 1 pair, less than a step of 32.
BAD_VALUES = [("run_flow", "--max_seq_length=0"), ("run_flow", "--max_seq_length=100000"),
              ("run_flow", "--num_train_epochs=0"), ("run_flow", "--train_batch_size=0"),
              ("run_flow", "--flow_learning_rate=nan"), ("run_flow", "--flow_model_config=nope.json"),
              ("run_flow", "--flow_model_config=ok.txt"), ("run_flow", "--train_file=ok.txt"),
              ("encode", "--max_seq_length=100000"), ("encode", "--encode_batch_sentences=0")]


def _bad_value(script, arg, i):
  """The command of BAD_VALUES[i]; nothing may appear at its output."""
  if script == "run_flow":
    return lambda s: _run_flow(s, arg, exp=f"exp_bad{i}")
  return lambda s: _encode(s, f"--input_file={s['ok']}", arg, output=f"bad{i}.npy")


CASES.update({f"{script} {arg}": (_bad_value(script, arg, i), f"({arg.split('=')[0]})")
              for i, (script, arg) in enumerate(BAD_VALUES)})
# The defined results of odd input (test_odd_lines_have_defined_results, test_empty_input_file_gives_an_empty_matrix).
ODD_LINES = ["a man plays the guitar .", "", " \t ", "the man " * 1250, "the man " * 40, "ma\u0301n", "man",
             "狗在跑 的", "🐶 runs", "the dog runs ."]
GOOD_CASES = {
    "odd": lambda s: _encode(s, f"--input_file={s['root'] / 'odd.txt'}", output="odd.npy"),
    "plain": lambda s: _encode(s, f"--input_file={s['root'] / 'plain.txt'}", output="plain.npy"),
    "unk": lambda s: _encode(s, f"--input_file={s['root'] / 'unk.txt'}", output="unk.npy"),
    "empty": lambda s: _encode(s, f"--input_file={s['root'] / 'empty.txt'}", output="empty.npy"),
}
# One case per entry point is also run as a real process, which must end as the driver's run of it did.
IN_A_PROCESS = ["NUL byte", "unknown task", "siamese: unknown task"]


def _where(case, s):
  return case if isinstance(case, str) else case(s)


def _verbose_command(s):
  """Run last by the encode driver: absl's -v stays set in its process for the cases after it."""
  return "encode", ["--model_dir", s["model"], f"--input_file={s['root'] / 'nul.txt'}",
                    f"--output_file={s['root'] / 'v.npy'}", "-v", "1"]


@pytest.fixture(scope="module")
def results(setup):
  """name -> ({"returncode", "stdout", "stderr"}, output path) for every case of CASES and GOOD_CASES, run by the
  drivers, and "-v 1" (last in the encode driver); and "process: <name>" -> CompletedProcess for IN_A_PROCESS, run
  as processes. Two processes at a time."""
  root = setup["root"]
  (root / "odd.txt").write_bytes(b"\xef\xbb\xbf" + "\r\n".join(ODD_LINES).encode("utf-8") + b"\r\n")
  (root / "plain.txt").write_text("\n".join(ODD_LINES) + "\n", encoding="utf-8")
  (root / "unk.txt").write_text("x runs\nx y z w\n", encoding="utf-8")  # words the tiny vocab lacks: [UNK]
  (root / "empty.txt").write_bytes(b"")
  commands = {name: make(setup) for name, (make, _) in CASES.items()}
  commands.update({name: make(setup) for name, make in GOOD_CASES.items()})
  by_script = {}
  for name, (script, args, _) in commands.items():
    by_script.setdefault(script, {})[name] = args
  by_script["encode"]["-v 1"] = _verbose_command(setup)[1]
  processes = {f"process: {name}": commands[name][:2] for name in IN_A_PROCESS}
  with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
    driven = [pool.submit(tiny_runs.drive, script, cases, root) for script, cases in sorted(by_script.items())]
    ran = {name: pool.submit(tiny_runs.run, script, args, root) for name, (script, args) in processes.items()}
    out = {name: (result, root / commands[name][2] if name in commands else None)
           for future in driven for name, result in future.result().items()}
  out.update({name: (future.result(), None) for name, future in ran.items()})
  return out


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_ends_in_one_line_naming_the_place(setup, results, name):
  result, output = results[name]
  lines = tiny_runs.messages(result["stderr"])
  assert result["returncode"] == 1, result["stderr"][-3000:]
  assert len(lines) == 1 and lines[0].startswith("error: "), result["stderr"][-3000:]
  assert lines[0].endswith(_where(CASES[name][1], setup)), lines[0]
  assert "Traceback" not in result["stderr"]
  if name == "output is a directory":
    assert not os.listdir(output)
  else:
    assert not output.exists(), output


@pytest.mark.slow
@pytest.mark.parametrize("name", IN_A_PROCESS)
def test_a_real_process_ends_as_the_driver_says(results, name):
  process, driven = results[f"process: {name}"][0], results[name][0]
  assert process.returncode == driven["returncode"] == 1
  assert tiny_runs.messages(process.stderr) == tiny_runs.messages(driven["stderr"])


@pytest.mark.slow
def test_verbosity_shows_the_traceback(results):
  result = results["-v 1"][0]
  assert result["returncode"] == 1 and "Traceback" in result["stderr"], result["stderr"][-3000:]
  assert "nul.txt:2: NUL character" in result["stderr"]


@pytest.mark.slow
def test_odd_lines_have_defined_results(setup, results):
  """BOM and CRLF are dropped; whitespace-only lines encode as empty ones ([CLS] [SEP]); long lines are cut at
  max_seq_length; combining accents are stripped by the uncased tokenizer; CJK and emoji, absent from the vocab,
  are [UNK] pieces."""
  for name in ("odd", "plain", "unk"):
    assert results[name][0]["returncode"] == 0, results[name][0]["stderr"][-3000:]
  root = setup["root"]
  odd, unk = np.load(root / "odd.npy"), np.load(root / "unk.npy")
  assert len(ODD_LINES[3]) == 10000
  assert odd.shape == (len(ODD_LINES), 16) and np.all(np.isfinite(odd))
  np.testing.assert_array_equal(odd, np.load(root / "plain.npy"))
  np.testing.assert_allclose(odd[1], odd[2], atol=1e-6)   # whitespace-only = empty
  np.testing.assert_allclose(odd[3], odd[4], atol=1e-6)   # both cut to max_seq_length tokens
  np.testing.assert_allclose(odd[5], odd[6], atol=1e-6)   # the combining accent is stripped
  # The tiny vocab (tests/embedding/tiny_model.py) has no CJK, emoji, x, y, z or w: each is one [UNK] piece. CJK
  # characters are words of their own (4 here), as BERT's basic tokenizer splits them.
  assert not set("狗 在 跑 的 🐶 x y z w".split()) & set(VOCAB)
  np.testing.assert_allclose(odd[8], unk[0], atol=1e-6)   # "🐶 runs" = "x runs"
  np.testing.assert_allclose(odd[7], unk[1], atol=1e-6)   # "狗在跑 的" = "x y z w"
  assert np.abs(odd[7] - odd[8]).max() > 1e-3


@pytest.mark.slow
def test_empty_input_file_gives_an_empty_matrix(setup, results):
  assert results["empty"][0]["returncode"] == 0, results["empty"][0]["stderr"][-3000:]
  assert np.load(setup["root"] / "empty.npy").shape == (0, 16)
