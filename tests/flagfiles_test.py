"""Every flagfile in flags/ parses with the flags of the script it is for (misspelt flags fail here)."""
import glob
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_PARSE_ALL = """
import sys

import pytest
sys.path.insert(0, {repo!r})
import {module} as script
for path in sys.argv[1:]:
  script.FLAGS.unparse_flags()
  script.FLAGS(["script", "--flagfile=" + path])
print("parsed", len(sys.argv) - 1)
"""


def _flagfiles():
  paths = sorted(glob.glob(os.path.join(REPO, "flags", "*.cfg")))
  includes = [p for p in paths if p.endswith("_paths.cfg")]
  siamese = [p for p in paths if p.endswith("_siamese.cfg")]
  flow = [p for p in paths if p not in includes and p not in siamese]
  return flow, siamese


def _parse(module, paths):
  code = _PARSE_ALL.format(repo=REPO, module=module)
  result = subprocess.run([sys.executable, "-c", code] + paths, capture_output=True, text=True, cwd=REPO,
                          timeout=300)
  assert result.returncode == 0, result.stderr[-2000:]
  assert f"parsed {len(paths)}" in result.stdout


@pytest.mark.slow
def test_run_flow_flagfiles_parse():
  flow, _ = _flagfiles()
  assert any(p.endswith("minilm_stsb_flow_target.cfg") for p in flow)
  _parse("bert_flow_tf.cli.run_flow", flow)


def test_run_siamese_flagfiles_parse():
  _, siamese = _flagfiles()
  assert any(p.endswith("minilm_snli_siamese.cfg") for p in siamese)
  _parse("bert_flow_tf.cli.run_siamese", siamese)


@pytest.mark.slow
def test_a_misspelt_flag_in_a_flagfile_fails(tmp_path):
  bad = tmp_path / "bad.cfg"
  bad.write_text("--flagfile=flags/minilm_paths.cfg\n--sentence_embeding_type=avg\n")
  code = _PARSE_ALL.format(repo=REPO, module="bert_flow_tf.cli.run_flow")
  result = subprocess.run([sys.executable, "-c", code, str(bad)], capture_output=True, text=True, cwd=REPO,
                          timeout=300)
  assert result.returncode != 0 and "sentence_embeding_type" in result.stderr
