"""The fixed cost of one `python -m bert_flow_tf.encode` process: what it spends whatever the input's size.

It runs the real command on the first `--sentences` unique STS-B sentences (default 64: one batch) `--repeats`
times and splits each run's wall time by the timestamps of its own log lines (seconds):

  import   process start -> the "strategy" line (Python and TensorFlow start, the project's imports, flags)
  load     -> the "encoding N new sentences" line (model load, tokenizer, the embedder)
  encode   -> the "wrote" line (the pipeline's and the encoder's first traces, the encoding, the write)
  exit     -> the process has ended (Python's shutdown)

It also times Python's shutdown alone after importing the entry module, with the garbage collector's usual final
collections ("collected") and after `gc.freeze()` ("frozen", what `cli.one_line_errors.run` does). Prints one
JSON object with the medians and every run.

Usage (from the repository root): python bench/startup.py [--sentences 64] [--repeats 5]
"""
import argparse
import datetime
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
# pylint: disable=wrong-import-position
from bench.encode import DATA_DIR
from bench.encode import REPO
from bench.encode import stsb_sentences

_MARKS = (("import", "strategy "), ("load", "encoding "), ("encode", "wrote "))
_EXIT_CHILD = """
import gc, sys, time
sys.argv = ["encode"]
import bert_flow_tf.encode
if {freeze}:
  gc.freeze()
print(time.time(), flush=True)
"""


def _log_time(line):
  """The wall-clock time (s since the epoch) of an absl log line `I1123 16:58:40.525601 ...`."""
  stamp = datetime.datetime.strptime(line[1:21], "%m%d %H:%M:%S.%f").replace(year=datetime.date.today().year)
  return stamp.timestamp()


def encode_phases(sentence_file, model):
  """One encode process: {phase: seconds} for the phases in the module notes."""
  with tempfile.TemporaryDirectory() as tmp:
    start = time.time()
    run = subprocess.run([sys.executable, "-m", "bert_flow_tf.encode", "--model_dir", model, "--input_file",
                          sentence_file, "--output_file", os.path.join(tmp, "out.npy")],
                         cwd=REPO, capture_output=True, text=True, check=True)
    end = time.time()
  times, previous = {}, start
  for phase, text in _MARKS:
    line = next(l for l in run.stderr.splitlines() if l.startswith("I") and f"] {text}" in l)
    stamp = _log_time(line)
    times[phase], previous = round(stamp - previous, 2), stamp
  times["exit"] = round(end - previous, 2)
  times["total"] = round(end - start, 2)
  return times


def exit_seconds(freeze):
  """Seconds from the last statement to the process's end, after importing the entry module."""
  run = subprocess.run([sys.executable, "-c", _EXIT_CHILD.format(freeze=freeze)], cwd=REPO, capture_output=True,
                       text=True, check=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
  return round(time.time() - float(run.stdout.split()[-1]), 2)


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--model", default="all-minilm-l6-v2")
  parser.add_argument("--data_dir", default=DATA_DIR)
  parser.add_argument("--sentences", type=int, default=64)
  parser.add_argument("--repeats", type=int, default=5)
  args = parser.parse_args()
  runs, collected, frozen = [], [], []
  with tempfile.TemporaryDirectory() as tmp:
    sentence_file = os.path.join(tmp, "sentences.txt")
    with open(sentence_file, "w", encoding="utf-8") as f:
      f.write("\n".join(stsb_sentences(args.data_dir)[:args.sentences]) + "\n")
    for _ in range(args.repeats):
      runs.append(encode_phases(sentence_file, args.model))
      collected.append(exit_seconds(freeze=False))
      frozen.append(exit_seconds(freeze=True))
  median = {phase: round(statistics.median(run[phase] for run in runs), 2) for phase in runs[0]}
  print(json.dumps({"sentences": args.sentences, "encode_median_s": median, "encode_runs_s": runs,
                    "exit_after_import_s": {"collected": collected, "frozen": frozen},
                    "loadavg_after": list(os.getloadavg())}))


if __name__ == "__main__":
  main()
