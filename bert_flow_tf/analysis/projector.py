"""TensorBoard Embedding Projector files: a sample of sentences, their text as metadata, one tensor per space.

Written with core TF and plain files, so tensorboard is needed only to view them (it is not a dependency of
tensorflow 2.21): `projector_config.pbtxt` (the projector plugin's ProjectorConfig, text format) lists one
embedding per space whose `tensor_path` is a TSV of vectors and whose `metadata_path` is the sentences' TSV.
An event file with a text summary describing the sample makes the folder a TensorBoard run, which is where
the projector plugin looks for its config, so `tensorboard --logdir <experiment dir>` shows it beside the flow
loss.

Legend: N = sentences in the sample, D = the space's width.
"""
import os
import re

import numpy as np
import tensorflow as tf
from tensorflow.core.framework import summary_pb2

from bert_flow_tf.utils import io_utils

CONFIG_FILE = "projector_config.pbtxt"  # the name the projector plugin reads in a run's folder
METADATA_FILE = "metadata.tsv"
_TEXT_METADATA = summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="text"))


def sample_distinct(sentences, spaces, max_sentences=1000, seed=0):
  """Up to `max_sentences` distinct sentences (a seeded random choice, kept in input order) and their rows.

  Args:
    sentences: list of N strings, repeats allowed (a repeated sentence has the same vectors).
    spaces: dict name -> array [N, D].
    max_sentences: int.
    seed: int.

  Returns:
    (list of M strings, dict name -> array [M, D]).
  """
  first = list({s: i for i, s in reversed(list(enumerate(sentences)))}.values())
  first.sort()
  if len(first) > max_sentences:
    first = sorted(np.random.default_rng(seed).choice(first, max_sentences, replace=False).tolist())
  return [sentences[i] for i in first], {name: np.asarray(v)[first] for name, v in spaces.items()}


def _file_name(name):
  """A space's name as a TSV file name: "flow (target)" -> "flow_target.tsv"."""
  return re.sub(r"[^A-Za-z0-9.+-]+", "_", name).strip("_") + ".tsv"


def _quote(text):
  """A protobuf text-format string literal."""
  return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_projector(tb_dir, sentences, spaces, description=""):
  """Writes the projector files for `sentences` in every space into `tb_dir`.

  Args:
    tb_dir: str, the folder (created).
    sentences: list of N strings; tabs and line breaks become spaces in the metadata (one line per row, no
      header: the projector reads a one-column file without one).
    spaces: dict name -> array [N, D] (e.g. "none", "flow (target)").
    description: str, Markdown shown in TensorBoard's text tab.

  Returns:
    the path of projector_config.pbtxt.
  """
  os.makedirs(tb_dir, exist_ok=True)
  clean = [" ".join(s.split()) for s in sentences]
  io_utils.write_text(os.path.join(tb_dir, METADATA_FILE), "".join(line + "\n" for line in clean))
  config = []
  for name, vectors in spaces.items():
    vectors = np.asarray(vectors, np.float32)
    if vectors.shape[0] != len(sentences):
      raise ValueError(f"space {name!r}: {vectors.shape[0]} rows for {len(sentences)} sentences")
    rows = ("\t".join(f"{v:.6g}" for v in row) + "\n" for row in vectors)
    io_utils.write_text(os.path.join(tb_dir, _file_name(name)), "".join(rows))
    config.append(f"embeddings {{\n  tensor_name: {_quote(name)}\n  tensor_path: {_quote(_file_name(name))}\n"
                  f"  metadata_path: {_quote(METADATA_FILE)}\n}}\n")
  path = os.path.join(tb_dir, CONFIG_FILE)
  io_utils.write_text(path, "".join(config))
  for old in tf.io.gfile.glob(os.path.join(tb_dir, "events.out.tfevents.*")):  # a rerun's summary replaces it
    os.remove(old)
  writer = tf.summary.create_file_writer(tb_dir)
  with writer.as_default():
    tf.summary.write("projector", tf.constant(description or f"{len(sentences)} sentences"), step=0,
                     metadata=_TEXT_METADATA)
  writer.close()
  return path
