"""An export written whole (serving/export_folder.py): staged beside its target, export_info.json last with every
file's SHA-256, then one rename; and the loaders' one-line refusal of an incomplete or changed export.

The folder rules run on exports of plain files (the module writes and checks whatever parts it is given), through
the real loaders (which refuse before loading any graph). Two exporters at once are two real processes
(tests/serving/export_writer.py) exporting the tiny BERT: the process boundary is what is tested.
"""
import hashlib
import json
import os
import signal
import subprocess

import pytest

import bert_flow_tf
from bert_flow_tf.server import served_export
from bert_flow_tf.serving import export_folder
from bert_flow_tf.utils import errors
from tests import tiny_runs
from tests.serving import export_writer

A = {"text/1/saved_model.pb": b"a text", "litert/model.tflite": b"a litert"}
B = {"text/1/saved_model.pb": b"b text", "search/1/saved_model.pb": b"b search"}


def _parts(files, during=None):
  """export_folder.write's write_parts: writes `files` ({relative path: bytes}), then calls `during()`, another
  writer's whole export finishing while this one writes; its info names the files."""
  def write_parts(folder):
    for name, data in files.items():
      os.makedirs(os.path.dirname(os.path.join(folder, name)), exist_ok=True)
      with open(os.path.join(folder, name), "wb") as f:
        f.write(data)
    if during:
      during()
    return {"dim": 4, "writer": sorted(files)}, {"text": os.path.join(folder, "text", "1")}
  return write_parts


def _held(export_dir):
  """{relative path: bytes} of every file in an export but its export_info.json, after the loaders' check."""
  info = export_folder.read_info(export_dir)
  export_folder.verify(export_dir, info)
  held = {}
  for root, _, files in os.walk(export_dir):
    for name in files:
      path = os.path.join(root, name)
      held[os.path.relpath(path, export_dir)] = open(path, "rb").read()
  del held[export_folder.INFO_FILE]
  assert info["writer"] == sorted(held)  # export_info.json is the writer's whose files are there
  return held


def test_an_export_is_written_whole_with_the_sha256_of_its_files(tmp_path):
  paths = export_folder.write(str(tmp_path / "export"), False, _parts(A))
  assert paths == {"text": str(tmp_path / "export" / "text" / "1"),
                   "info": str(tmp_path / "export" / export_folder.INFO_FILE)}
  assert os.listdir(tmp_path) == ["export"]  # no staging folder left beside it
  info = json.loads((tmp_path / "export" / export_folder.INFO_FILE).read_text())
  assert info[export_folder.FILES] == {name: hashlib.sha256(data).hexdigest() for name, data in A.items()}
  assert _held(str(tmp_path / "export")) == A


def test_a_writer_finishing_second_is_refused_in_one_line_or_with_overwrite_replaces_the_export_whole(tmp_path):
  export_dir = str(tmp_path / "export")
  # Both start on a new folder; A finishes while B writes. Without overwrite, B is refused at its rename.
  with pytest.raises(errors.UserError) as refused:
    export_folder.write(export_dir, False, _parts(B, during=lambda: export_folder.write(export_dir, False, _parts(A))))
  assert str(refused.value) == (f"{export_dir}: not replaced: it holds export_info.json, litert, text; pass "
                                "overwrite=True to replace an export, or give another folder")
  assert _held(export_dir) == A and os.listdir(tmp_path) == ["export"]
  # With overwrite, B replaces A's export whole: A's litert/ does not stay beside B's models.
  export_folder.write(export_dir, True, _parts(B, during=lambda: export_folder.write(export_dir, True, _parts(A))))
  assert _held(export_dir) == B and os.listdir(tmp_path) == ["export"]


def test_overwrite_never_replaces_a_folder_holding_anything_but_an_export(tmp_path):
  folder = tmp_path / "mine"
  (folder / "text").mkdir(parents=True)
  (folder / "notes.txt").write_text("keep\n")
  for check in (lambda: export_folder.check_replaceable(str(folder), True),  # run_flow.py's, before its run
                lambda: export_folder.write(str(folder), True, _parts(A))):
    with pytest.raises(errors.UserError, match=r"mine: not replaced: it holds notes.txt, text, not only what this "
                                               r"writer writes \(export_info.json and its files\); remove it, or "
                                               r"give another folder$"):
      check()
  assert (folder / "notes.txt").read_text() == "keep\n" and sorted(os.listdir(tmp_path)) == ["mine"]


def _flip(path):
  data = bytearray(path.read_bytes())
  data[len(data) // 2] ^= 0xFF
  path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage, where, message", [
    ("marker", "", "not a complete export: no export_info.json, which an export writes last "
                   "(SentenceEncoder.export, run_flow.py --export_dir)"),
    ("file", "", "not a complete export: search/1/saved_model.pb is missing (listed in export_info.json)"),
    ("byte", "/search/1/saved_model.pb", "changed or damaged since it was exported: its SHA-256 is not the one "
                                         "export_info.json records"),
    ("list", "/export_info.json", "'files' must list the export's files with their SHA-256"),
])
def test_every_loader_refuses_an_incomplete_or_changed_export_in_one_line(tmp_path, damage, where, message):
  export_dir = tmp_path / "export"
  export_folder.write(str(export_dir), False, _parts(B))
  info = export_dir / export_folder.INFO_FILE
  {"marker": info.unlink, "file": (export_dir / "search" / "1" / "saved_model.pb").unlink,
   "byte": lambda: _flip(export_dir / "search" / "1" / "saved_model.pb"),
   "list": lambda: info.write_text(json.dumps({"dim": 4}))}[damage]()
  for load in (bert_flow_tf.ExportedEncoder, served_export.ServedExport):  # the encode command's is ExportedEncoder
    with pytest.raises(errors.UserError) as refused:
      load(str(export_dir))
    assert errors.one_line(refused.value) == f"error: {message}; export it again ({export_dir}{where})"


@pytest.fixture(scope="module", name="model_dir")
def fixture_model_dir(tmp_path_factory):
  return tiny_runs.tiny_model_dir(tmp_path_factory.mktemp("export_folder"))


def _start(model_dir, export_dir, max_seq_length, corpus_size, *flags):
  """A real exporter process (export_writer), its output in a log beside export_dir."""
  args = [model_dir, export_dir, str(max_seq_length), str(corpus_size), *flags]
  with open(f"{export_dir}-{max_seq_length}.log", "wb") as log:
    return subprocess.Popen(tiny_runs.command("export", args), env=dict(os.environ, PYTHONPATH=tiny_runs.REPO),
                            stdout=log, stderr=log), log.name


@pytest.mark.slow
def test_two_exporters_at_once_leave_one_whole_export(model_dir, tmp_path):
  """B exports a corpus at max_seq_length 24; A, without a corpus at 16, starts once B's text model is written (in
  the folder, or in B's staging folder). Both replace an export (run_flow.py's overwrite=True). Before exports were
  written whole, A's text model and export_info.json sat beside B's search model."""
  export_dir = str(tmp_path / "export")
  b, b_log = _start(model_dir, export_dir, 24, 30, "--overwrite")
  a, a_log = _start(model_dir, export_dir, 16, 0, "--overwrite", "--after=text/1/saved_model.pb")
  try:
    for process, log in ((b, b_log), (a, a_log)):
      assert process.wait(timeout=300) == 0, open(log, encoding="utf-8").read()[-3000:]
  finally:
    for process in (a, b):
      if process.poll() is None:
        process.send_signal(signal.SIGKILL)
        process.wait()
  exported = bert_flow_tf.ExportedEncoder(export_dir)  # complete and unchanged
  length = exported.info["max_seq_length"]
  assert exported.text_model.max_seq_length.numpy() == length
  if length == 24:  # B's whole export
    assert exported.search_model.sentences.numpy().astype(str).tolist() == export_writer.corpus(24, 30)
  else:
    assert length == 16 and exported.search_model is None  # A's whole export: no corpus
  assert sorted(os.listdir(tmp_path)) == sorted(["export", os.path.basename(a_log), os.path.basename(b_log)])
