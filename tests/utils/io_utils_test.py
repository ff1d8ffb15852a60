"""io_utils' write rules: what an atomic folder writer may replace, what a killed writer leaves and who removes it,
and the modes outputs get."""
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from bert_flow_tf.utils import errors
from bert_flow_tf.utils import io_utils

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OWN = ("info.json", "data")


def _write(path, **kwargs):
  with io_utils.atomic_dir(str(path), own=OWN, **kwargs) as tmp:
    with open(os.path.join(tmp, "info.json"), "w", encoding="utf-8") as f:
      f.write("{}")
  return path


def test_a_new_an_empty_and_an_own_folder_are_written(tmp_path):
  assert sorted(os.listdir(_write(tmp_path / "new"))) == ["info.json"]
  (tmp_path / "empty").mkdir()
  assert sorted(os.listdir(_write(tmp_path / "empty"))) == ["info.json"]
  own = tmp_path / "own"
  (own / "data").mkdir(parents=True)
  (own / "info.json").write_text("old")
  _write(own)
  assert sorted(os.listdir(own)) == ["info.json"] and (own / "info.json").read_text() == "{}"
  assert sorted(os.listdir(tmp_path)) == ["empty", "new", "own"]  # nothing left beside them


@pytest.mark.parametrize("files", [["notes.txt"], ["info.json", "notes.txt"], ["data"]])
def test_a_folder_the_writer_did_not_write_is_refused_unless_overwrite(tmp_path, files):
  folder = tmp_path / "mine"
  folder.mkdir()
  for name in files:
    (folder / name).write_text("the user's")
  with pytest.raises(errors.UserError) as refused:
    _write(folder)
  message = str(refused.value)
  assert "\n" not in message and message.startswith(f"{folder}: not replaced") and "overwrite=True" in message
  assert sorted(os.listdir(folder)) == sorted(files) and all((folder / n).read_text() == "the user's" for n in files)
  assert os.listdir(tmp_path) == ["mine"]  # refused before any work: no temporary folder was made
  _write(folder, overwrite=True)
  assert sorted(os.listdir(folder)) == ["info.json"]


def test_a_folder_filled_during_the_block_is_not_replaced(tmp_path):
  folder = tmp_path / "out"
  with pytest.raises(errors.UserError, match="not replaced"):
    with io_utils.atomic_dir(str(folder), own=OWN) as tmp:
      folder.mkdir()
      (folder / "theirs.txt").write_text("x")
      (tmp_path / "marker").write_text(os.path.basename(tmp))
  assert os.listdir(folder) == ["theirs.txt"] and sorted(os.listdir(tmp_path)) == ["marker", "out"]


def test_the_working_directory_its_parents_home_and_root_are_never_replaced(tmp_path, monkeypatch):
  work = tmp_path / "a" / "work"
  work.mkdir(parents=True)
  (work / "precious.txt").write_text("x")
  monkeypatch.chdir(work)
  for path in (".", str(work), str(tmp_path / "a"), "..", str(tmp_path), os.path.expanduser("~"), "/"):
    with pytest.raises(errors.UserError, match="never replaced"):
      _write(path, overwrite=True)
  assert (work / "precious.txt").read_text() == "x" and sorted(os.listdir(work)) == ["precious.txt"]


def test_a_file_in_the_way_is_refused(tmp_path):
  (tmp_path / "out").write_text("a file")
  with pytest.raises(errors.UserError, match="is not a folder"):
    _write(tmp_path / "out", overwrite=True)
  assert (tmp_path / "out").read_text() == "a file"


_HOLDER = textwrap.dedent("""
    import sys, time
    from bert_flow_tf.utils import io_utils
    kind, target = sys.argv[1], sys.argv[2]
    writer = io_utils.atomic_dir if kind == "dir" else io_utils.atomic_path
    with writer(target) as tmp:
      print(tmp, flush=True)
      time.sleep(600)
""")


def _holder(kind, target):
  """A real process inside an atomic write of `target`, and the temporary path it writes."""
  process = subprocess.Popen([sys.executable, "-c", _HOLDER, kind, str(target)], stdout=subprocess.PIPE,
                             env=dict(os.environ, PYTHONPATH=REPO), text=True)
  tmp = process.stdout.readline().strip()
  assert tmp and os.path.exists(tmp), process.poll()
  return process, tmp


def test_a_killed_writers_leftovers_are_removed_by_the_next_write_a_live_writers_are_kept(tmp_path):
  killed = [_holder("dir", tmp_path / "a"), _holder("file", tmp_path / "b.json")]
  live, live_tmp = _holder("dir", tmp_path / "c")
  try:
    for process, tmp in killed:
      os.kill(process.pid, signal.SIGKILL)
      process.wait()  # reaped: its pid is gone
      assert os.path.basename(tmp).startswith(f".tmp-{process.pid}-") and os.path.exists(tmp)
    (tmp_path / ".tmp-not-ours").mkdir()  # another tool's name: never touched
    io_utils.write_text(str(tmp_path / "d.json"), "{}")
    assert sorted(os.listdir(tmp_path)) == sorted([".tmp-not-ours", os.path.basename(live_tmp), "d.json"])
    _write(tmp_path / "e")  # an atomic_dir sweeps too, and keeps the live writer's
    assert os.path.exists(live_tmp)
  finally:
    live.kill()
    live.wait()
  _write(tmp_path / "e")
  assert sorted(os.listdir(tmp_path)) == [".tmp-not-ours", "d.json", "e"]


@pytest.mark.parametrize("umask,file_mode,dir_mode", [(0o022, 0o644, 0o755), (0o027, 0o640, 0o750)])
def test_outputs_get_the_modes_the_umask_gives(tmp_path, umask, file_mode, dir_mode):
  old = os.umask(umask)
  try:
    io_utils.write_text(str(tmp_path / "f.json"), "{}")
    folder = _write(tmp_path / "d")
  finally:
    os.umask(old)
  assert os.stat(tmp_path / "f.json").st_mode & 0o777 == file_mode
  assert os.stat(folder).st_mode & 0o777 == dir_mode
  assert os.stat(folder / "info.json").st_mode & 0o777 == file_mode


def test_a_folder_is_replaced_in_one_step(tmp_path, monkeypatch):
  """The old folder and the new one swap names at once (Linux's renameat2), so that a kill at any moment leaves a
  whole folder at the path: no rename in the write leaves the path without one."""
  folder = tmp_path / "out"
  (folder / "data").mkdir(parents=True)
  (folder / "info.json").write_text("old")
  rename, missing = os.replace, []

  def replace(src, dst):
    rename(src, dst)
    if not folder.is_dir():
      missing.append((src, dst))

  monkeypatch.setattr(os, "replace", replace)
  _write(folder)
  assert not missing and sorted(os.listdir(folder)) == ["info.json"] and (folder / "info.json").read_text() == "{}"
  assert os.listdir(tmp_path) == ["out"]  # the old folder is gone
