"""A damaged SavedModel at every door that loads one ends in one line naming the file: `saved_models.load` says what
is wrong with it (a TF-Hub model the caller names); an export's checksums (export_folder) refuse it first at
ExportedEncoder, the server and the encode command."""
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile

import pytest
import tensorflow_text  # noqa: F401  pylint: disable=unused-import (imported before any test runs as nobody)

import bert_flow_tf
from bert_flow_tf.loaders import tfhub
from bert_flow_tf.utils import errors
from bert_flow_tf.utils import saved_models
from tests import tiny_runs
from tests.embedding.tiny_model import SENTENCES
from tests.embedding.tiny_model import tiny_model

NOBODY = 65534
DATA = os.path.join("variables", "variables.data-00000-of-00001")
INDEX = os.path.join("variables", "variables.index")
GRAPH = "saved_model.pb"


@contextlib.contextmanager
def _unreadable(path):
  """`path` at mode 0 while inside; root, whom modes do not stop, runs as the user nobody meanwhile."""
  os.chmod(path, 0)
  if os.getuid() == 0:
    os.seteuid(NOBODY)
  try:
    yield
  finally:
    if os.getuid() == 0:
      os.seteuid(0)
    os.chmod(path, 0o755)


def _cut(path):
  with open(path, "r+b") as f:
    f.truncate(os.path.getsize(path) // 2)


def _empty(path):
  open(path, "wb").close()


def _flip(path):
  with open(path, "r+b") as f:
    f.seek(os.path.getsize(path) // 2)
    byte = f.read(1)[0]
    f.seek(-1, os.SEEK_CUR)
    f.write(bytes([byte ^ 0xFF]))


# name: (what is done to a file or folder of a SavedModel, that path in it, what the line says is wrong)
DAMAGES = {
    "no variables": (shutil.rmtree, "variables", "variables are missing"),
    "no variables data": (os.remove, DATA, "variables are missing"),
    "cut variables data": (_cut, DATA, "variables are cut short"),
    "bit-flipped variables data": (_flip, DATA, "variables are corrupt"),
    "cut variables index": (_cut, INDEX, "index is cut short or corrupt"),
    "empty saved_model.pb": (_empty, GRAPH, "empty saved_model.pb: it holds no MetaGraph"),
    "cut saved_model.pb": (_cut, GRAPH, "does not parse as a SavedModel"),
}


@pytest.fixture(scope="module", name="export_dir")
def fixture_export_dir(tmp_path_factory):
  """A tiny whitening export, in a folder the user nobody may enter (see `_unreadable`)."""
  tmp = tmp_path_factory.mktemp("saved_models")
  enc = bert_flow_tf.SentenceEncoder.from_pretrained(tiny_runs.tiny_model_dir(tmp), pooling="last-avg",
                                                     max_seq_length=16).fit(SENTENCES, method="whitening")
  base = tempfile.mkdtemp(prefix="saved-models-test-")
  os.chmod(base, 0o755)
  enc.export(os.path.join(base, "export"))
  yield os.path.join(base, "export")
  shutil.rmtree(base)


def _damaged(export_dir, name):
  """A copy of the export beside it whose text SavedModel has the damage `name` (None: none); returns (the copy,
  its text/1)."""
  folder = tempfile.mkdtemp(dir=os.path.dirname(export_dir))
  os.chmod(folder, 0o755)
  copy = os.path.join(folder, "export")
  shutil.copytree(export_dir, copy)
  text_model = os.path.join(copy, "text", "1")
  if name is not None:
    damage, path, _ = DAMAGES[name]
    damage(os.path.join(text_model, path))
  return copy, text_model


@pytest.mark.parametrize("name", sorted(DAMAGES))
def test_a_damaged_saved_model_is_named_in_one_line(export_dir, name):
  copy, text_model = _damaged(export_dir, name)
  _, file, what = DAMAGES[name]
  with pytest.raises(errors.UserError) as refused:
    saved_models.load(text_model)
  assert str(refused.value).startswith(f"{os.path.join(text_model, file)}: ") and what in str(refused.value)
  assert "\n" not in str(refused.value)
  with pytest.raises(errors.UserError) as refused:  # the export's checksums name it before TensorFlow reads it
    bert_flow_tf.ExportedEncoder(copy)
  assert os.path.join("text", "1", file) in str(refused.value) and "\n" not in str(refused.value)


def test_an_unreadable_saved_model_pb_and_export_folder_are_named(export_dir):
  copy, text_model = _damaged(export_dir, None)
  for path in (os.path.join(text_model, GRAPH), copy):
    with _unreadable(path), pytest.raises(PermissionError) as refused:
      bert_flow_tf.ExportedEncoder(copy)
    assert refused.value.filename == path and "\n" not in str(refused.value)


def test_a_damaged_tfhub_model_the_caller_names_is_named_in_one_line(tmp_path):
  loaded = tiny_model(tmp_path / "source")
  hub = str(tmp_path / "hub")
  tfhub.save_hub_encoder(loaded.encoder, hub, vocab_file=loaded.vocab_file)
  _cut(os.path.join(hub, DATA))
  with pytest.raises(errors.UserError, match="variables are cut short") as refused:
    bert_flow_tf.SentenceEncoder(hub)
  assert str(refused.value).startswith(os.path.join(hub, DATA)) and "\n" not in str(refused.value)


def _ends_in_one_line(process, line):
  assert process.returncode == 1 and "Traceback" not in process.stderr, process.stderr[-3000:]
  assert tiny_runs.messages(process.stderr) == [line], process.stderr[-3000:]


def test_the_encode_command_ends_in_one_line_on_an_empty_saved_model_pb(export_dir, tmp_path):
  _, text_model = _damaged(export_dir, "empty saved_model.pb")
  (tmp_path / "in.txt").write_text("a man plays the guitar .\n")
  process = tiny_runs.run("encode", [f"--exported_model={text_model}", f"--input_file={tmp_path / 'in.txt'}",
                                     f"--output_file={tmp_path / 'out.npy'}"], tmp_path, timeout=300)
  _ends_in_one_line(process, "error: changed or damaged since it was exported: its SHA-256 is not the one "
                    f"export_info.json records; export it again ({os.path.join(text_model, GRAPH)})")
  assert not (tmp_path / "out.npy").exists()


def test_the_server_ends_in_one_line_at_start_up_on_a_missing_variables_file(export_dir, tmp_path):
  copy, text_model = _damaged(export_dir, "no variables data")
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
  process = subprocess.run([sys.executable, "-m", "bert_flow_tf.server", f"--export_dir={copy}", f"--port={port}"],
                           capture_output=True, text=True, cwd=tmp_path, timeout=300,
                           env=dict(os.environ, PYTHONPATH=tiny_runs.REPO))
  _ends_in_one_line(process, f"error: not a complete export: {os.path.join('text', '1', DATA)} is missing (listed in "
                    f"export_info.json); export it again ({copy})")
