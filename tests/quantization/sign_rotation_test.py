"""ITQ's sign rotation: orthogonal, lower sign quantization loss than the identity, the same on every fit."""
import numpy as np

from bert_flow_tf.quantization import sign_rotation


def _principal_axes_like(rows=3000, dim=24, seed=0):
  """float32 [rows, dim]: centred Gaussian vectors whose variance falls from the first dimension to the last, as
  on a calibration's principal axes."""
  rng = np.random.default_rng(seed)
  return (rng.normal(size=[rows, dim]) * np.geomspace(3., 0.2, dim)).astype(np.float32)


def test_the_rotation_is_orthogonal_and_lowers_the_sign_loss():
  v = _principal_axes_like()
  rotation = sign_rotation.fit(v)
  assert rotation.dtype == np.float32 and rotation.shape == (24, 24)
  np.testing.assert_allclose(rotation.astype(np.float64) @ rotation.T, np.eye(24), atol=1e-5)
  identity = sign_rotation.loss(v, np.eye(24))
  fitted = sign_rotation.loss(v, rotation)
  random = sign_rotation.loss(v, sign_rotation.fit(v, iterations=0))        # its starting rotation
  assert fitted < random < identity


def test_one_fit_gives_one_rotation():
  v = _principal_axes_like()
  np.testing.assert_array_equal(sign_rotation.fit(v), sign_rotation.fit(v.copy()))
