"""SNLI / MNLI readers: SentEval files (real data), original jsonl and GLUE tsv (tmp files)."""
import json

import numpy as np
import pytest

from bert_flow_tf.data import nli


def test_snli_senteval_counts_and_first_rows(data_dir):
  snli = nli.load_snli(str(data_dir))
  assert {"dev", "test"} <= set(snli)  # train too, where present
  assert (len(snli["dev"]), len(snli["test"])) == (9842, 9824)
  dev = snli["dev"]
  assert dev.sentences_a[0] == "Two women are embracing while holding to go packages ."
  assert dev.sentences_b[1] == "Two woman are holding packages ."
  assert dev.labels.dtype == np.int64 and list(dev.labels[:2]) == [1, 0]  # neutral, entailment
  assert set(np.unique(dev.labels)) == {0, 1, 2}


def test_jsonl_skips_dash_labels(tmp_path):
  path = tmp_path / "snli_1.0_dev.jsonl"
  records = [{"sentence1": "A.", "sentence2": "B.", "gold_label": "contradiction"},
             {"sentence1": "C.", "sentence2": "D.", "gold_label": "-"},
             {"sentence1": "E.", "sentence2": "F.", "gold_label": "entailment"}]
  path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
  s = nli.read_nli_jsonl(str(path), "SNLI/dev")
  assert s.sentences_a == ("A.", "E.") and list(s.labels) == [2, 0]
  path.write_text(json.dumps(records[0]) + "\n" + json.dumps({**records[0], "gold_label": "maybe"}) + "\n")
  with pytest.raises(ValueError, match=f"{path}:2: label 'maybe'"):
    nli.read_nli_jsonl(str(path), "SNLI/dev")


def test_mnli_glue_tsv_uses_gold_label(tmp_path):
  folder = tmp_path / "MNLI"
  folder.mkdir()
  header = "\t".join(f"c{i}" for i in range(16))
  row = ["0", "p", "q", "fiction", "bp1", "bp2", "p1", "p2", "The cat sat.", "A cat sat.",
         "neutral", "entailment", "entailment", "entailment", "entailment", "entailment"]
  (folder / "dev_matched.tsv").write_text(header + "\n" + "\t".join(row) + "\n" + "\t".join(row[:9]) + "\n")
  with pytest.raises(ValueError, match="dev_matched.tsv:3: 9 tab-separated fields"):
    nli.load_mnli(str(tmp_path))
  (folder / "dev_matched.tsv").write_text(header + "\n" + "\t".join(row) + "\n")
  mnli = nli.load_mnli(str(tmp_path))
  assert list(mnli) == ["dev_matched"]
  s = mnli["dev_matched"]
  assert s.name == "MNLI/dev_matched" and s.sentences_b == ("A cat sat.",) and list(s.labels) == [0]


def _jsonl(path, rows):
  path.write_text("".join(json.dumps({"sentence1": a, "sentence2": b, "gold_label": y}) + "\n" for a, b, y in rows))


def test_snli_and_mnli_original_jsonl_layouts(tmp_path):
  """load_snli / load_mnli on the original releases' file names, where no SentEval or GLUE file exists."""
  (tmp_path / "SNLI").mkdir()
  _jsonl(tmp_path / "SNLI" / "snli_1.0_train.jsonl", [("A.", "B.", "neutral"), ("C.", "D.", "-")])
  _jsonl(tmp_path / "SNLI" / "snli_1.0_test.jsonl", [("E.", "F.", "contradiction")])
  snli = nli.load_snli(str(tmp_path))
  assert sorted(snli) == ["test", "train"] and snli["train"].name == "SNLI/train"
  assert snli["train"].sentences_a == ("A.",) and list(snli["train"].labels) == [1]
  assert snli["test"].sentences_b == ("F.",) and list(snli["test"].labels) == [2]
  (tmp_path / "MNLI").mkdir()
  _jsonl(tmp_path / "MNLI" / "multinli_1.0_train.jsonl", [("G.", "H.", "entailment"), ("I.", "J.", "neutral")])
  _jsonl(tmp_path / "MNLI" / "multinli_1.0_dev_mismatched.jsonl", [("K.", "L.", "contradiction")])
  mnli = nli.load_mnli(str(tmp_path))
  assert sorted(mnli) == ["dev_mismatched", "train"]
  assert mnli["train"].sentences_b == ("H.", "J.") and list(mnli["train"].labels) == [0, 1]
  assert mnli["dev_mismatched"].name == "MNLI/dev_mismatched" and list(mnli["dev_mismatched"].labels) == [2]
