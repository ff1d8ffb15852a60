"""Embedding a corpus on Apache Beam into the embedding store (optional: pip install "bert-flow-tf[beam]").

  model_handler.py   QuantitiesHandler: RunInference's ModelHandler around our QuantityEncoder
  filesystem.py      Beam's filesystems as the store's filesystem seam (`embedding/store_files.py` owns the layout)
  pipeline.py        EmbedIntoStore: sentence files -> distinct, unstored sentences -> RunInference -> shards
  local_runner.py    LocalRunner (the FnApi runner, workers that die with this process), its options, and `run`:
                     a lost worker or a SIGTERM ends the run in one line
  worker.py          `python -m bert_flow_tf.beam.worker`: one worker process, bound to the process that started it
  __main__.py        `python -m bert_flow_tf.beam`: the `bert-flow-beam` command (bert_flow_tf/cli/beam.py)

See docs/beam.md for the commands (local, Dataflow, Flink, Spark).
"""
# The modules users import by name (the others serve them); importing the package loads none of them.
__all__ = ["filesystem", "model_handler", "pipeline"]
