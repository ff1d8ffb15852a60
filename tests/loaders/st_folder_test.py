"""Hub names of the presets and sentence-transformers folders read as that model (loaders/presets, st_folder)."""
import json
import logging
import pathlib
import shutil

import numpy as np
import pytest

import bert_flow_tf
from bert_flow_tf.loaders import presets
from bert_flow_tf.loaders import st_folder
from bert_flow_tf.utils import errors
from tests import tiny_runs

FIXTURE = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "minilm_parity.npz"
SentenceEncoder = bert_flow_tf.SentenceEncoder


def test_every_hub_spelling_of_a_preset_names_it(minilm_dir, tmp_path, monkeypatch):
  for name in ("all-minilm-l6-v2", "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2",
               "SENTENCE-TRANSFORMERS/ALL-MINILM-L6-V2"):
    assert presets.preset_name(name) == "all-minilm-l6-v2"
    assert presets.model_dir(name) == str(minilm_dir)
  assert presets.preset_name("other/all-MiniLM-L6-v2") is None and presets.model_dir("./x") == "./x"
  (tmp_path / "all-MiniLM-L6-v2").mkdir()  # a local folder of that name comes first, as in sentence-transformers
  monkeypatch.chdir(tmp_path)
  assert presets.model_dir("all-MiniLM-L6-v2") == "all-MiniLM-L6-v2"


def test_the_packaged_minilm_folder_reads_as_sentence_transformers_does(minilm_dir):
  settings = st_folder.read(minilm_dir)
  assert (settings.model_dir.rstrip("/"), settings.pooling, settings.max_seq_length, settings.normalize) == \
      (str(minilm_dir), "last-avg", 256, True)


@pytest.mark.slow
def test_hub_name_gives_sentence_transformers_vectors(caplog):
  """all-MiniLM-L6-v2 by its Hub id: mean pooling, then Normalize, against torch's token means (the parity
  fixture, made at 64 tokens; its long sentence is cut there)."""
  ref = np.load(FIXTURE)
  sentences = [str(s) for s in ref["sentences"]]
  enc = SentenceEncoder.from_pretrained("sentence-transformers/all-MiniLM-L6-v2")
  assert (enc.max_seq_length, enc.embedder.pooling_spec.name, enc.normalize, enc.get_sentence_embedding_dimension()) == \
      (256, "last-avg", True, 384)
  enc.max_seq_length = 64
  with caplog.at_level(logging.WARNING):
    got = enc.encode(sentences)
  assert "1 of 42 sentences were cut to 64 tokens" in caplog.text
  want = ref["last-avg"] / np.linalg.norm(ref["last-avg"], axis=1, keepdims=True)
  np.testing.assert_allclose(got, want, atol=2e-6)
  np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)
  # encode_raw: the pooled vectors before the Normalize module.
  np.testing.assert_allclose(enc.encode_raw(sentences[:2]), ref["last-avg"][:2], atol=2e-5)


def _st_folder(tmp_path, modules, pooling_config, transformer_path="0_Transformer", settings=None):
  """The tiny BERT as a sentence-transformers folder with the given modules.json and pooling config."""
  folder = tmp_path / "st"
  shutil.copytree(tiny_runs.tiny_model_dir(tmp_path / "tiny"), folder / transformer_path)
  (folder / transformer_path / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 12}))
  (folder / "1_Pooling").mkdir()
  (folder / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 16, **pooling_config}))
  kinds = {"T": ("sentence_transformers.models.Transformer", transformer_path),
           "P": ("sentence_transformers.models.Pooling", "1_Pooling"),
           "N": ("sentence_transformers.models.Normalize", "2_Normalize"),
           "D": ("sentence_transformers.models.Dense", "2_Dense")}
  (folder / "modules.json").write_text(json.dumps(
      [{"idx": i, "name": str(i), "path": kinds[k][1], "type": kinds[k][0]} for i, k in enumerate(modules)]))
  if settings:
    (folder / "config_sentence_transformers.json").write_text(json.dumps(settings))
  return str(folder)


def test_a_cls_folder_with_its_bert_in_a_subfolder(tmp_path):
  folder = _st_folder(tmp_path, "TP", {"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False},
                      settings={"prompts": {"query": "the "}, "default_prompt_name": "query",
                                "similarity_fn_name": "dot"})
  enc = SentenceEncoder.from_pretrained(folder)
  assert (enc.embedder.pooling_spec.name, enc.max_seq_length, enc.normalize, enc.similarity_fn_name) == \
      ("cls-raw", 12, False, "dot")
  assert enc.prompts == {"query": "the "} and enc.default_prompt_name == "query"
  plain = SentenceEncoder.from_pretrained(str(tmp_path / "tiny" / "model"), pooling="cls-raw", max_seq_length=12)
  np.testing.assert_allclose(enc.encode("dog"), plain.encode("the dog"), atol=1e-6)
  as_sentence_transformers = SentenceEncoder(folder, truncate_dim=4)  # SentenceTransformer(name)'s spelling
  assert (as_sentence_transformers.embedder.pooling_spec.name, as_sentence_transformers.max_seq_length) == ("cls-raw", 12)
  np.testing.assert_allclose(as_sentence_transformers.encode("dog"), enc.encode("dog")[:4], atol=1e-6)


@pytest.mark.parametrize("modules,pooling,message", [
    ("TPD", {"pooling_mode_mean_tokens": True}, r"modules \[.*Dense'\] are not supported"),
    ("PT", {"pooling_mode_mean_tokens": True}, "are not supported: only Transformer, Pooling"),
    ("TP", {"pooling_mode_max_tokens": True}, r"pooling \['pooling_mode_max_tokens'\] is not supported"),
    ("TP", {"pooling_mode_mean_tokens": True, "pooling_mode_cls_token": True}, "is not supported: exactly one"),
    ("TP", {"pooling_mode_mean_tokens": True, "include_prompt": False}, "include_prompt false"),
])
def test_modules_we_cannot_compute_are_refused_in_one_line_naming_the_file(tmp_path, modules, pooling, message):
  folder = _st_folder(tmp_path, modules, pooling)
  with pytest.raises(errors.UserError, match=message) as refused:
    SentenceEncoder.from_pretrained(folder)
  assert "\n" not in str(refused.value) and str(refused.value).startswith(folder)



@pytest.mark.slow
def test_every_spelling_from_pretrained_takes_round_trips_through_save_and_load(minilm_dir, tmp_path):
  """A preset by its name, Hub id (with or without owner, any case) or a path: fitted, saved and loaded again.
  One fit is shared: each spelling's encoder takes it with load_calibration, which checks the fingerprint (the
  weights, vocabulary, pooling and length), as `load` does; one spelling's vectors are compared."""
  sentences = ["A man plays a guitar.", "A dog runs in the park.", "The sun is hot today.", "Two kids play chess.",
               "A woman slices an onion.", "Stocks fell sharply.", "It is raining.", "He reads a book."]
  fitted = None
  for i, spelling in enumerate(("all-minilm-l6-v2", "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2",
                                str(minilm_dir))):
    enc = SentenceEncoder.from_pretrained(spelling, max_seq_length=16)
    if fitted is None:
      fitted = enc.fit(sentences, method="whitening-4")
    else:
      enc.load_calibration(str(tmp_path / "0"))
    loaded = SentenceEncoder.load(enc.save(str(tmp_path / str(i))))
    assert (loaded.embedder.loaded.source, loaded.fingerprint) == (spelling, fitted.fingerprint)
    np.testing.assert_array_equal(loaded.calibration.affine()[1], fitted.calibration.affine()[1], err_msg=spelling)
  np.testing.assert_allclose(loaded.encode(sentences[:3]), fitted.encode(sentences[:3]), atol=1e-5)
