"""The report of an experiment from plain values alone (no model, no Experiment): files, page, schema."""
import json

import pytest

from bert_flow_tf.reporting import files
from bert_flow_tf.reporting import scores
from bert_flow_tf.reporting.record import ExperimentRecord


def _record(**changes):
  fields = dict(
      model="m", pooling="last2avg", pooling_description="last2avg: mean of layers 11, 12",
      flow_mode="cached", target_sentences="train", has_custom=False,
      scores=[scores.Score("STS-B", "none", None, "spearman", None, 47.29),
              scores.Score("STS-B", "flow", "target", "spearman", None, 50.125)],
      isotropy={"STS-B": {"none": {"mean_cosine": 0.5, "top1_variance": 0.25, "condition_number": 1234.5}}},
      warnings=[], edit_distance_rhos={}, analysis_markdown="", timings={"embed": 1.234, "evaluate": 0.5})
  fields.update(changes)
  return ExperimentRecord(**fields)


def test_write_report_writes_four_files_and_returns_the_page(tmp_path):
  page = files.write_report(str(tmp_path), _record())
  assert sorted(p.name for p in tmp_path.iterdir()) == ["isotropy.json", "results.json", "results.md",
                                                        "timings.json"]
  assert (tmp_path / "results.md").read_text() == page
  lines = page.splitlines()
  assert lines[0] == "# m, last2avg: mean of layers 11, 12"
  assert "Flow mode: cached; target sentences: train." in lines[2]
  assert "| flow (target) | 50.12 |" in lines and "| STS-B | none | 0.500 | 0.250 | 1.23e+03 |" in lines
  assert "## Warnings" not in page and "Table 6" not in page and lines[-1] == "| evaluate | 0.5 |"
  payload = json.loads((tmp_path / "results.json").read_text())
  assert payload["sentence_embedding_type"] == "last2avg"
  assert [scores.Score(**s) for s in payload["results"]] == _record().scores
  assert json.loads((tmp_path / "timings.json").read_text()) == {"embed": 1.23, "evaluate": 0.5}


def test_page_sections_appear_only_when_given(tmp_path):
  page = files.write_report(str(tmp_path), _record(
      has_custom=True, warnings=["custom: flow (target) 1.00 < none 2.00"], edit_distance_rhos={"gold": -24.61},
      analysis_markdown="## Isotropy plots"))
  assert "; custom: the training file (else the scored pairs)." in page
  assert "- custom: flow (target) 1.00 < none 2.00" in page and "| gold | -24.61 |" in page
  assert page.index("| gold | -24.61 |") < page.index("## Isotropy plots") < page.index("## Wall time per stage")


def test_score_methods_follow_the_baseline_grammar():
  for method in ("none", "flow", "whitening", "whitening-256", "sn", "natsv-7", "sn+natsv-1"):
    scores.Score("STS-B", method, None if method == "none" else "target", "spearman", None, 1.)
  for method in ("natsv", "whitening-0", "pca"):
    with pytest.raises(ValueError, match=f"Score.method='{method}'.*whitening-K"):
      scores.Score("STS-B", method, "target", "spearman", None, 1.)
