"""Whitening, SN and NATSV on random anisotropic data; the name factory; save/load."""
import numpy as np
import pytest

from bert_flow_tf.calibration import baselines


def _anisotropic(n=3000, d=8, seed=0):
  rng = np.random.default_rng(seed)
  mix = rng.normal(size=(d, d)) * np.logspace(0, 2, d)[None, :]
  return rng.normal(size=(n, d)) @ mix + 5.


def test_whitening_gives_identity_covariance():
  x = _anisotropic()
  y = baselines.Whitening().fit(x).transform(x)
  np.testing.assert_allclose(y.mean(axis=0), 0., atol=1e-9)
  np.testing.assert_allclose(np.cov(y, rowvar=False), np.eye(8), atol=1e-8)


def test_whitening_k_keeps_top_directions():
  x = _anisotropic()
  w = baselines.make_baseline("whitening-3").fit(x)
  y = w.transform(x[:10])
  assert y.shape == (10, 3) and w.name == "whitening-3"
  full = baselines.Whitening().fit(x).transform(x[:10])
  np.testing.assert_allclose(np.abs(y), np.abs(full[:, :3]), atol=1e-9)


def test_whitening_on_fewer_vectors_than_dimensions_warns_unless_k_fits(caplog):
  x = _anisotropic(n=6)
  for name, warned in (("whitening", True), ("whitening-6", True), ("whitening-5", False)):
    caplog.clear()
    baselines.make_baseline(name).fit(x)
    assert ("fitted on 6 vectors of width 8: their covariance has rank < 6" in caplog.text) == warned, name
  caplog.clear()
  baselines.Whitening().fit(_anisotropic(n=9))
  assert not caplog.text


def test_sn_constant_column_stays_finite():
  x = _anisotropic()
  x[:, 2] = 0.7
  y = baselines.StandardNormalization().fit(x).transform(x)
  assert np.isfinite(y).all()
  np.testing.assert_allclose(y[:, 2], 0., atol=1e-6)  # mean rounding error / sqrt(EPS)
  np.testing.assert_allclose(y[:, [0, 1, 3]].std(axis=0), 1., atol=1e-6)
  assert np.isfinite(baselines.Whitening().fit(x).transform(x)).all()


def test_natsv_removes_top_directions():
  x = _anisotropic()
  natsv = baselines.Natsv(2).fit(x)
  y = natsv.transform(x)
  centered = x - x.mean(axis=0)
  top = np.linalg.svd(centered, full_matrices=False)[2][:2]  # [2, D]
  np.testing.assert_allclose(y @ top.T, 0., atol=1e-8)
  third = np.linalg.svd(centered, full_matrices=False)[2][2]
  np.testing.assert_allclose(y @ third, centered @ third, atol=1e-8)


def test_sn_natsv_is_sn_then_natsv():
  x = _anisotropic()
  combo = baselines.make_baseline("sn+natsv-2").fit(x).transform(x)
  sn = baselines.StandardNormalization().fit(x).transform(x)
  np.testing.assert_allclose(combo, baselines.Natsv(2).fit(sn).transform(sn), atol=1e-10)


@pytest.mark.parametrize("name", ["whitening", "whitening-4", "sn", "natsv-3", "sn+natsv-3"])
def test_save_load_round_trip(tmp_path, name):
  x = _anisotropic()
  fitted = baselines.make_baseline(name).fit(x)
  path = tmp_path / "calib.npz"
  fitted.save(str(path))
  restored = baselines.load_baseline(str(path))
  assert restored.name == name and type(restored) is type(fitted)
  np.testing.assert_array_equal(restored.transform(x[:5]), fitted.transform(x[:5]))
  assert sorted(p.name for p in tmp_path.iterdir()) == ["calib.npz"]


def test_bad_names_and_misuse():
  for bad in ("natsv", "whitening-0", "pca-3", "sn+whitening-2"):
    with pytest.raises(ValueError, match="allowed forms"):
      baselines.make_baseline(bad)
  with pytest.raises(ValueError, match="before fit"):
    baselines.Natsv(1).transform(np.zeros((2, 3)))
  with pytest.raises(ValueError, match="fitted on D=8"):
    baselines.Whitening().fit(_anisotropic()).transform(np.zeros((2, 3)))
  assert baselines.StandardNormalization().name == "sn"
