"""One export by one process, for the tests that run exporters at once or kill one (the process is what is tested).

  python -m tests.serving.export_writer MODEL_DIR EXPORT_DIR MAX_SEQ_LENGTH CORPUS_SIZE [--after=GLOB] [--overwrite]

Loads the HF model at MODEL_DIR uncalibrated (last-avg, MAX_SEQ_LENGTH), waits, with --after, until a path below
EXPORT_DIR's parent matches GLOB (pathlib's rglob), then runs SentenceEncoder.export, with a corpus of CORPUS_SIZE
sentences "<MAX_SEQ_LENGTH> <i>" when it is not 0. A refusal ends in its one line on stderr and exit status 1.
"""
import argparse
import pathlib
import sys
import time

from bert_flow_tf.utils import errors


def corpus(max_seq_length, size):
  """The corpus a writer of `max_seq_length` exports: list of `size` str."""
  return [f"{max_seq_length} {i}" for i in range(size)]


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("model_dir")
  parser.add_argument("export_dir")
  parser.add_argument("max_seq_length", type=int)
  parser.add_argument("corpus_size", type=int)
  parser.add_argument("--after")
  parser.add_argument("--overwrite", action="store_true")
  args = parser.parse_args()
  import bert_flow_tf  # pylint: disable=import-outside-toplevel
  enc = bert_flow_tf.SentenceEncoder.from_pretrained(args.model_dir, pooling="last-avg",
                                                     max_seq_length=args.max_seq_length)
  deadline = time.monotonic() + 300
  while args.after and not any(pathlib.Path(args.export_dir).parent.rglob(args.after)):
    if time.monotonic() > deadline:
      sys.exit(f"nothing matched {args.after} in 300 s")
    time.sleep(0.01)
  try:
    enc.export(args.export_dir, overwrite=args.overwrite,
               corpus=corpus(args.max_seq_length, args.corpus_size) if args.corpus_size else None)
  except errors.UserError as e:
    sys.exit(errors.one_line(e))


if __name__ == "__main__":
  main()
