"""Executes the notebooks in notebooks/ on CPU with nbclient: each cell except the ones tagged `install`.

colab_gpu runs in full. The others differ from it only in their install cells and their accelerator probe (the
cell that sets ACCEL_FLAGS, all the later cells read of it): the test checks that, runs such a notebook up to and
with its probe, and checks the probe leaves ACCEL_FLAGS as colab_gpu's does (none on CPU); the identical cells
after it would run as colab_gpu's did. The `install` cells (git clone, pip install) are the only ones left out,
and the test checks that they hold nothing else. A cell injected after the `parameters` cell points the notebook
at a tiny random BERT (an HF directory written by tests/tiny_runs.py), the first 16 rows of each STS-B split, a
loopback server holding the real data files (tests/data_server.py; scripts/get_data.py downloads from it), and a
temporary EXP_DIR. The accelerator check finds no TPU/GPU here, so the runs take the default strategy, as they
would on a CPU runtime.
"""
import json
import pathlib

import nbclient
import nbformat
import pytest

from tests import data_server
from tests import tiny_runs

REPO = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(p.stem for p in (REPO / "notebooks").glob("*.ipynb"))
INSTALL_LINE = ("!pip install ", "!git clone ", "%cd ")
FULL_RUN = "colab_gpu"
PROBE = "ACCEL_FLAGS = "   # in the one cell that differs between the notebooks beyond the install cells


def test_the_notebooks():
  assert NOTEBOOKS == ["colab_gpu", "colab_tpu"]


def _tags(cell):
  return cell.metadata.get("tags", [])


def _code(nb):
  """The sources of the code cells that run here (all but the install cells)."""
  return [c.source for c in nb.cells if c.cell_type == "code" and "install" not in _tags(c)]


def _probe_index(nb, name):
  """The position among `_code(nb)` of the accelerator probe; other notebooks than FULL_RUN differ from it there
  only."""
  code = _code(nb)
  probes = [i for i, source in enumerate(code) if PROBE in source]
  assert len(probes) == 1, f"{name}: {len(probes)} cells set ACCEL_FLAGS"
  if name != FULL_RUN:
    full = _code(nbformat.read(REPO / "notebooks" / f"{FULL_RUN}.ipynb", as_version=4))
    differ = [i for i in range(max(len(code), len(full))) if i >= min(len(code), len(full)) or code[i] != full[i]]
    assert differ == probes, (f"{name}: code cells {differ} differ from {FULL_RUN}'s, not only its probe "
                              f"{probes}: run it in full here")
  return probes[0]


@pytest.mark.slow
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs_on_cpu(name, tmp_path, data_dir):
  nb = nbformat.read(REPO / "notebooks" / f"{name}.ipynb", as_version=4)
  nbformat.validate(nb)
  install = [c for c in nb.cells if "install" in _tags(c)]
  assert install, "no install cells: the notebook would clone and pip install nowhere"
  for cell in install:  # honest skipping: an install cell holds only clone/pip/cd lines
    for line in cell.source.splitlines():
      assert line.startswith(INSTALL_LINE), f"{name}: a line other than clone/pip/cd in an install cell: {line}"
  params = [i for i, c in enumerate(nb.cells) if "parameters" in _tags(c)]
  assert len(params) == 1, f"{name}: {len(params)} cells tagged parameters"
  model_dir = tiny_runs.tiny_model_dir(tmp_path / "tiny")
  flow_config = tiny_runs.tiny_flow_config(tmp_path / "tiny_flow.json")
  exp_dir = tmp_path / "exp"
  with data_server.DataServer(data_server.routes_from(data_dir)) as server:
    overrides = nbformat.v4.new_code_cell("\n".join([
        f"DATA_BASE_URL = {server.url!r}",
        f"DATA_ROOT = {str(tmp_path / 'data')!r}",
        "QUICK_TRY_ROWS = 16",
        f"EXP_DIR = {str(exp_dir)!r}",
        f"EXTRA_FLAGS = ['--model_dir={model_dir}', '--flow_model_config={flow_config}', '--max_seq_length=16', "
        "'--train_batch_size=8']",
    ]))
    probe = _probe_index(nb, name)
    cells = [c for c in nb.cells if "install" not in _tags(c)]
    at = cells.index(nb.cells[params[0]]) + 1
    after_probe = cells.index([c for c in cells if c.cell_type == "code"][probe]) + 1
    shown_flags = nbformat.v4.new_code_cell('print("ACCEL_FLAGS:", repr(ACCEL_FLAGS))')
    tail = cells[after_probe:] if name == FULL_RUN else []
    nb.cells = cells[:at] + [overrides] + cells[at:after_probe] + [shown_flags] + tail
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(REPO)}})
    client.execute()
    nbformat.write(nb, tmp_path / f"{name}.executed.ipynb")  # to read when a later assertion fails
    requests = len(server.requests)
  text = "\n".join(out.get("text", "") for c in nb.cells if c.cell_type == "code" for out in c.get("outputs", []))
  assert {"colab_tpu": "No TPU here: ", "colab_gpu": "GPUs: 0; accelerator flags: none (default strategy, CPU)"}[name] \
      in text
  assert "ACCEL_FLAGS: []\n" in text   # what the cells after the probe read of it, in every notebook
  if name != FULL_RUN:
    return
  assert requests == 5  # the five stsbenchmark files, each from its first source
  assert (tmp_path / "data" / "stsbenchmark" / "sts-train.csv").stat().st_size == 901177
  for exp in ("minilm_stsb_flow_target", "minilm_stsb_flow_target_faithful"):
    results = json.loads((exp_dir / exp / "results.json").read_text())
    assert {r["method"] for r in results["results"]} >= {"none", "flow"}, results["results"]
  assert (exp_dir / "export" / "text" / "1" / "saved_model.pb").is_file()
  assert (tmp_path / "bert_flow_exp.zip").is_file()
  shown = [out for c in nb.cells for out in c.get("outputs", []) if out.get("output_type") == "display_data"]
  assert len(shown) == 2 and all("text/markdown" in out["data"] for out in shown)
