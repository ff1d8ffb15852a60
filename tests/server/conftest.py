"""The export the server's tests serve: a tiny BERT ending in a Normalize (as the preset) with a fitted flow."""
import json

import pytest

import bert_flow_tf
from tests import tiny_runs
from tests.embedding.tiny_model import SENTENCES


@pytest.fixture(scope="session")
def tiny_export(tmp_path_factory):
  """{"enc": the SentenceEncoder, "export_dir": its export (a binary search corpus; the int8 ranges in
  export_info.json), "tmp": a folder for the tests' files}."""
  tmp = tmp_path_factory.mktemp("server")
  flow_config = tmp / "flow.json"
  flow_config.write_text(json.dumps({"coupling_width": 8, "n_levels": 2, "depth": 1}))
  enc = bert_flow_tf.SentenceEncoder.from_pretrained(tiny_runs.tiny_model_dir(tmp), pooling="first-last-avg",
                                                     max_seq_length=16)
  enc.fit(SENTENCES, flow_config=str(flow_config), batch_size=4)
  enc.normalize = True  # unit-length vectors out of every door, as the preset's pipeline
  export_dir = str(tmp / "export")
  enc.export(export_dir, corpus=SENTENCES, search="binary", truncate_dim=8)
  return {"enc": enc, "export_dir": export_dir, "tmp": tmp}
