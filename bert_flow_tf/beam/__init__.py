"""Embedding a corpus on Apache Beam into the embedding store (optional: needs requirements-beam.txt).

  model_handler.py   QuantitiesHandler: RunInference's ModelHandler around our SentenceEmbedder
  shards.py          store keys and shards through Beam's filesystems: the keys already stored, atomic writes
  pipeline.py        EmbedIntoStore: sentence files -> distinct, unstored sentences -> RunInference -> shards
  __main__.py        `python -m bert_flow_tf.beam`: the flags (run_flow.py's names) and the runner options

See docs/beam.md for the commands (local, Dataflow, Flink, Spark).
"""
# The modules users import by name (the others serve them); importing the package loads none of them.
__all__ = ["model_handler", "pipeline", "shards"]
