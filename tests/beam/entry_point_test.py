"""`python -m bert_flow_tf.beam` with 2 workers fills the store; `run_flow.py --cached_dir` then runs no BERT."""
import json
import os
import subprocess
import sys

import pytest

from tests import beam as beam_tests

beam_tests.require_apache_beam()

# pylint: disable=g-import-not-at-top,wrong-import-position
from bert_flow_tf import data
from tests import tiny_runs


@pytest.mark.slow
def test_run_flow_finds_every_vector_the_pipeline_wrote(tmp_path, data_dir):
  model = tiny_runs.tiny_model_dir(tmp_path)
  stsb = tiny_runs.tiny_stsb(data_dir, tmp_path / "data", rows=16)
  task = data.load_task("sts-b", stsb)
  sentences = sorted({s for split in (task.train, task.dev, task.test) for p in split
                      for s in (*p.sentences_a, *p.sentences_b)})
  (tmp_path / "sentences.txt").write_text("\n".join(sentences) + "\n", encoding="utf-8")
  cache = tmp_path / "exp" / "cache"
  env = dict(os.environ, PYTHONPATH=tiny_runs.REPO)
  beam = subprocess.run(
      [sys.executable, "-m", "bert_flow_tf.beam", f"--input_pattern={tmp_path / 'sentences.txt'}",
       f"--cache_dir={cache}", f"--model_dir={model}", "--pooling=last-avg", "--num_workers=2"],
      capture_output=True, text=True, cwd=tiny_runs.REPO, env=env, timeout=300)
  assert beam.returncode == 0, beam.stderr[-3000:]
  summary = json.loads(beam.stdout.strip().splitlines()[-1])
  assert summary["embedded"] == len(sentences) and summary["names"] == ["mean-3"]
  flow = tiny_runs.run("run_flow", ["--model_dir", model, f"--data_dir={stsb}", "--sentence_embedding_type=last-avg",
                                    "--noflow", f"--output_parent_dir={tmp_path / 'exp'}", "--exp_name=c",
                                    f"--cached_dir={cache}"], cwd=tmp_path)
  assert flow.returncode == 0, flow.stderr[-3000:]
  assert "new sentences" not in flow.stderr                          # the store's "encoding N new sentences"
  assert (tmp_path / "exp" / "c" / "results.json").is_file()
