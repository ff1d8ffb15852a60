"""calibration.baselines.load_baseline: a saved baseline is checked when it is loaded, not at its first use."""
import io
import os

import numpy as np
import pytest

from bert_flow_tf.calibration import baselines
from bert_flow_tf.calibration import calibrator
from bert_flow_tf.utils import errors


def _fitted(name):
  x = np.random.default_rng(0).normal(size=[20, 6])
  return baselines.make_baseline(name).fit(x)


def _write(path, **arrays):
  with open(path, "wb") as f:
    np.savez(f, **arrays)
  return str(path)


@pytest.mark.parametrize("name", ["whitening", "whitening-3", "sn", "natsv-2", "sn+natsv-2"])
def test_each_saved_baseline_loads_back_exactly(tmp_path, name):
  fitted = _fitted(name)
  fitted.save(str(tmp_path / "b.npz"))
  x = np.random.default_rng(1).normal(size=[4, 6])
  np.testing.assert_array_equal(baselines.load_baseline(str(tmp_path / "b.npz")).transform(x), fitted.transform(x))


def _state(name):
  fitted = _fitted(name)
  return dict(fitted._state(), name=np.array(name))  # pylint: disable=protected-access


@pytest.mark.parametrize("name,edit,what", [
    ("whitening", lambda s: s["kernel"].__setitem__((0, 0), np.nan), "array kernel holds NaN or inf"),
    ("sn", lambda s: s["mu"].__setitem__(2, np.inf), "array mu holds NaN or inf"),
    ("sn", lambda s: s["scale"].__setitem__(1, 0.0), "a scale <= 0"),
    ("whitening-3", lambda s: s.update(kernel=s["kernel"][:, :2]), r"array kernel is float64 \[6, 2\], expected "
                                                                    r"float \[6, 3\]"),
    ("natsv-2", lambda s: s.update(mu=s["mu"][:5]), r"array directions is float64 \[6, 2\], expected float \[5, 2\]"),
    ("sn+natsv-2", lambda s: s.pop("natsv_mu"), r"needs the arrays \['directions', 'mu', 'natsv_mu', 'scale'\]"),
    ("whitening", lambda s: s.update(mu=np.zeros([2, 3])), r"expected float \[D >= 1\]"),
    ("whitening", lambda s: s.update(kernel=s["kernel"].astype(np.int64)), r"array kernel is int64"),
    ("whitening", lambda s: s.update(name=np.array("pca")), "unknown baseline 'pca'"),
    ("whitening", lambda s: s.update(kernel=np.array([object()], dtype=object)), "Object arrays cannot be loaded"),
])
def test_a_baseline_file_with_bad_arrays_is_refused_at_load(tmp_path, name, edit, what):
  state = _state(name)
  edit(state)
  path = _write(tmp_path / calibrator.BASELINE_FILE, **state)
  for load in (lambda: baselines.load_baseline(path), lambda: calibrator.load_calibration(str(tmp_path))):
    with pytest.raises(errors.UserError, match=what) as refused:
      load()
    assert "\n" not in str(refused.value) and str(refused.value).startswith(path)


def test_a_truncated_or_foreign_file_is_one_line(tmp_path):
  buffer = io.BytesIO()
  np.savez(buffer, **_state("sn"))
  for data in (buffer.getvalue()[:200], b"not an npz at all", b""):
    path = tmp_path / "b.npz"
    path.write_bytes(data)
    with pytest.raises(errors.UserError, match="not a baseline file written by save") as refused:
      baselines.load_baseline(str(path))
    assert str(refused.value).startswith(str(path)) and "\n" not in str(refused.value)
