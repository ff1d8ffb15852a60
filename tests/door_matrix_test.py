"""One sentence, one vector and one set of codes through every door (bert_flow_tf/quantization/sentence_codes.py's
contract).

The tiny BERT (D = 16) with a model Normalize and a flow fitted with its principal axes and int8 ranges; doors x
precisions x {full, truncated} x {one sentence, a batch}, against one reference computed from the calibration's
parts (BERT's raw vectors -> calibration.transform -> cut -> quantize with the saved ranges). A door that runs the
reference's own computation (the batch, its saved and loaded copy) gives its codes byte for byte. One that runs
another (one sentence alone, a batch of two: the flow's kernels block by the batch's shape; the SavedModel's graph:
TF fuses the flow's ops in another order) moves a float32 by a few steps (tests/float32_steps.py): its vectors are
compared in float32 steps, its codes byte for byte except a value that close to a bucket's edge.
"""
import numpy as np
import pytest

import bert_flow_tf
from bert_flow_tf import search
from bert_flow_tf.quantization import st_layouts
from bert_flow_tf.quantization import truncation
from bert_flow_tf.serving import session_loader
from bert_flow_tf.utils import errors
from tests import float32_steps
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


def kept(doors, width):
  calibration = doors["enc"].calibration
  return truncation.kept(calibration.truncation_order, width, calibration.dim)


def cut(doors, width):
  """The calibrated vectors float32 [6, k] and the int8 ranges [2, k], cut to `width` as the doors cut them."""
  return doors["calibrated"][:, kept(doors, width)], doors["enc"].calibration.int8_ranges[:, kept(doors, width)]


def reference(doors, precision, width):
  if precision == "float32":
    return search.normalize(doors["calibrated"])[:, kept(doors, width)]
  floats, ranges = cut(doors, width)
  return st_layouts.quantize_embeddings(floats, precision, ranges=ranges)


def assert_codes_of_another_run(doors, codes, precision, width, err_msg):
  """`codes` of a door whose vectors are another computation of the reference's (float32_steps)."""
  floats, ranges = cut(doors, width)
  float32_steps.assert_codes(codes, floats[:len(codes)], precision, ranges, err_msg=err_msg)


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
        float32_steps.assert_close(value, want, err_msg=door)
      continue
    same_run = {"batch": doors["enc"].encode(BATCH, **kwargs), "loaded": fresh.encode(BATCH, **kwargs),
                "normalize_embeddings": doors["enc"].encode(BATCH, normalize_embeddings=True, **kwargs)}
    for door, value in same_run.items():
      np.testing.assert_array_equal(value, want, err_msg=f"{door} {precision} {width}")
    other_run = {"alone": each_alone(fresh, **kwargs), "batch of two": doors["enc"].encode(BATCH[:2], **kwargs)}
    for door, value in other_run.items():
      assert_codes_of_another_run(doors, value, precision, width, f"{door} {precision} {width}")


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
        float32_steps.assert_close(got, want, err_msg=door)
      else:
        assert_codes_of_another_run(doors, got, precision, width, f"{door} {precision} {width}")


def test_the_text_model_through_tf_servings_v1_loader(doors):
  session = session_loader.SessionModel(doors["text"])
  try:
    batch = session.run("serving_default", {"sentences": BATCH})
    alone = [session.run("serving_default", {"sentences": [s]}) for s in BATCH]
  finally:
    session.close()
  float32_steps.assert_close(batch["embeddings"], doors["calibrated"])  # unnormalized: the flow's z reaches ~40
  for precision in PRECISIONS:
    codes = batch[f"embeddings_{precision}"]
    assert_codes_of_another_run(doors, codes, precision, None, precision)
    alone_codes = np.concatenate([a[f"embeddings_{precision}"] for a in alone])
    assert_codes_of_another_run(doors, alone_codes, precision, None, f"alone {precision}")
    if precision in ("int8", "uint8"):  # a cut of the codes is the truncated codes of the same vectors
      five = kept(doors, 5)
      np.testing.assert_array_equal(codes[:, five], st_layouts.quantize_embeddings(
          batch["embeddings"][:, five], precision, ranges=cut(doors, 5)[1]), err_msg=precision)


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
