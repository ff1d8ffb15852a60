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


def test_fit_baselines_equals_fits_one_by_one_and_decomposes_each_family_once(monkeypatch):
  from bert_flow_tf.calibration import decompositions  # pylint: disable=import-outside-toplevel
  calls = []
  for name in ("moments_svd", "scatter_eigenvectors"):
    real = getattr(decompositions, name)
    monkeypatch.setattr(decompositions, name, lambda *a, _real=real, _name=name: calls.append(_name) or _real(*a))
  rng = np.random.default_rng(1)
  x = (rng.normal(size=[60, 8]) @ rng.normal(size=[8, 8]) + 2.0).astype(np.float32)
  methods = ["whitening", "whitening-3", "sn", "natsv-1", "natsv-4", "sn+natsv-1", "sn+natsv-3"]
  together = calibrator.fit_baselines(methods, x)
  # whitening(-k): one SVD; natsv-k: one eigendecomposition; sn+natsv-k: one of the SN output
  assert sorted(calls) == ["moments_svd", "scatter_eigenvectors", "scatter_eigenvectors"]
  new = rng.normal(size=[5, 8])
  for method, got in zip(methods, together):
    want = calibrator.fit(method, x)
    assert got.method == method
    np.testing.assert_array_equal(got.transform(new, np.float64), want.transform(new, np.float64), err_msg=method)
    np.testing.assert_array_equal(got.int8_ranges, want.int8_ranges, err_msg=method)
