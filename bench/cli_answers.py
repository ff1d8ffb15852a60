"""How fast each command answers `--help`, `--helpfull` and a bad flag: whole processes, wall time (seconds).

The commands read their flags before importing TensorFlow, so these answers cost Python's start, absl and the
flag modules. As the reference in the same run, `python -c "import tensorflow"`: what each answer cost when the
commands imported TensorFlow first. Each case runs `--repeats` times, one after the other; prints one JSON object
with the median of each, its ratio to the reference, the load average before and after, and every run.

Usage (from the repository root): python bench/cli_answers.py [--repeats 5]
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
COMMANDS = {"run_flow": ["run_flow.py"], "run_siamese": ["run_siamese.py"],
            "encode": ["-m", "bert_flow_tf.encode"], "beam": ["-m", "bert_flow_tf.beam"]}
# (case, arguments, exit status): a bad value of a flag every command has, and the two help pages.
CASES = (("--help", ["--help"], 0), ("--helpfull", ["--helpfull"], 0), ("bad flag", ["--max_seq_length=1"], 1))


def seconds(argv, status):
  """Wall time of one process `python argv` run in the repository root; checks its exit status."""
  start = time.perf_counter()
  run = subprocess.run([sys.executable, *argv], cwd=REPO, capture_output=True, text=True, check=False)
  took = time.perf_counter() - start
  if run.returncode != status:
    raise SystemExit(f"{argv}: exit status {run.returncode}, expected {status}: {run.stderr[-500:]}")
  return took


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--repeats", type=int, default=5)
  args = parser.parse_args()
  load_before = os.getloadavg()
  runs = {"import tensorflow": [seconds(["-c", "import tensorflow"], 0) for _ in range(args.repeats)]}
  for command, argv in COMMANDS.items():
    for case, extra, status in CASES:
      runs[f"{command} {case}"] = [seconds(argv + extra, status) for _ in range(args.repeats)]
  reference = statistics.median(runs["import tensorflow"])
  print(json.dumps({
      "median_s": {name: round(statistics.median(times), 3) for name, times in runs.items()},
      "ratio_to_import_tensorflow": {name: round(statistics.median(times) / reference, 3)
                                     for name, times in runs.items()},
      "slowest_answer_s": round(max(max(t) for name, t in runs.items() if name != "import tensorflow"), 3),
      "loadavg_before": [round(x, 2) for x in load_before], "loadavg_after": [round(x, 2) for x in os.getloadavg()],
      "runs_s": {name: [round(t, 3) for t in times] for name, times in runs.items()},
  }, indent=1))


if __name__ == "__main__":
  main()
