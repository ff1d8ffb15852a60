"""The LiteRT export (serving/litert.py) through its real clients: LiteRT's interpreter and MediaPipe's TextEmbedder,
on the tiny BERT with a fitted flow, truncate_dim and Normalize, against the SavedModel and `encode`."""
import json
import pathlib
import re
import shutil

import numpy as np
import pytest
import tensorflow as tf
from ai_edge_litert import interpreter as litert_interpreter
from mediapipe.tasks.python import BaseOptions
from mediapipe.tasks.python import text as mp_text

import bert_flow_tf
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from bert_flow_tf.serving import litert
from bert_flow_tf.utils import errors
from tests.embedding.tiny_model import SENTENCES, tiny_model

REPO = pathlib.Path(__file__).resolve().parents[2]
TRUNCATE_DIM = 10


@pytest.fixture(scope="module", name="exported")
def fixture_exported(tmp_path_factory):
  """A tiny encoder (first-last-avg, max_seq_length 16) with a fitted flow, normalize and truncate_dim 10, exported
  with litert=True."""
  tmp = tmp_path_factory.mktemp("litert")
  flow_config = tmp / "flow.json"
  flow_config.write_text(json.dumps({"coupling_width": 8, "n_levels": 2, "depth": 1}))
  enc = bert_flow_tf.SentenceEncoder(SentenceEmbedder(tiny_model(tmp / "bert"), "first-last-avg", 16),
                                     normalize=True, truncate_dim=TRUNCATE_DIM)
  enc.fit(SENTENCES, flow_config=str(flow_config), batch_size=4)
  paths = enc.export(str(tmp / "export"), litert=True)
  return {"encoder": enc, "paths": paths, "dir": tmp / "export"}


def _interpret(path, inputs):
  """LiteRT's interpreter on one batch: dict of int32 [B, S] (litert.INPUT_NAMES) -> float32 [B, D']."""
  runner = litert_interpreter.Interpreter(model_path=path).get_signature_runner()
  return runner(**inputs)[litert.OUTPUT_NAME]


def _ids(enc, sentences):
  packed = enc.tokenize(sentences)
  return dict(zip(litert.INPUT_NAMES, (packed[n].numpy().astype(np.int32)
                                       for n in ("input_word_ids", "input_mask", "input_type_ids"))))


@pytest.mark.slow
def test_fp32_file_gives_the_saved_models_vectors_cut_and_normalized_as_encode(exported):
  enc = exported["encoder"]
  got = _interpret(exported["paths"]["litert"]["fp32"], _ids(enc, SENTENCES))  # one padded batch of 23
  assert got.shape == (len(SENTENCES), TRUNCATE_DIM)
  served = tf.saved_model.load(exported["paths"]["ids"]).signatures["serving_default"]
  packed = enc.tokenize(SENTENCES)
  z = served(**{k: tf.cast(v, tf.int32) for k, v in packed.items()})["embeddings"].numpy()   # [23, 16], the flow's
  z = z / np.linalg.norm(z, axis=1, keepdims=True)
  want = z[:, :TRUNCATE_DIM]                                     # the flow's output is on its principal axes
  np.testing.assert_allclose(got, want, atol=1e-4)
  np.testing.assert_allclose(got, enc.encode(SENTENCES), atol=1e-4)
  assert enc.calibration.axes is not None and enc.truncation_order is None


@pytest.mark.slow
def test_mediapipe_text_embedder_tokenizes_and_embeds_strings_with_the_files_alone(exported):
  enc = exported["encoder"]
  want = enc.encode(SENTENCES)  # one sentence is longer than max_seq_length: MediaPipe sends it uncut
  for name in ("fp32", "int8"):
    options = mp_text.TextEmbedderOptions(base_options=BaseOptions(model_asset_path=exported["paths"]["litert"][name]))
    with mp_text.TextEmbedder.create_from_options(options) as embedder:
      got = np.stack([embedder.embed(s).embeddings[0].embedding for s in SENTENCES])
    np.testing.assert_allclose(got, want, atol=1e-4 if name == "fp32" else 5e-2, err_msg=name)


@pytest.mark.slow
def test_readme_mediapipe_lines_run_on_the_export(exported):
  readme = (REPO / "README.md").read_text(encoding="utf-8")
  block = re.search(r"```python\n(.*?)```", readme.split("\n## On the device\n", 1)[1], re.S).group(1)
  assert '"export/litert/model_int8.tflite"' in block
  scope = {}
  exec(block.replace('"export/', f'"{exported["dir"]}/'), scope)  # pylint: disable=exec-used
  np.testing.assert_allclose(scope["vector"], exported["encoder"].encode("A man is playing a guitar."), atol=5e-2)


@pytest.mark.slow
def test_a_litert_file_with_flipped_bytes_is_refused_naming_it(exported, tmp_path):
  export_dir = tmp_path / "export"
  shutil.copytree(exported["dir"], export_dir)
  bert_flow_tf.ExportedEncoder(str(export_dir))  # the copy is whole
  path = export_dir / litert.KIND / litert.FP32_FILE
  data = bytearray(path.read_bytes())
  data[len(data) // 2:len(data) // 2 + 200] = bytes(b ^ 0xFF for b in data[len(data) // 2:len(data) // 2 + 200])
  path.write_bytes(bytes(data))
  with pytest.raises(errors.UserError) as refused:
    bert_flow_tf.ExportedEncoder(str(export_dir))
  assert errors.one_line(refused.value) == ("error: changed or damaged since it was exported: its SHA-256 is not the "
                                            f"one export_info.json records; export it again ({path})")


def test_an_existing_litert_folder_needs_overwrite_and_one_of_other_files_is_refused(tmp_path):
  embedder = SentenceEmbedder(tiny_model(tmp_path / "bert"), "last-avg", 16)
  (tmp_path / "export" / "litert").mkdir(parents=True)
  (tmp_path / "export" / "litert" / "notes.txt").write_text("mine\n")
  with pytest.raises(FileExistsError, match="litert exists; pass overwrite=True"):
    litert.export_litert(embedder, None, str(tmp_path / "export"))
  with pytest.raises(errors.UserError, match="litert"):
    litert.export_litert(embedder, None, str(tmp_path / "export"), overwrite=True)
  assert (tmp_path / "export" / "litert" / "notes.txt").read_text() == "mine\n"
