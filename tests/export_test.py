"""export_models: the layout it writes, the info it records and what it refuses (tiny BERT; the exported models'
vectors are checked on the real MiniLM in tests/end_to_end_test.py and on the tiny BERT in tests/serving_test.py)."""
import json
import os

import pytest

from bert_flow_tf import export
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from glow.model import Glow
from tests.embedding import tiny_model


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
  tmp = tmp_path_factory.mktemp("export")
  encoder = SentenceEmbedder(tiny_model.tiny_model(tmp / "tiny"), "first-last-avg", max_seq_length=16)
  flow = Glow.from_config("config_l2_d2_w32", dim=encoder.dim, seed=3)
  paths = export.export_models(encoder, flow, str(tmp / "export"), version=1)
  return {"encoder": encoder, "flow": flow, "paths": paths, "dir": str(tmp / "export")}


def test_export_layout_and_info(exported):
  export_dir, paths = exported["dir"], exported["paths"]
  assert sorted(os.listdir(export_dir)) == ["export_info.json", "ids", "text"]
  assert os.listdir(os.path.join(export_dir, "text")) == ["1"]  # no temporary directory left behind
  assert os.path.isfile(os.path.join(paths["text"], "assets", "vocab.txt"))
  info = json.loads(open(paths["info"], encoding="utf-8").read())
  assert info["dim"] == 16 and info["max_seq_length"] == 16 and info["pooling"] == "first-last-avg"
  assert info["flow"]["config"]["n_levels"] == 2 and info["flow"]["dim"] == 16


def test_export_refusals(exported):
  encoder, flow, export_dir = exported["encoder"], exported["flow"], exported["dir"]
  with pytest.raises(FileExistsError, match="text/1 exists"):
    export.export_models(encoder, flow, export_dir, version=1)
  with pytest.raises(ValueError, match="version must be an int >= 1"):
    export.export_models(encoder, flow, export_dir, version=0)
  with pytest.raises(ValueError, match="flow width 32 != embedding width D=16"):
    export.export_models(encoder, Glow.from_config("config_l2_d2_w32", dim=32), export_dir, version=2)
  assert sorted(os.listdir(os.path.join(export_dir, "text"))) == ["1"]
