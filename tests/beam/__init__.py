"""Tests of the Apache Beam pipeline (an optional extra: requirements-beam.txt, `BEAM=1 bash scripts/setup.sh`)."""
import importlib.util

import pytest

from tests.conftest import in_ci


def require_apache_beam():
  """Skips the calling test module when apache_beam is not installed; in CI, where .ci/run installs it, fails."""
  if importlib.util.find_spec("apache_beam") is None:
    message = "apache_beam is not installed (pip install -r requirements-beam.txt)"
    if in_ci():
      pytest.fail(message)
    pytest.skip(message, allow_module_level=True)
