"""The encode command: a thin shell over SentenceEncoder (its vectors, its progress line, forced by --progress)."""
import numpy as np
import pytest

import bert_flow_tf
from tests import tiny_runs
from tests.embedding.tiny_model import SENTENCES


@pytest.mark.slow  # two subprocesses
def test_the_command_writes_what_sentence_encoder_encodes_and_progress_on_forces_the_line(tmp_path):
  model = tiny_runs.tiny_model_dir(tmp_path)
  (tmp_path / "in.txt").write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
  args = [f"--model_dir={model}", "--pooling=first-last-avg", "--max_seq_length=16", "--batch_size=4",
          f"--input_file={tmp_path / 'in.txt'}", f"--output_file={tmp_path / 'out.npy'}"]
  done = tiny_runs.run("encode", args + ["--progress"], cwd=tmp_path)
  assert done.returncode == 0, done.stderr
  assert f"encoding: {len(set(SENTENCES))}/{len(set(SENTENCES))} (100%" in done.stderr
  assert "1 of 23 sentences were cut to 16 tokens" in done.stderr
  enc = bert_flow_tf.SentenceEncoder.from_pretrained(model, pooling="first-last-avg", max_seq_length=16)
  np.testing.assert_allclose(np.load(tmp_path / "out.npy"), enc.encode(SENTENCES, batch_size=4), atol=1e-6)
  quiet = tiny_runs.run("encode", args + ["--noprogress"], cwd=tmp_path)
  assert quiet.returncode == 0 and "encoding:" not in quiet.stderr
