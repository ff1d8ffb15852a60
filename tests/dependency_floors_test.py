"""The declared dependency floors (pyproject.toml, requirements.txt): each holds what the code needs, and this
environment meets them."""
import importlib.metadata
import pathlib
import re
import tomllib

import numpy as np
from packaging.requirements import Requirement

REPO = pathlib.Path(__file__).resolve().parents[1]
# name -> (the lowest version the code runs on, a version below it, what needs it)
NEEDED = {"numpy": ("2.0.0", "1.26.4", "np.bitwise_count, the binary search's popcount (hamming_search.hamming)")}


def tf220_pins():
  """The TensorFlow-family pins that scripts/tf220_venv.sh puts in place of requirements.txt's: [str]."""
  script = (REPO / "scripts" / "tf220_venv.sh").read_text(encoding="utf-8")
  return re.search(r"^TF_PINS=\((.*)\)$", script, re.M).group(1).split()


def groups():
  """{group: [Requirement]}: pyproject.toml's dependencies and each extra, and requirements.txt's lines (with the
  TF 2.20 venv's TensorFlow-family pins in place of its own when this is that venv)."""
  project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
  lines = [line.split("#")[0].strip() for line in (REPO / "requirements.txt").read_text(encoding="utf-8").splitlines()]
  pinned = [line for line in lines if line]
  swapped = {Requirement(pin).name: pin for pin in tf220_pins()}
  if f"tensorflow=={installed('tensorflow')}" == swapped["tensorflow"]:
    pinned = [swapped.get(Requirement(line).name, line) for line in pinned]
  out = {"dependencies": project["dependencies"], "requirements.txt": pinned, **project["optional-dependencies"]}
  return {group: [Requirement(line) for line in lines] for group, lines in out.items()}


def declared():
  return [r for requirements in groups().values() for r in requirements]


def installed(name):
  try:
    return importlib.metadata.version(name)
  except importlib.metadata.PackageNotFoundError:
    return None


def test_the_floors_hold_what_the_code_needs():
  assert hasattr(np, "bitwise_count")
  for name, (floor, below, why) in NEEDED.items():
    specs = [r.specifier for r in declared() if r.name == name and r.specifier and
             any(s.operator in (">=", "==", "~=") for s in r.specifier)]
    assert specs, f"{name} has no declared floor; it needs {floor} for {why}"
    for spec in specs:
      assert floor in spec and below not in spec, f"{name}{spec} admits {below}; {why} needs {floor}"


def test_this_environment_meets_every_declared_floor():
  for group, requirements in groups().items():
    if any(installed(r.name) is None for r in requirements):
      continue  # an extra not installed here (beam: its own environment, requirements-beam.txt)
    for r in requirements:
      assert r.specifier.contains(installed(r.name), prereleases=True), f"{group}: {r}, installed {installed(r.name)}"
