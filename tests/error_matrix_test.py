"""The bad-input matrix: every entry point run as a subprocess on bad input, bad files and bad flags.

Each case either gives its defined result (README: Errors and odd input) or ends with exit status 1 and one
message line on stderr, `error: <what> (<where>)`, where <where> names the file:line, file or flag; stderr holds no
traceback, and no output file is left. The error cases run two at a time (each pays TensorFlow's import) on the
tiny random BERT of tests/embedding/tiny_model.py.
"""
import concurrent.futures
import json
import os
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
  assert errors.one_line(ValueError("a bug")) is None
  assert str(errors.UserError("bad score", "a.csv:3")) == "a.csv:3: bad score"


def _write_flow(folder, dim):
  """A fitted flow of width `dim` (a few steps on random vectors), as run_flow.py writes it."""
  from bert_flow_tf.calibration import fit_flow  # pylint: disable=g-import-not-at-top
  folder.parent.mkdir(parents=True, exist_ok=True)
  rng = np.random.default_rng(0)
  pairs = fit_flow.CachedPairs(rng.normal(size=[16, dim]).astype(np.float32),
                               rng.normal(size=[16, dim]).astype(np.float32))
  config = fit_flow.FlowFitConfig(flow_model_config=tiny_runs.tiny_flow_config(folder.parent / "flow.json"),
                                  batch_size=8)
  fit_flow.fit_flow(pairs, config, str(folder), provenance={"sentence_embedding_type": "last-avg",
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
  (root / "read_only").mkdir(mode=0o555)
  (root / "bad.cfg").write_text("--batch_size=4\nbatch_size 8\n")
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
  return dict(root=root, model=model, ok=str(ok), flow8=_write_flow(root / "flow8" / "flow", 8),
              corrupt_flow=corrupt_flow,
              bigger=_model_variant(model, root / "bigger", _bigger_config),
              longer_vocab=_model_variant(model, root / "longer_vocab", _longer_vocab),
              truncated=_model_variant(model, root / "truncated", lambda f: _truncate(f / "model.safetensors")))


def _encode(s, *args, model="model", output="out.npy"):
  return ("encode", ["--model_dir", s[model] if model in s else model, f"--output_file={s['root'] / output}"]
          + list(args), output)


# name -> (setup -> (script, args, output file that must not appear), where the error line must point)
CASES = {
    "missing input file": (lambda s: _encode(s, f"--input_file={s['root'] / 'missing.txt'}"), "missing.txt)"),
    "directory as input file": (lambda s: _encode(s, f"--input_file={s['root']}"), "matrix0)"),
    "non-UTF-8 line": (lambda s: _encode(s, f"--input_file={s['root'] / 'bad_utf8.txt'}"), "bad_utf8.txt:2)"),
    "NUL byte": (lambda s: _encode(s, f"--input_file={s['root'] / 'nul.txt'}"), "nul.txt:2)"),
    "output folder is a file": (lambda s: _encode(s, f"--input_file={s['ok']}", output="file/out.npy"),
                                "/file)"),
    "output is a directory": (lambda s: _encode(s, f"--input_file={s['ok']}", output="out_dir"), "/out_dir)"),
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
    "malformed STS row": (lambda s: ("run_flow", ["--model_dir", s["model"], f"--data_dir={s['root'] / 'data'}",
                                                  f"--output_parent_dir={s['root'] / 'exp'}", "--exp_name=sts"],
                                     "exp/sts/results.json"), "sts-train.csv:3)"),
    "unknown task": (lambda s: ("run_flow", ["--task_name=sts-17", f"--data_dir={s['root'] / 'data'}"], "x"),
                     "(--task_name)"),
    "missing data folder": (lambda s: ("run_flow", [f"--data_dir={s['root'] / 'nodata'}"], "x"), "(--data_dir)"),
    "unwritable output folder": (lambda s: ("run_flow", ["--model_dir", s["model"],
                                                         f"--data_dir={s['root'] / 'data'}",
                                                         f"--output_parent_dir={s['root'] / 'file' / 'exp'}"],
                                            "x"), "/file/exp)"),
    "siamese: unknown task": (lambda s: ("run_siamese", ["--task_name=snli-x", f"--data_dir={s['root'] / 'data'}",
                                                         f"--output_dir={s['root'] / 'siamese'}"], "siamese"),
                              "(--task_name)"),
    "siamese: bad label": (lambda s: ("run_siamese", ["--task_name=snli", f"--data_dir={s['root'] / 'data'}",
                                                      "--train_splits=dev", "--model_dir", s["model"],
                                                      "--do_train", f"--output_dir={s['root'] / 'siamese'}"],
                                      "siamese/export"), "labels.dev:2)"),
}

# Root ignores folder permissions: there the unwritable folder is the "folder is a file" cases above.
if os.geteuid() != 0:
  CASES["read-only output folder"] = (lambda s: _encode(s, f"--input_file={s['ok']}", output="read_only/out.npy"),
                                      "/read_only)")


@pytest.fixture(scope="module")
def results(setup):
  """name -> (CompletedProcess, output path) for every case of CASES, two subprocesses at a time."""
  commands = {name: make(setup) for name, (make, _) in CASES.items()}
  with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
    futures = {name: pool.submit(tiny_runs.run, script, args, setup["root"])
               for name, (script, args, _) in commands.items()}
    return {name: (futures[name].result(), setup["root"] / commands[name][2]) for name in CASES}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_ends_in_one_line_naming_the_place(results, name):
  result, output = results[name]
  lines = tiny_runs.messages(result.stderr)
  assert result.returncode == 1, result.stderr[-3000:]
  assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr[-3000:]
  assert lines[0].endswith(CASES[name][1]), lines[0]
  assert "Traceback" not in result.stderr
  assert name == "output is a directory" or not output.exists()


@pytest.mark.slow
def test_verbosity_shows_the_traceback(setup):
  result = tiny_runs.run("encode", ["--model_dir", setup["model"], f"--input_file={setup['root'] / 'nul.txt'}",
                                    f"--output_file={setup['root'] / 'v.npy'}", "-v", "1"], cwd=setup["root"])
  assert result.returncode == 1 and "Traceback" in result.stderr and "nul.txt:2: NUL character" in result.stderr


@pytest.mark.slow
def test_odd_lines_have_defined_results(setup):
  """BOM and CRLF are dropped; whitespace-only lines encode as empty ones ([CLS] [SEP]); long lines are cut at
  max_seq_length; combining accents are stripped by the uncased tokenizer; CJK, emoji: [UNK] pieces."""
  root = setup["root"]
  lines = ["a man plays the guitar .", "", " \t ", "the man " * 1250, "the man " * 40, "ma\u0301n", "man",
           "狗在跑 的", "🐶 runs", "the dog runs ."]
  assert len(lines[3]) == 10000
  (root / "odd.txt").write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines).encode("utf-8") + b"\r\n")
  (root / "plain.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
  outputs = {}
  for name in ("odd", "plain"):
    result = tiny_runs.run("encode", ["--model_dir", setup["model"], f"--input_file={root / name}.txt",
                                      f"--output_file={root / name}.npy"], cwd=root)
    assert result.returncode == 0, result.stderr[-3000:]
    outputs[name] = np.load(root / f"{name}.npy")
  odd = outputs["odd"]
  assert odd.shape == (len(lines), 16) and np.all(np.isfinite(odd))
  np.testing.assert_array_equal(odd, outputs["plain"])
  np.testing.assert_allclose(odd[1], odd[2], atol=1e-6)   # whitespace-only = empty
  np.testing.assert_allclose(odd[3], odd[4], atol=1e-6)   # both cut to max_seq_length tokens
  np.testing.assert_allclose(odd[5], odd[6], atol=1e-6)   # the combining accent is stripped
  assert len(VOCAB) == 13  # the tiny vocab has no CJK or emoji: they are [UNK] pieces


@pytest.mark.slow
def test_empty_input_file_gives_an_empty_matrix(setup):
  root = setup["root"]
  (root / "empty.txt").write_bytes(b"")
  result = tiny_runs.run("encode", ["--model_dir", setup["model"], f"--input_file={root / 'empty.txt'}",
                                    f"--output_file={root / 'empty.npy'}"], cwd=root)
  assert result.returncode == 0, result.stderr[-3000:]
  assert np.load(root / "empty.npy").shape == (0, 16)


@pytest.mark.slow
def test_corrupt_cache_shard_is_reencoded(tmp_path, data_dir):
  model = tiny_runs.tiny_model_dir(tmp_path)
  args = ["--model_dir", model, f"--data_dir={tiny_runs.tiny_stsb(data_dir, tmp_path / 'data', rows=16)}",
          "--sentence_embedding_type=last-avg", "--noflow", f"--output_parent_dir={tmp_path / 'exp'}",
          "--exp_name=c"]
  first = tiny_runs.run("run_flow", args, cwd=tmp_path)
  assert first.returncode == 0, first.stderr[-3000:]
  expected = json.loads((tmp_path / "exp" / "c" / "results.json").read_text())
  shards = list((tmp_path / "exp" / "cache").glob("*/*/*.npz"))
  assert shards
  for shard in shards:
    _truncate(shard)
  again = tiny_runs.run("run_flow", args, cwd=tmp_path)
  assert again.returncode == 0, again.stderr[-3000:]
  assert "is unreadable" in again.stderr and "new sentences" in again.stderr  # deleted, then encoded again
  assert json.loads((tmp_path / "exp" / "c" / "results.json").read_text()) == expected
  assert os.listdir(tmp_path / "exp" / "cache")
