"""One sentence, one vector and one set of codes through every door (bert_flow_tf/quantization/sentence_codes.py's
contract).

The tiny BERT (D = 16) with a model Normalize and a flow fitted with its principal axes and int8 ranges; doors x
precisions x {full, truncated} x {one sentence, a batch}, against one reference computed from the calibration's
parts (BERT's raw vectors -> calibration.transform -> cut -> quantize with the saved ranges). Codes are compared byte
for byte; float vectors byte for byte within a process's eager doors, and to 1e-6 from the SavedModel's graph
(TF's graph fuses the flow's ops in another order: the last bits of a float32 move).
"""
import numpy as np
import pytest

import bert_flow_tf
from bert_flow_tf import search
from bert_flow_tf.quantization import st_layouts
from bert_flow_tf.quantization import truncation
from bert_flow_tf.serving import session_loader
from bert_flow_tf.utils import errors
from tests import tiny
from tests import tiny_runs
from tests.embedding.tiny_model import SENTENCES

PRECISIONS = ("int8", "uint8", "binary", "ubinary")
WIDTHS = (None, 5)
BATCH = SENTENCES[:6]


@pytest.fixture(scope="module", name="doors")
def fixture_doors(tmp_path_factory):
  """The encoder, its saved and loaded copy, its export (ExportedEncoder, and the text model through TF Serving's
  v1 loader), and the reference."""
  tmp = tmp_path_factory.mktemp("doors")
  enc = bert_flow_tf.SentenceEncoder.from_pretrained(tiny_runs.tiny_model_dir(tmp), pooling="last-avg",
                                                     max_seq_length=16)
  enc.normalize = True  # as the preset's pipeline, which ends in Normalize
  enc.fit(SENTENCES, flow_config=tiny.write_glow_config(tmp / "glow.json"), batch_size=4)
  enc.save(str(tmp / "saved"))
  paths = enc.export(str(tmp / "export"), precisions=PRECISIONS)
  calibrated = enc.calibration.transform(enc.encode_raw(BATCH))
  return {"enc": enc, "saved": str(tmp / "saved"), "export": str(tmp / "export"), "text": paths["text"],
          "calibrated": calibrated}


def reference(doors, precision, width):
  calibration = doors["enc"].calibration
  kept = truncation.kept(calibration.truncation_order, width, calibration.dim)
  if precision == "float32":
    return search.normalize(doors["calibrated"])[:, kept]
  return st_layouts.quantize_embeddings(doors["calibrated"][:, kept], precision,
                                        ranges=calibration.int8_ranges[:, kept])


def each_alone(encoder, **kwargs):
  return np.stack([encoder.encode(s, **kwargs) for s in BATCH])


@pytest.mark.parametrize("width", WIDTHS)
def test_encode_alone_in_a_batch_normalized_and_after_load(doors, width):
  fresh = bert_flow_tf.SentenceEncoder.load(doors["saved"])  # no sentence embedded yet: each alone runs BERT alone
  for precision in ("float32",) + PRECISIONS:
    want = reference(doors, precision, width)
    kwargs = {"precision": precision, "truncate_dim": width}
    if precision == "float32":
      got = {"alone": each_alone(fresh, **kwargs), "batch": doors["enc"].encode(BATCH, **kwargs),
             "loaded": fresh.encode(BATCH, **kwargs)}
      for door, value in got.items():
        np.testing.assert_allclose(value, want, rtol=0, atol=1e-6, err_msg=door)
      continue
    got = {"alone": each_alone(fresh, **kwargs), "batch": doors["enc"].encode(BATCH, **kwargs),
           "loaded": fresh.encode(BATCH, **kwargs),
           "normalize_embeddings": doors["enc"].encode(BATCH, normalize_embeddings=True, **kwargs),
           "batch of two": doors["enc"].encode(BATCH[:2], **kwargs)}
    for door, value in got.items():
      np.testing.assert_array_equal(value, want[:len(value)], err_msg=f"{door} {precision} {width}")


@pytest.fixture(scope="module", name="exported")
def fixture_exported(doors):
  return bert_flow_tf.ExportedEncoder(doors["export"])


@pytest.mark.parametrize("width", WIDTHS)
def test_exported_encoder_alone_and_in_a_batch(doors, exported, width):
  for precision in ("float32",) + PRECISIONS:
    want = reference(doors, precision, width)
    kwargs = {"precision": precision, "truncate_dim": width}
    for door, got in {"alone": each_alone(exported, **kwargs), "batch": exported.encode(BATCH, **kwargs)}.items():
      if precision == "float32":
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-6, err_msg=door)
      else:
        np.testing.assert_array_equal(got, want, err_msg=f"{door} {precision} {width}")


def test_the_text_model_through_tf_servings_v1_loader(doors):
  session = session_loader.SessionModel(doors["text"])
  try:
    batch = session.run("serving_default", {"sentences": BATCH})
    alone = [session.run("serving_default", {"sentences": [s]}) for s in BATCH]
  finally:
    session.close()
  np.testing.assert_allclose(batch["embeddings"], doors["calibrated"], rtol=0, atol=1e-6)
  for precision in PRECISIONS:
    want = reference(doors, precision, None)
    np.testing.assert_array_equal(batch[f"embeddings_{precision}"], want, err_msg=precision)
    np.testing.assert_array_equal(np.concatenate([a[f"embeddings_{precision}"] for a in alone]), want)
    if precision in ("int8", "uint8"):  # a cut of the codes is the truncated codes
      kept = truncation.kept(doors["enc"].truncation_order, 5, 16)
      np.testing.assert_array_equal(batch[f"embeddings_{precision}"][:, kept], reference(doors, precision, 5))


@pytest.mark.parametrize("width", [-3, 0, 17])
def test_truncate_dim_out_of_range_is_one_line_on_every_door(doors, exported, width, tmp_path):
  match = rf"^truncate_dim must be an int in 1..16 \(the embedding width\), got {width}$"
  for call in (lambda: doors["enc"].encode(BATCH, truncate_dim=width),
               lambda: exported.encode(BATCH, truncate_dim=width, precision="int8"),
               lambda: doors["enc"].export(str(tmp_path / "export"), truncate_dim=width)):
    with pytest.raises(ValueError, match=match):
      call()
  assert not (tmp_path / "export").exists()  # refused before anything is written


def test_export_refuses_a_truncate_dim_with_nothing_to_cut(doors, tmp_path):
  for kwargs in ({}, {"corpus": BATCH}):  # the text model returns every dimension; a float32 corpus is searched whole
    with pytest.raises(ValueError, match=r"^truncate_dim cuts the binary search's corpus .* and the LiteRT files"):
      doors["enc"].export(str(tmp_path / "export"), truncate_dim=5, **kwargs)
  assert not (tmp_path / "export").exists()


@pytest.mark.parametrize("text", ['{"dim": 16,', '[1, 2]', '{"dim": 16, "int8_ranges": [[1, 2]]}',
                                  '{"dim": 2, "int8_ranges": [[1, 2], [3]]}', '{"dim": 1, "int8_ranges": [[2], [1]]}'])
def test_a_damaged_export_info_is_one_line_naming_the_file(tmp_path, text):
  (tmp_path / "text" / "1").mkdir(parents=True)
  (tmp_path / "export_info.json").write_text(text)
  with pytest.raises(errors.UserError, match="export_info.json"):
    bert_flow_tf.ExportedEncoder(str(tmp_path))


def test_bad_sentences_and_batch_sizes_are_one_line_on_the_exported_encoder(doors, exported):
  for inputs, message in ((5, "sentences must be a str or a list of str, got int"),
                          (["a man", None], "sentences must be str; item 1 is NoneType: None")):
    with pytest.raises(ValueError, match=message):
      exported.encode(inputs)
  with pytest.raises(ValueError, match="batch_size must be an integer >= 1, got -1"):
    exported.encode(BATCH, batch_size=-1)  # a negative step read no batch: [0, D] for 6 sentences
  with pytest.raises(ValueError, match="batch_size must be an integer >= 1, got 0"):
    bert_flow_tf.ExportedEncoder(doors["export"], batch_size=0)


def test_bytes_are_utf8_text_on_the_exported_encoder(exported):
  raw = [s.encode("utf-8") for s in BATCH]
  for given in (raw, np.array(raw)):  # the text, not "b'a man ...'"
    np.testing.assert_array_equal(exported.encode(given), exported.encode(BATCH))
    np.testing.assert_array_equal(exported.similarity(given, BATCH[:2]), exported.similarity(BATCH, BATCH[:2]))
  np.testing.assert_array_equal(exported.encode(raw[0]), exported.encode(BATCH[0]))
  with pytest.raises(ValueError, match=r"^sentences must be UTF-8 text; item 1 is not \(invalid start byte at byte "
                                       r"0\): b'\\xff'$"):
    exported.encode(np.array([b"a man", b"\xff"]))


def test_search_on_an_export_without_a_corpus_is_one_line(exported):
  with pytest.raises(ValueError, match=r"^this export has no corpus to search: export it with "):
    exported.search("a man")


def test_semantic_search_at_each_precision_is_the_same_from_the_exported_encoder(doors, exported):
  for precision in ("float32", "binary"):
    want = doors["enc"].semantic_search(BATCH[:3], SENTENCES, top_k=4, precision=precision, candidates=8)
    got = exported.semantic_search(BATCH[:3], SENTENCES, top_k=4, precision=precision, candidates=8)
    assert [[h["corpus_id"] for h in row] for row in got] == [[h["corpus_id"] for h in row] for row in want]
    np.testing.assert_allclose([[h["score"] for h in row] for row in got],
                               [[h["score"] for h in row] for row in want], atol=1e-5)
