"""tests/float32_steps.py: a few float32 steps pass, anything a real bug makes fails."""
import numpy as np
import pytest

from bert_flow_tf.quantization import st_layouts
from tests import float32_steps

RANGES = np.array([[-40.] * 3, [40.] * 3], np.float32)  # 255 buckets of 80/255 ~ 0.31


def _steps(x, n):
  return np.float32(x) + np.float32(n) * np.spacing(np.float32(40.))


def test_vectors_pass_within_the_steps_of_their_largest_magnitude():
  want = np.array([[-37.530636, 0.0199095, 3.]], np.float32)
  got = want.copy()
  got[0, 0] = np.nextafter(want[0, 0], np.float32(0.))  # one step at 37.5: 3.8e-6, past an atol of 1e-6
  got[0, 1] += np.float32(30 * np.spacing(np.float32(0.0199095)))  # a small element moves by the large one's steps
  float32_steps.assert_close(got, want)
  with pytest.raises(AssertionError):
    float32_steps.assert_close(want + np.float32(1e-3), want)
  with pytest.raises(AssertionError):
    float32_steps.assert_close(got, want, steps=0)


@pytest.mark.parametrize("precision", ["int8", "uint8"])
def test_a_value_on_a_bucket_edge_may_take_either_code_and_no_other(precision):
  step = np.float32(80. / 255.)
  edge = np.float32(-40.) + 100 * step  # bucket 100's lower edge
  floats = np.array([[edge, 1.5, -20.]], np.float32)
  for nudged in (_steps(edge, -1), _steps(edge, 1)):  # another run's value lands in bucket 99 or 100
    moved = floats.copy()
    moved[0, 0] = nudged
    float32_steps.assert_codes(st_layouts.quantize_embeddings(moved, precision, ranges=RANGES), floats, precision,
                               RANGES)
  codes = st_layouts.quantize_embeddings(floats, precision, ranges=RANGES)
  for column in (1, 2):  # a value far from an edge keeps its code
    wrong = codes.copy()
    wrong[0, column] += 1
    with pytest.raises(AssertionError):
      float32_steps.assert_codes(wrong, floats, precision, RANGES)


@pytest.mark.parametrize("precision", ["binary", "ubinary"])
def test_a_sign_bit_may_flip_only_next_to_zero(precision):
  floats = np.array([[np.spacing(np.float32(40.)), 2., -3., 40.] + [-1.] * 5], np.float32)  # 9 bits: 2 bytes
  flipped = floats.copy()
  flipped[0, 0] = -flipped[0, 0]
  float32_steps.assert_codes(st_layouts.quantize_embeddings(flipped, precision), floats, precision)
  for column in (1, 8):  # a sign well away from 0, in the first and in the second byte
    wrong = floats.copy()
    wrong[0, column] = -wrong[0, column]
    with pytest.raises(AssertionError):
      float32_steps.assert_codes(st_layouts.quantize_embeddings(wrong, precision), floats, precision)
