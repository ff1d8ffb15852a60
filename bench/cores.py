"""How many cores the encoder really gets: repeated identical encodes (wall vs CPU time), and the encoder alone on
pre-made batches against a whole encode as `SentenceEncoder.encode` runs it on new sentences (a fresh in-memory
`EmbeddingStore.vectors`); prints one JSON object.

A call whose wall time grows while its CPU seconds stay put waited on something (that is how the tf.data
autotuning stall, `bert_flow_tf/utils/tf_data.py`, showed). The model-alone pass runs the same replica function
(`SentenceEmbedder.replica_function`) over batches already made by the pipeline (listed first), so its difference
from `encode` is what the pipeline, the store's lookups and the scheduling cost.

Usage (from the repository root): python bench/cores.py [--sentences 4000] [--repeats 6]
"""
import argparse
import json
import os
import pathlib
import resource
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
# pylint: disable=wrong-import-position
from bert_flow_tf import loaders
from bert_flow_tf.embedding import pipeline
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from bert_flow_tf.embedding.store import EmbeddingStore
from bert_flow_tf.modeling import pooling as pooling_lib
from bench.encode import DATA_DIR
from bench.encode import stsb_sentences


def cpu_seconds():
  usage = resource.getrusage(resource.RUSAGE_SELF)
  return usage.ru_utime + usage.ru_stime


def timed(fn):
  """(wall s, CPU s) of fn()."""
  wall, cpu = time.perf_counter(), cpu_seconds()
  fn()
  return round(time.perf_counter() - wall, 2), round(cpu_seconds() - cpu, 2)


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--model", default="all-minilm-l6-v2")
  parser.add_argument("--data_dir", default=DATA_DIR)
  parser.add_argument("--sentences", type=int, default=4000)
  parser.add_argument("--repeats", type=int, default=6)
  args = parser.parse_args()
  sentences = stsb_sentences(args.data_dir)[:args.sentences]
  embedder = SentenceEmbedder(loaders.load_model(model_dir=args.model), "last-avg")
  names = pooling_lib.quantities(embedder.pooling_spec)

  def encode():  # what SentenceEncoder.encode runs on new sentences
    return EmbeddingStore(embedder, batch_size=64).vectors(sentences, embedder.pooling_spec, show_progress=False)

  encode()                                                                           # traces
  replica_fn = embedder.replica_function(names)
  batches = list(pipeline.InputPipeline(embedder.tokenizer, 64).dataset(sentences))

  def model_alone():
    for batch in batches:
      replica_fn(batch)[0][names[0]].numpy()

  model_alone()
  encode_calls, model_calls = [], []
  for _ in range(args.repeats):
    encode_calls.append(timed(encode))
    model_calls.append(timed(model_alone))
  print(json.dumps({"sentences": len(sentences), "batches": len(batches), "cpu_count": os.cpu_count(),
                    "encode_wall_cpu_s": encode_calls, "model_alone_wall_cpu_s": model_calls,
                    "loadavg_after": list(os.getloadavg())}))


if __name__ == "__main__":
  main()
