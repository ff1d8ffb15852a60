"""`python -m bert_flow_tf.encode ...`: the encode command (installed: `bert-flow-encode`).

The flags, `main` and `encode_file` live in bert_flow_tf/cli/encode.py; `main` is here too for
tests/entry_driver.py, which runs it in-process.
"""
from bert_flow_tf.cli.encode import main  # noqa: F401  pylint: disable=unused-import
from bert_flow_tf.cli.encode import run

if __name__ == "__main__":
  run()
