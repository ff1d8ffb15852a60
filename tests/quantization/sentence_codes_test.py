"""bert_flow_tf.quantization.sentence_codes: the one contract of a sentence's vector and codes (numpy only; the
doors that keep it are tests/door_matrix_test.py's)."""
import numpy as np
import pytest

from bert_flow_tf import search
from bert_flow_tf.quantization import int8_ranges
from bert_flow_tf.quantization import sentence_codes
from bert_flow_tf.quantization import st_layouts
from bert_flow_tf.quantization import truncation

RNG = np.random.default_rng(0)
CALIBRATED = RNG.normal(size=[40, 16]).astype(np.float32) * np.linspace(0.5, 2, 16, dtype=np.float32)
RANGES = int8_ranges.fit_ranges(CALIBRATED)
ORDER = np.argsort(-CALIBRATED.var(0), kind="stable").astype(np.int32)  # a saved order (a flow without axes)


@pytest.mark.parametrize("precision", ["int8", "uint8", "binary", "ubinary"])
@pytest.mark.parametrize("width", [None, 5])
def test_codes_with_fitted_ranges_depend_on_the_sentence_alone(precision, width):
  want = st_layouts.quantize_embeddings(CALIBRATED[:, truncation.kept(ORDER, width, 16)], precision,
                                        ranges=sentence_codes.kept_ranges(RANGES, ORDER, width))
  for model_normalize in (False, True):
    for normalize_embeddings in (False, True):
      returned = sentence_codes.vectors(CALIBRATED, model_normalize, width, ORDER, normalize_embeddings)
      got = sentence_codes.codes(CALIBRATED, returned, precision, width, ORDER, RANGES)
      np.testing.assert_array_equal(got, want)
      one = sentence_codes.codes(CALIBRATED[3:4], returned[3:4], precision, width, ORDER, RANGES)
      np.testing.assert_array_equal(one[0], want[3])        # alone as in the batch


def test_vectors_normalize_then_cut_then_normalize():
  got = sentence_codes.vectors(CALIBRATED, True, 5, ORDER, False)
  np.testing.assert_allclose(got, search.normalize(CALIBRATED)[:, ORDER[:5]], rtol=1e-6)
  got = sentence_codes.vectors(CALIBRATED, True, 5, ORDER, True)
  np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1, rtol=1e-5)


def test_without_fitted_ranges_it_is_sentence_transformers_own_ranges_warned_once(caplog):
  returned = sentence_codes.vectors(CALIBRATED, True, None, None, False)
  sentence_codes._warned_own_ranges.clear()  # pylint: disable=protected-access
  got = sentence_codes.codes(CALIBRATED, returned, "int8", None, None, None)
  np.testing.assert_array_equal(got, st_layouts.quantize_embeddings(returned, "int8",
                                                                    calibration_embeddings=returned))
  sentence_codes.codes(CALIBRATED, returned, "int8", None, None, None)
  assert sum("once per process" in r.getMessage() for r in caplog.records) == 1
  given = st_layouts.min_max(returned[:10])  # ranges= wins over a calibration's
  np.testing.assert_array_equal(sentence_codes.codes(CALIBRATED, returned, "int8", None, None, RANGES, given),
                                st_layouts.quantize_embeddings(returned, "int8", ranges=given))
  assert sentence_codes.codes(CALIBRATED[:0], returned[:0], "int8", None, None, None).shape == (0, 16)


@pytest.mark.parametrize("width", [-3, 0, 17, 2.5, True])
def test_truncate_dim_out_of_range_is_one_line(width):
  with pytest.raises(ValueError, match=rf"^truncate_dim must be an int in 1..16 \(the embedding width\), got "):
    sentence_codes.vectors(CALIBRATED, False, width, None, False)
