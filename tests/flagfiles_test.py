"""Every flagfile in flags/ parses with the flags of the script it is for (misspelt flags fail here)."""
import glob
import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Parses each flagfile given, from fresh flags, in one process (the script's import, TensorFlow's, is paid once);
# prints {path: null, or the parse error} as JSON.
_PARSE_ALL = """
import json
import sys

sys.path.insert(0, {repo!r})
from absl import flags
import {module} as script
errors = {{}}
for path in sys.argv[1:]:
  script.FLAGS.unparse_flags()
  try:
    script.FLAGS(["script", "--flagfile=" + path])
    errors[path] = None
  except flags.Error as e:
    errors[path] = f"{{type(e).__name__}}: {{e}}"
print(json.dumps(errors))
"""


def _flagfiles():
  paths = sorted(glob.glob(os.path.join(REPO, "flags", "*.cfg")))
  includes = [p for p in paths if p.endswith("_paths.cfg")]
  siamese = [p for p in paths if p.endswith("_siamese.cfg")]
  flow = [p for p in paths if p not in includes and p not in siamese]
  return flow, siamese


def _parse(module, paths):
  """{path: None, or the error parsing it} from one process that imports `module` and parses each path."""
  code = _PARSE_ALL.format(repo=REPO, module=module)
  result = subprocess.run([sys.executable, "-c", code] + paths, capture_output=True, text=True, cwd=REPO,
                          timeout=300)
  assert result.returncode == 0, result.stderr[-2000:]
  errors = json.loads(result.stdout.strip().splitlines()[-1])
  assert sorted(errors) == sorted(paths)
  return errors


@pytest.fixture(scope="module")
def run_flow_parsed(tmp_path_factory):
  """(errors, the misspelt flagfile): run_flow.py's flagfiles and one with a misspelt flag, parsed in one process."""
  bad = tmp_path_factory.mktemp("flagfiles") / "bad.cfg"
  bad.write_text("--flagfile=flags/minilm_paths.cfg\n--sentence_embeding_type=avg\n")
  flow, _ = _flagfiles()
  return _parse("bert_flow_tf.cli.run_flow", flow + [str(bad)]), str(bad)


@pytest.mark.slow
def test_run_flow_flagfiles_parse(run_flow_parsed):
  errors, bad = run_flow_parsed
  flow, _ = _flagfiles()
  assert any(p.endswith("minilm_stsb_flow_target.cfg") for p in flow)
  assert {p: errors[p] for p in flow} == {p: None for p in flow}


@pytest.mark.slow  # a process importing TensorFlow
def test_run_siamese_flagfiles_parse():
  _, siamese = _flagfiles()
  assert any(p.endswith("minilm_snli_siamese.cfg") for p in siamese)
  errors = _parse("bert_flow_tf.cli.run_siamese", siamese)
  assert errors == {p: None for p in siamese}


@pytest.mark.slow
def test_a_misspelt_flag_in_a_flagfile_fails(run_flow_parsed):
  errors, bad = run_flow_parsed
  assert errors[bad] is not None and "sentence_embeding_type" in errors[bad], errors[bad]
