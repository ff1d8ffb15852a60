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


def test_qnli_task_reads_train_and_unlabelled_test_when_present(tmp_path):
  from bert_flow_tf import experiment_spec
  from bert_flow_tf.data import tasks
  folder = tmp_path / "QNLI"
  folder.mkdir()
  header = "index\tquestion\tsentence\tlabel\n"
  (folder / "dev.tsv").write_text(header + "0\tQd?\tSd.\tentailment\n")
  assert [s.name for s in tasks.load_task("qnli", str(tmp_path)).train] == []
  (folder / "train.tsv").write_text(header + "0\tQa?\tSa.\tnot_entailment\n1\tQb?\tSb.\tentailment\n")
  (folder / "test.tsv").write_text("index\tquestion\tsentence\n0\tQt?\tSt.\n1\tQu?\n")
  task = tasks.load_task("qnli", str(tmp_path))
  assert [len(s) for s in task.train + task.dev + task.test] == [2, 1, 1]
  assert task.test[0].sentences_b == ("St.",) and list(task.test[0].labels) == [0]
  fit = experiment_spec.target_pairsets(task, use_full_for_training=True, one_pass_full=False)
  assert [s.name for s in fit] == ["QNLI/train", "QNLI/dev", "QNLI/test"]
  (folder / "test.tsv").write_text("index\tquestion\tsentence\n0\tQt?\tSt.\tentailment\n")
  with pytest.raises(ValueError, match="test.tsv:2: 4 tab-separated fields, expected 3"):
    tasks.load_task("qnli", str(tmp_path))
