"""A user's own files (data/custom.py): layouts, pairing, headers, and one-line errors naming file:line."""
import numpy as np
import pytest

from bert_flow_tf.data import custom


def _write(tmp_path, name, content):
  path = tmp_path / name
  path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
  return str(path)


def test_lines_pair_consecutive_and_an_odd_last_one_with_the_first(tmp_path):
  path = _write(tmp_path, "s.txt", "one\r\ntwo\n\n   \nthree\nfour\nfive")  # CRLF, blank lines, no final newline
  train = custom.read_train(path)
  assert train.name == "custom/train"
  assert train.sentences_a == ("one", "three", "five")
  assert train.sentences_b == ("two", "four", "one")
  assert np.isnan(train.labels).all() and train.labels.shape == (3,)


def test_pairs_detected_from_a_tab_with_header_and_optional_score(tmp_path):
  scored = _write(tmp_path, "p.tsv", "sentence1\tsentence2\tscore\na\tb\t4.5\nc\td\t0\n")
  train = custom.read_train(scored)
  assert (train.sentences_a, train.sentences_b) == (("a", "c"), ("b", "d"))
  assert train.labels.tolist() == [4.5, 0.]
  unscored = _write(tmp_path, "u.tsv", "a\tb\nc\td\n")
  assert custom.read_train(unscored).sentences_b == ("b", "d")
  # Forced to lines, a tab is a character of the sentence.
  assert custom.read_train(unscored, "lines").sentences_a == ("a\tb",)


def test_eval_pairs_with_and_without_header(tmp_path):
  rows = "A man plays.\tA man is playing.\t4.2\nA dog.\tThe market fell.\t0.1\n"
  with_header = custom.read_eval(_write(tmp_path, "h.tsv", "s1\ts2\tgold\n" + rows))
  without = custom.read_eval(_write(tmp_path, "n.tsv", rows))
  for pairs in (with_header, without):
    assert pairs.name == "custom/eval" and pairs.labels.tolist() == [4.2, 0.1]
    assert pairs.sentences_a == ("A man plays.", "A dog.")


def test_eval_only_fits_on_its_own_pairs(tmp_path):
  path = _write(tmp_path, "e.tsv", "a\tb\t1\nc\td\t2\n")
  data = custom.load_custom(eval_file=path)
  assert data.train == [data.eval]
  assert custom.load_custom() is None


@pytest.mark.parametrize("name, content, where, what", [
    ("empty.txt", "", "empty.txt", "no sentences"),
    ("blank.txt", "\n  \n\n", "blank.txt", "no sentences"),
    ("latin1.txt", b"good line\ncaf\xe9\n", "latin1.txt:2", "not valid UTF-8"),
    ("fields.tsv", "a\tb\nc\n", "fields.tsv:2", "1 tab-separated fields"),
    ("score.tsv", "a\tb\t1\nc\td\thigh\n", "score.tsv:2", "score 'high' is not a number"),
])
def test_bad_training_files_fail_in_one_line_naming_file_and_line(tmp_path, name, content, where, what):
  path = _write(tmp_path, name, content)
  with pytest.raises(ValueError) as e:
    custom.read_train(path, "pairs" if name.endswith(".tsv") else "auto")
  message = str(e.value)
  assert f"{tmp_path / where}" in message and what in message and "\n" not in message


@pytest.mark.parametrize("content, where, what", [
    ("", "", "no sentences"),
    ("s1\ts2\tscore\na\tb\t1\nc\td\tn/a\n", ":3", "score 'n/a' is not a number"),
    ("a\tb\t1\nc\td\n", ":2", "2 tab-separated fields, expected 3"),
    ("a\tb\tnan\nc\td\t1\n", ":1", "is not finite"),
    ("s1\ts2\tscore\na\tb\t1\n", "", "1 scored pair(s)"),
    (b"a\tb\t1\nc\td\xff\t2\n", ":2", "not valid UTF-8"),
])
def test_bad_eval_files_fail_in_one_line_naming_file_and_line(tmp_path, content, where, what):
  path = _write(tmp_path, "pairs.tsv", content)
  with pytest.raises(ValueError) as e:
    custom.read_eval(path)
  message = str(e.value)
  assert message.startswith(f"{path}{where}:") and what in message and "\n" not in message


def test_missing_file_and_unknown_format(tmp_path):
  with pytest.raises(FileNotFoundError, match="nope.txt"):
    custom.read_train(str(tmp_path / "nope.txt"))
  with pytest.raises(ValueError, match="'csv'"):
    custom.read_train(_write(tmp_path, "s.txt", "a\n"), "csv")
