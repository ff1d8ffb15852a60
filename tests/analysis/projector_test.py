"""TensorBoard projector files: config, one TSV per space, sentences as metadata, an event file for the run."""
import os

import numpy as np
import tensorflow as tf

from bert_flow_tf.analysis import projector


def test_sample_distinct_drops_repeats_keeps_order_and_rows():
  sentences = ["a", "b", "a", "c", "b", "d"]
  vectors = np.arange(6.)[:, None] * np.ones((1, 3))
  sample, spaces = projector.sample_distinct(sentences, {"none": vectors}, max_sentences=10)
  assert sample == ["a", "b", "c", "d"]
  np.testing.assert_array_equal(spaces["none"][:, 0], [0., 1., 3., 5.])
  sample, spaces = projector.sample_distinct(sentences, {"none": vectors}, max_sentences=2, seed=3)
  assert len(sample) == 2 and sample == sorted(sample, key=sentences.index)
  np.testing.assert_array_equal(spaces["none"][:, 0], [sentences.index(s) for s in sample])


def test_write_projector(tmp_path):
  sentences = ["a man\tplays", "the dog runs .", "line\nbreak"]
  spaces = {"none": np.array([[1., 2.], [3., 4.], [5., 6.]]), "flow (target)": np.array([[.5], [-1.5], [2.25]])}
  path = projector.write_projector(str(tmp_path / "tb"), sentences, spaces, description="three sentences")
  assert os.path.basename(path) == "projector_config.pbtxt"
  config = (tmp_path / "tb" / "projector_config.pbtxt").read_text()
  assert config == ('embeddings {\n  tensor_name: "none"\n  tensor_path: "none.tsv"\n'
                    '  metadata_path: "metadata.tsv"\n}\n'
                    'embeddings {\n  tensor_name: "flow (target)"\n  tensor_path: "flow_target.tsv"\n'
                    '  metadata_path: "metadata.tsv"\n}\n')
  # One column and no tab: the projector then reads no header row.
  assert (tmp_path / "tb" / "metadata.tsv").read_text() == "a man plays\nthe dog runs .\nline break\n"
  assert (tmp_path / "tb" / "none.tsv").read_text() == "1\t2\n3\t4\n5\t6\n"
  np.testing.assert_array_equal(np.loadtxt(tmp_path / "tb" / "flow_target.tsv"), [.5, -1.5, 2.25])
  events = [f for f in os.listdir(tmp_path / "tb") if f.startswith("events.out.tfevents")]
  assert len(events) == 1
  texts = [v.tensor.string_val[0] for e in tf.compat.v1.train.summary_iterator(str(tmp_path / "tb" / events[0]))
           for v in e.summary.value]
  assert texts == [b"three sentences"]
  # A rerun replaces the event file instead of adding a second one.
  projector.write_projector(str(tmp_path / "tb"), sentences, spaces, description="again")
  assert len([f for f in os.listdir(tmp_path / "tb") if f.startswith("events.out.tfevents")]) == 1
