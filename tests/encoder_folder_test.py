"""A SentenceEncoder's saved folder: what `save` may replace, and that `load` never runs a SavedModel the folder
names unless the caller opts in (a planted SavedModel whose graph writes a file)."""
import json
import os

import numpy as np
import pytest
import tensorflow as tf
import tf_keras as keras

import bert_flow_tf
from bert_flow_tf import encoder_folder
from bert_flow_tf.loaders import tfhub
from bert_flow_tf.utils import errors
from tests import tiny_runs
from tests.embedding.tiny_model import SENTENCES

SentenceEncoder = bert_flow_tf.SentenceEncoder


@pytest.fixture(scope="module", name="model_dir")
def fixture_model_dir(tmp_path_factory):
  return tiny_runs.tiny_model_dir(tmp_path_factory.mktemp("encoder_folder"))


def _encoder(model_dir):
  return SentenceEncoder.from_pretrained(model_dir, pooling="last-avg", max_seq_length=16)


class _WritesAFile(keras.layers.Layer):
  """An 'encoder' whose every call writes `target`: what a hostile SavedModel could do."""

  def __init__(self, target, **kwargs):
    super().__init__(**kwargs)
    self.target = target
    self.w = self.add_weight(name="w", shape=[4], initializer="zeros")

  def call(self, inputs, training=False):
    ids = inputs["input_word_ids"]
    with tf.control_dependencies([tf.io.write_file(self.target, "the planted graph ran")]):
      h = tf.zeros(tf.concat([tf.shape(ids), [4]], 0)) + self.w  # [B, S, 4]
    return {"pooled_output": h[:, 0], "sequence_output": h, "encoder_outputs": [h]}


def _plant(folder, target, vocab_file):
  """A TF-Hub-format SavedModel in `folder` whose call writes `target`; the file is gone when it returns."""
  layer = _WritesAFile(str(target))
  ids = tf.zeros([1, 2], tf.int32)
  layer({"input_word_ids": ids, "input_mask": ids, "input_type_ids": ids})  # builds it (and writes once, eagerly)
  tfhub.save_hub_encoder(layer, str(folder), vocab_file=vocab_file)
  os.remove(target)


def _saved_folder(folder, model, **edits):
  folder.mkdir()
  info = {"format_version": 1, "model": model, "do_lower_case": True, "pooling": "last-avg", "max_seq_length": 16,
          "fingerprint": "0" * 16, "calibration": None, **edits}
  (folder / encoder_folder.INFO_FILE).write_text(json.dumps(info))
  return str(folder)


@pytest.mark.slow
def test_load_refuses_a_saved_model_the_folder_names_and_never_runs_it(tmp_path, model_dir, monkeypatch):
  target = tmp_path / "ran.txt"
  folder = _saved_folder(tmp_path / "downloaded", "planted")
  _plant(tmp_path / "downloaded" / "planted", target, os.path.join(model_dir, "vocab.txt"))
  elsewhere = tmp_path / "elsewhere"
  elsewhere.mkdir()
  monkeypatch.chdir(elsewhere)  # the relative name resolves against the folder, not here
  for make in (SentenceEncoder.load, SentenceEncoder, SentenceEncoder.from_pretrained):
    with pytest.raises(errors.UserError) as refused:
      make(folder)
    message = str(refused.value)
    assert "\n" not in message and message.startswith(os.path.join(folder, encoder_folder.INFO_FILE))
    assert "trust_saved_model=True" in message and f"model={os.path.join(folder, 'planted')!r}" in message
    assert not target.exists()
  # An absolute path to a SavedModel elsewhere is refused the same way.
  other = _saved_folder(tmp_path / "other", str(tmp_path / "downloaded" / "planted"))
  with pytest.raises(errors.UserError, match="trust_saved_model=True"):
    SentenceEncoder.load(other)
  assert not target.exists()
  # With the opt-in the SavedModel is loaded and called (so the plant was live); its fingerprint is then refused.
  with pytest.raises(ValueError, match="was saved from"):
    SentenceEncoder.load(folder, trust_saved_model=True)
  assert target.read_text() == "the planted graph ran"


def test_a_relative_model_path_resolves_against_the_saved_folder(tmp_path, model_dir, monkeypatch):
  enc = _encoder(model_dir).fit(SENTENCES, method="whitening")
  folder = tmp_path / "saved"
  enc.save(str(folder))
  info = json.loads((folder / encoder_folder.INFO_FILE).read_text())
  info["model"] = os.path.relpath(model_dir, folder)
  (folder / encoder_folder.INFO_FILE).write_text(json.dumps(info))
  (tmp_path / "cwd").mkdir()
  monkeypatch.chdir(tmp_path / "cwd")
  loaded = SentenceEncoder.load(str(folder))
  raw = enc.encode_raw(SENTENCES)
  assert loaded.fingerprint == enc.fingerprint
  np.testing.assert_array_equal(loaded.calibration.transform(raw), enc.calibration.transform(raw))


@pytest.mark.slow
def test_save_replaces_only_its_own_folder(tmp_path, model_dir, monkeypatch):
  enc = _encoder(model_dir).fit(SENTENCES, method="sn")
  folder = tmp_path / "enc"
  enc.save(str(folder))
  enc.save(str(folder))  # an earlier save: replaced
  assert sorted(os.listdir(folder)) == ["calibration", encoder_folder.INFO_FILE]
  (folder / "notes.txt").write_text("the user's")
  with pytest.raises(errors.UserError, match=r"not replaced: it holds notes\.txt.*overwrite=True") as refused:
    enc.save(str(folder))
  assert "\n" not in str(refused.value) and (folder / "notes.txt").read_text() == "the user's"
  work = tmp_path / "work"
  work.mkdir()
  (work / "thesis.tex").write_text("x")
  monkeypatch.chdir(work)
  for path in (".", str(work), ".."):
    with pytest.raises(errors.UserError, match="never replaced"):
      enc.save(path, overwrite=True)
  assert os.listdir(work) == ["thesis.tex"]
  enc.save(str(folder), overwrite=True)
  assert sorted(os.listdir(folder)) == ["calibration", encoder_folder.INFO_FILE]
  assert SentenceEncoder.load(str(folder)).calibration.method == "sn"


def test_save_replaces_only_what_an_earlier_save_listed_at_any_depth(tmp_path, model_dir):
  enc = _encoder(model_dir).fit(SENTENCES, method="whitening")
  folder = tmp_path / "enc"
  enc.save(str(folder))
  enc.save(str(folder))  # every file and folder is one the earlier save listed: replaced
  notes = folder / encoder_folder.CALIBRATION_DIR / "notes.txt"
  notes.write_text("the user's")
  with pytest.raises(errors.UserError) as refused:
    enc.save(str(folder))
  message = str(refused.value)
  assert "\n" not in message and message.startswith(f"{folder}: not replaced: it holds calibration/notes.txt,")
  assert "overwrite=True" in message and notes.read_text() == "the user's"
  enc.save(str(folder), overwrite=True)
  assert not notes.exists() and SentenceEncoder.load(str(folder)).calibration.method == "whitening"


def test_save_never_replaces_a_symbolic_link(tmp_path, model_dir):
  enc = _encoder(model_dir)
  real = tmp_path / "real"
  enc.save(str(real))
  for target in (real, tmp_path / "nowhere"):
    link = tmp_path / f"link-to-{target.name}"
    link.symlink_to(target)
    for overwrite in (False, True):
      with pytest.raises(errors.UserError) as refused:
        enc.save(str(link), overwrite=overwrite)
      message = str(refused.value)
      assert "\n" not in message and message.startswith(f"{link}: is a symbolic link (to {target})")
    assert link.is_symlink() and os.readlink(link) == str(target)
  assert sorted(os.listdir(real)) == [encoder_folder.INFO_FILE]


def test_a_whitening_save_without_its_baseline_file_names_that_file(tmp_path, model_dir):
  folder = tmp_path / "enc"
  _encoder(model_dir).fit(SENTENCES, method="whitening").save(str(folder))
  baseline = folder / encoder_folder.CALIBRATION_DIR / "baseline.npz"
  os.remove(baseline)
  for make in (SentenceEncoder.load, SentenceEncoder):
    with pytest.raises(FileNotFoundError) as missing:
      make(str(folder))
    assert missing.value.filename == str(baseline) and "whitening" in str(missing.value)
    assert "flow" not in str(missing.value) and "\n" not in str(missing.value)
