"""QNLI dev reader on the real file and on a malformed tmp file."""
import numpy as np
import pytest

from bert_flow_tf.data import qnli


def test_qnli_dev_counts_and_first_row(data_dir):
  dev = qnli.load_qnli(str(data_dir))
  assert dev.name == "QNLI/dev" and len(dev) == 5463
  assert int(dev.labels.sum()) == 2702  # entailment = 1
  assert dev.sentences_a[0] == "What came into force after the new constitution was herald?"
  assert dev.labels.dtype == np.int64 and dev.labels[0] == 1


def test_qnli_short_rows_skipped_bad_label_raises(tmp_path):
  path = tmp_path / "dev.tsv"
  path.write_text("index\tquestion\tsentence\tlabel\n0\tQ?\tS.\tnot_entailment\n1\tQ2?\n2\tQ3?\tS3.\tentailment\n")
  s = qnli.read_qnli_tsv(str(path), "QNLI/dev")
  assert s.sentences_a == ("Q?", "Q3?") and list(s.labels) == [0, 1]
  path.write_text("index\tquestion\tsentence\tlabel\n0\tQ?\tS.\tyes\n")
  with pytest.raises(ValueError, match=f"{path}:2: label 'yes'"):
    qnli.read_qnli_tsv(str(path), "QNLI/dev")
