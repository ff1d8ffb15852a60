"""quantize_embeddings: sentence-transformers' layouts, checked against bytes worked out by hand."""
import numpy as np
import pytest

from bert_flow_tf.quantization import st_layouts

# Two rows, width 9 (the bits of row 0 spill into a second byte).
X = np.array([[0.5, -1.0, 2.0, 0.0, 3.0, -0.1, 0.2, 1.0, 4.0],
              [-0.5, 1.0, -2.0, 1.0, 1.0, 0.1, -0.2, 3.0, -4.0]], np.float32)


def test_ubinary_and_binary_pack_each_row_high_bit_first():
  # Row 0: x > 0 -> 1 0 1 0 1 0 1 1 | 1 -> 0b10101011 = 171, 0b10000000 = 128.
  # Row 1: 0 1 0 1 1 1 0 1 | 0 -> 0b01011101 = 93, 0.
  ubinary = st_layouts.quantize_embeddings(X, "ubinary")
  assert ubinary.dtype == np.uint8 and ubinary.tolist() == [[171, 128], [93, 0]]
  binary = st_layouts.quantize_embeddings(X, "binary")
  assert binary.dtype == np.int8 and binary.tolist() == [[43, 0], [-35, -128]]


def test_uint8_and_int8_use_256_buckets_between_each_dimensions_min_and_max():
  x = np.array([[0.0, -1.0], [1.0, 1.0], [0.5, 0.0]], np.float32)
  # Dim 0: min 0, step 1/255: 0 -> 0, 0.5 -> 127.5 -> 127, and the max 1 -> 254.99998 in float32 (ST's arithmetic,
  # in the inputs' dtype) -> 254. Dim 1: min -1, step 2/255: 0 -> 127, 1 -> 254.
  uint8 = st_layouts.quantize_embeddings(x, "uint8")
  assert uint8.dtype == np.uint8 and uint8.tolist() == [[0, 0], [254, 254], [127, 127]]
  int8 = st_layouts.quantize_embeddings(x, "int8")
  # int8 is the uint8 bucket - 128, as sentence-transformers 6 (clip(floor((x - min) / step), 0, 255) - 128).
  assert int8.dtype == np.int8 and int8.tolist() == [[-128, -128], [126, 126], [-1, -1]]
  exact = st_layouts.quantize_embeddings(x.astype(np.float64), "uint8")  # float64: the max lands on 255
  assert exact.tolist() == [[0, 0], [255, 255], [127, 127]]


def test_ranges_come_from_the_argument_then_the_calibration_set_and_clip_outside():
  x = np.array([[0.25, 2.0], [-3.0, 0.5]], np.float32)
  ranges = np.array([[0.0, 0.0], [1.0, 1.0]], np.float32)
  # 0.25 / (1 / 255) = 63.75 -> 63; 2.0 and -3.0 lie outside [0, 1]: clipped to 255 and 0; 0.5 -> 127.
  assert st_layouts.quantize_embeddings(x, "uint8", ranges=ranges).tolist() == [[63, 255], [0, 127]]
  calibration = np.array([[0.0, 0.0], [1.0, 1.0], [0.3, 0.7]], np.float32)
  assert st_layouts.quantize_embeddings(x, "uint8", calibration_embeddings=calibration).tolist() == \
      [[63, 255], [0, 127]]


def test_float32_a_constant_dimension_and_refusals():
  out = st_layouts.quantize_embeddings(X.astype(np.float64), "float32")
  assert out.dtype == np.float32 and out.shape == X.shape
  constant = np.array([[1.0, 0.0], [1.0, 1.0]], np.float32)
  assert st_layouts.quantize_embeddings(constant, "uint8").tolist() == [[0, 0], [0, 254]]
  with pytest.raises(ValueError, match="precision 'int4' is not supported; use one of float32, int8"):
    st_layouts.quantize_embeddings(X, "int4")
  with pytest.raises(ValueError, match="must be float, got int8"):
    st_layouts.quantize_embeddings(X.astype(np.int8), "binary")
  with pytest.raises(ValueError, match=r"ranges must be \[2, 9\]"):
    st_layouts.quantize_embeddings(X, "int8", ranges=np.zeros([2, 3]))
