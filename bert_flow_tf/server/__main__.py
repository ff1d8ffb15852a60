"""`python -m bert_flow_tf.server --export_dir=DIR`: the server command (installed: `bert-flow-serve`)."""
from bert_flow_tf.cli.serve import run

if __name__ == "__main__":
  run()
