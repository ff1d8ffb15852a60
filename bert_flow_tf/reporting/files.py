"""The report files of an experiment's output folder, each written atomically:

  results.json    {"model", "sentence_embedding_type", "results": [Score fields...]}
  isotropy.json   dataset -> space -> the isotropy numbers
  timings.json    stage -> wall seconds (2 decimals)
  results.md      reporting.markdown.results_page
"""
import dataclasses
import json
import os

from bert_flow_tf.reporting import markdown
from bert_flow_tf.utils import io_utils

RESULTS_JSON = "results.json"
ISOTROPY_JSON = "isotropy.json"
TIMINGS_JSON = "timings.json"
RESULTS_MD = "results.md"


def _write_json(path, payload):
  io_utils.write_text(path, json.dumps(payload, indent=2) + "\n")


def write_results_json(path, model, pooling, scores):
  """Writes {"model", "sentence_embedding_type", "results": [Score fields...]} to `path` (the pooling name under
  the original's key, which scripts/results_table.py and earlier results.json files share)."""
  _write_json(path, {"model": model, "sentence_embedding_type": pooling,
                     "results": [dataclasses.asdict(s) for s in scores]})


def write_report(output_dir, record):
  """Writes the four report files of `record` (an ExperimentRecord) into output_dir. Returns results.md's text."""
  write_results_json(os.path.join(output_dir, RESULTS_JSON), record.model, record.pooling,
                     record.scores)
  _write_json(os.path.join(output_dir, ISOTROPY_JSON), record.isotropy)
  _write_json(os.path.join(output_dir, TIMINGS_JSON), {k: round(v, 2) for k, v in record.timings.items()})
  page = markdown.results_page(record)
  io_utils.write_text(os.path.join(output_dir, RESULTS_MD), page)
  return page
