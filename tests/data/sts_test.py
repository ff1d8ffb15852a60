"""STS-B, SICK-R and STS12-16 readers on the real files (counts from MANIFEST.md) and on malformed tmp files."""
import numpy as np
import pytest

from bert_flow_tf.data import sts

STS_COUNTS = {12: (3108, {"MSRpar": 750, "MSRvid": 750, "SMTeuroparl": 459, "surprise.OnWN": 750,
                          "surprise.SMTnews": 399}),
              13: (1500, {"headlines": 750, "OnWN": 561, "FNWN": 189}),
              14: (3750, {"deft-forum": 450, "deft-news": 300, "headlines": 750, "images": 750, "OnWN": 750,
                          "tweet-news": 750}),
              15: (3000, {"answers-forums": 375, "answers-students": 750, "belief": 375, "headlines": 750,
                          "images": 750}),
              16: (1186, {"answer-answer": 254, "headlines": 249, "plagiarism": 230, "postediting": 244,
                          "question-question": 209})}


def test_stsb_counts_and_first_row(data_dir):
  train, dev, test = sts.load_stsb(str(data_dir))
  assert (len(train), len(dev), len(test)) == (5749, 1500, 1379)
  assert test.name == "STS-B/test"
  assert test.sentences_a[0] == "A girl is styling her hair."
  assert test.sentences_b[0] == "A girl is brushing her hair."
  assert test.labels.dtype == np.float64 and test.labels[0] == 2.5
  assert test.labels.min() >= 0. and test.labels.max() <= 5.


def test_stsb_keeps_unbalanced_quotes(data_dir):
  train, _, test = sts.load_stsb(str(data_dir))
  # With csv's default quoting these files parse to 5711 / 1119 rows; here every '"' stays in its sentence.
  quoted = [s for s in train.sentences_a + train.sentences_b if s.count('"') % 2 == 1]
  assert quoted
  assert all("\t" not in s for s in test.sentences_a + test.sentences_b)


def test_sick_counts_crlf_and_first_row(data_dir):
  train, dev, test = sts.load_sick(str(data_dir))
  assert (len(train), len(dev), len(test)) == (4500, 500, 4927)
  assert test.sentences_a[0] == "There is no boy playing outdoors and there is no man smiling"
  assert test.labels[0] == 3.3
  # The test file has CRLF line ends: no '\r' may leak into a sentence.
  assert not any("\r" in s for s in test.sentences_a + test.sentences_b)
  assert train.labels[0] == 4.5 and train.labels.min() >= 1.


@pytest.mark.parametrize("year", sorted(STS_COUNTS))
def test_sts_year_counts(data_dir, year):
  total, per_subset = STS_COUNTS[year]
  subsets = sts.load_sts_year(str(data_dir), year)
  assert {s.name: len(s) for s in subsets} == {f"STS{year}/{k}": v for k, v in per_subset.items()}
  assert sum(len(s) for s in subsets) == total
  for s in subsets:
    assert s.labels.min() >= 0. and s.labels.max() <= 5.


def test_sts16_blank_gold_keeps_alignment(data_dir):
  folder = data_dir / "STS" / "STS16-en-test"
  inputs = (folder / "STS2016.input.headlines.txt").read_text(encoding="utf-8").split("\n")
  golds = (folder / "STS2016.gs.headlines.txt").read_text(encoding="utf-8").split("\n")
  first = next(i for i, g in enumerate(golds) if g.strip())
  last = max(i for i, g in enumerate(golds) if g.strip())
  subset = {s.name: s for s in sts.load_sts_year(str(data_dir), 16)}["STS16/headlines"]
  assert subset.sentences_a[0] == inputs[first].split("\t")[0]
  assert subset.sentences_b[-1] == inputs[last].split("\t")[1]
  assert subset.labels[0] == float(golds[first]) and subset.labels[-1] == float(golds[last])


def test_sts_subset_blank_gold_skipped(tmp_path):
  (tmp_path / "STS.input.x.txt").write_text("a1\tb1\na2\tb2\na3\tb3\n")
  (tmp_path / "STS.gs.x.txt").write_text("4.0\n\n1.5\n")
  s = sts.read_sts_subset(str(tmp_path / "STS.input.x.txt"), str(tmp_path / "STS.gs.x.txt"), "STS15/x")
  assert s.sentences_a == ("a1", "a3") and s.sentences_b == ("b1", "b3")
  np.testing.assert_array_equal(s.labels, [4.0, 1.5])


def test_stsb_malformed_rows_name_file_and_line(tmp_path):
  good = "g\tf\t2012\t0001\t3.0\tA \"quoted.\tB.\n"
  path = tmp_path / "sts-dev.csv"
  path.write_text(good + "g\tf\t2012\t0002\t3.0\tonly one sentence\n")
  with pytest.raises(ValueError, match=f"{path}:2: 6 tab-separated fields"):
    sts.read_stsb_csv(str(path), "STS-B/dev")
  path.write_text(good + good + "g\tf\t2012\t0003\tabc\tA.\tB.\n")
  with pytest.raises(ValueError, match=f"{path}:3: score 'abc' is not a number"):
    sts.read_stsb_csv(str(path), "STS-B/dev")
  path.write_text(good + "g\tf\t2012\t0002\t1.0\tA.\tB.\tsrc1\tsrc2\n")
  s = sts.read_stsb_csv(str(path), "STS-B/dev")
  assert s.sentences_a == ('A "quoted.', "A.") and list(s.labels) == [3.0, 1.0]


def test_sick_crlf_and_bad_score(tmp_path):
  path = tmp_path / "SICK_trial.txt"
  path.write_bytes(b"pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\r\n"
                   b"1\tA.\tB.\t4.5\tNEUTRAL\r\n2\tC.\tD.\tx\tNEUTRAL\r\n")
  with pytest.raises(ValueError, match=f"{path}:3: score 'x'"):
    sts.read_sick(str(path), "SICK-R/dev")


def test_missing_files_are_named(tmp_path):
  (tmp_path / "stsbenchmark").mkdir()
  with pytest.raises(FileNotFoundError, match="sts-train.csv"):
    sts.load_stsb(str(tmp_path))
  with pytest.raises(FileNotFoundError, match="STS13-en-test"):
    sts.load_sts_year(str(tmp_path), 13)
  with pytest.raises(ValueError, match="17"):
    sts.load_sts_year(str(tmp_path), 17)


def test_stsb_glue_tsv_layout(tmp_path):
  """GLUE's STS-B: train.tsv / dev.tsv (header; sentences in fields 7, 8; score 9) beside the original test csv."""
  folder = tmp_path / "STS-B"
  folder.mkdir()
  header = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
  row = lambda i, a, b, y: f"{i}\tmain-captions\tMSRvid\t2012test\t{i:04d}\tnone\tnone\t{a}\t{b}\t{y}\n"
  (folder / "train.tsv").write_text(header + row(0, "A plane takes off.", "An air plane takes off.", "5.000")
                                    + row(1, "A man plays.", "A dog runs.", "0.250"))
  (folder / "dev.tsv").write_text(header + row(0, "A cat.", "The cat.", "4.5"))
  (folder / "sts-test.csv").write_text("main-captions\tMSRvid\t2012test\t0000\t2.500\tOne.\tTwo.\n")
  train, dev, test = sts.load_stsb(str(tmp_path))
  assert train.name == "STS-B/train" and train.sentences_b == ("An air plane takes off.", "A dog runs.")
  np.testing.assert_array_equal(train.labels, [5.0, 0.25])
  assert dev.sentences_a == ("A cat.",) and list(dev.labels) == [4.5]
  assert test.sentences_a == ("One.",) and list(test.labels) == [2.5]
  (folder / "dev.tsv").write_text(header + "0\tmain\tx\t2012\t0\tnone\tnone\tA cat.\n")
  with pytest.raises(ValueError, match="dev.tsv:2"):
    sts.load_stsb(str(tmp_path))
