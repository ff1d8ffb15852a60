"""Runs one entry point on many command lines in one process, so that TensorFlow's import is paid once.

  python tests/entry_driver.py CASES_JSON RESULTS_JSON

CASES_JSON holds {"script": "encode" | "run_flow" | "run_siamese" | "beam", "cases": {name: {"args": [str],
"cwd": str}}}.
Each case runs as the script's `__main__` block runs it: the command's `run()` with sys.argv set, the flags
reset to their defaults first, and file descriptors 1 and 2 sent to files of its own (so absl's log lines and
TensorFlow's native output are captured as a real process's would be). An exception that escapes is written to
that stderr as the interpreter would write it, with exit status 1. RESULTS_JSON gets
{name: {"returncode": int, "stdout": str, "stderr": str}}, in the order of the cases.

What this does not show, a real process does: tests/error_matrix_test.py runs one case per script both ways and
checks that they agree.
"""
import importlib
import json
import os
import runpy
import sys
import tempfile
import traceback

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENTRY_POINTS = {"encode": "bert_flow_tf.encode", "run_flow": os.path.join(REPO, "run_flow.py"),
                "run_siamese": os.path.join(REPO, "run_siamese.py"), "beam": "bert_flow_tf.cli.beam"}


def _load_run(script):
  """The `run` an entry point's `__main__` block calls, its flags defined (imported once, not run as __main__)."""
  where = ENTRY_POINTS[script]
  if where.endswith(".py"):
    return runpy.run_path(where, run_name=f"entry_{script}")["run"], where
  return importlib.import_module(where).run, where


def _run_case(run, argv0, args, cwd):
  """(returncode, stdout, stderr) of one command line."""
  from absl import app  # pylint: disable=g-import-not-at-top
  from absl import flags
  flags.FLAGS.unparse_flags()
  app._register_and_parse_flags_with_usage.done = False  # pylint: disable=protected-access  (app.run once per case)
  sys.argv = [argv0] + list(args)
  saved = os.getcwd(), os.dup(1), os.dup(2)
  with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(out.fileno(), 1)
    os.dup2(err.fileno(), 2)
    os.chdir(cwd)
    try:
      run()
      code = 0
    except SystemExit as e:
      code = 0 if e.code is None else e.code if isinstance(e.code, int) else 1
    except Exception:  # pylint: disable=broad-except  (what the interpreter prints for an uncaught exception)
      traceback.print_exc()
      code = 1
    finally:
      sys.stdout.flush()
      sys.stderr.flush()
      os.chdir(saved[0])
      os.dup2(saved[1], 1)
      os.dup2(saved[2], 2)
    out.seek(0)
    err.seek(0)
    return code, out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace")


def main():
  cases_file, results_file = sys.argv[1:]
  with open(cases_file, encoding="utf-8") as f:
    spec = json.load(f)
  run, argv0 = _load_run(spec["script"])
  results = {}
  for name, case in spec["cases"].items():
    code, out, err = _run_case(run, argv0, case["args"], case["cwd"])
    results[name] = {"returncode": code, "stdout": out, "stderr": err}
  with open(results_file, "w", encoding="utf-8") as f:
    json.dump(results, f)


if __name__ == "__main__":
  main()
