"""calibration.calibrator: every baseline as the affine map the SavedModels chain; save/load of a baseline."""
import numpy as np
import pytest

from bert_flow_tf.calibration import calibrator


@pytest.mark.parametrize("method", ["whitening", "whitening-3", "sn", "natsv-2", "sn+natsv-2"])
def test_baselines_are_the_affine_maps_they_export(method, tmp_path):
  rng = np.random.default_rng(0)
  x = rng.normal(size=[40, 8]) @ rng.normal(size=[8, 8]) + 5.0   # anisotropic, off-center
  fitted = calibrator.fit(method, x)
  center, kernel, offset = fitted.affine()
  assert kernel.shape == (8, fitted.dim) and fitted.input_dim == 8
  new = rng.normal(size=[6, 8]) * 3.0
  np.testing.assert_allclose((new - center) @ kernel + offset, fitted.baseline.transform(new), atol=1e-9)
  fitted.save(str(tmp_path / "c"))
  loaded = calibrator.load_calibration(str(tmp_path / "c"))
  assert loaded.method == method
  np.testing.assert_array_equal(loaded.transform(new), fitted.transform(new))


def test_unknown_method_lists_the_allowed_ones():
  with pytest.raises(ValueError, match=r"unknown calibration method 'pca'; allowed: \"flow\", \"whitening\""):
    calibrator.fit("pca", np.zeros([4, 2]))
  with pytest.raises(ValueError, match=r"sentence vectors \[N >= 2, D\], got shape \(1, 2\)"):
    calibrator.fit("whitening", np.zeros([1, 2]))
