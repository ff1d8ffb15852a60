"""The LiteRT files of `export(dir, litert=True)` against ours and sentence-transformers' CPU backends (issue 41).

Exports all-MiniLM-L6-v2, `last-avg`, max_seq_length 64, no calibration (what bench/vs_st.py times) with
`litert=True` once into --work_dir/export, prints the files' sizes, then times whole processes that embed the
15,487 distinct STS-B sentences, each writing a .npy, in alternating rounds with vs_st.py's backends:

  litert-fp32, litert-int8         LiteRT's interpreter (ai-edge-litert, XNNPACK, 2 threads) on model.tflite /
                                   model_int8.tflite, batches of 64 sentences sorted by length; ids from HF
                                   `tokenizers` (BertWordPieceTokenizer on the same vocab.txt, cut at 64)
  litert-fp32-1, litert-int8-1     the same, one sentence at a time (B = 1, unpadded)
  mediapipe-int8                   MediaPipe's TextEmbedder on model_int8.tflite, one string at a time: its own
                                   tokenizer from the file's metadata, no code of ours or HF's

and vs_st.py's table (median seconds, ratio to ours, CPU seconds, STS-B test Spearman x 100 of the cosine, max
difference of the normalized vectors from ours), plus the machine's load before and after.

Usage (from the repository root; the peers' venv from bench/vs_st_setup.sh):
  .venv/bin/python bench/litert.py --peers_python /tmp/stvenv/bin/python [--rounds 1]
"""
import argparse
import collections
import json
import os
import pathlib
import statistics
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
# pylint: disable=wrong-import-position
from bench import vs_st
from bench.encode import REPO
from bench.encode import stsb_sentences

LITERT = {"litert-fp32": ("model.tflite", 64), "litert-int8": ("model_int8.tflite", 64),
          "litert-fp32-1": ("model.tflite", 1), "litert-int8-1": ("model_int8.tflite", 1)}
MEDIAPIPE = {"mediapipe-int8": "model_int8.tflite"}

_LITERT_RUN = """
import os, sys, numpy as np
from ai_edge_litert import interpreter
from tokenizers import BertWordPieceTokenizer
model, vocab, sentence_file, out, batch = sys.argv[1:6]
batch = int(batch)
tokenizer = BertWordPieceTokenizer(vocab, lowercase=True)
tokenizer.enable_truncation(64)
sentences = open(sentence_file, encoding="utf-8").read().split("\\n")[:-1]
encoded = tokenizer.encode_batch(sentences)
order = np.argsort([len(e.ids) for e in encoded], kind="stable")
runner = interpreter.Interpreter(model_path=model, num_threads=os.cpu_count()).get_signature_runner()
vectors = [None] * len(sentences)
for start in range(0, len(order), batch):
  rows = order[start:start + batch]
  width = max(len(encoded[i].ids) for i in rows)
  ids = np.zeros((len(rows), width), np.int32)
  mask = np.zeros_like(ids)
  for r, i in enumerate(rows):
    ids[r, :len(encoded[i].ids)] = encoded[i].ids
    mask[r, :len(encoded[i].ids)] = 1
  got = runner(ids=ids, mask=mask, segment_ids=np.zeros_like(ids))["embedding"]
  for r, i in enumerate(rows):
    vectors[i] = got[r]
np.save(out, np.stack(vectors))
"""

_MEDIAPIPE_RUN = """
import sys, numpy as np
from mediapipe.tasks.python import BaseOptions, text
model, sentence_file, out = sys.argv[1:4]
sentences = open(sentence_file, encoding="utf-8").read().split("\\n")[:-1]
options = text.TextEmbedderOptions(base_options=BaseOptions(model_asset_path=model))
with text.TextEmbedder.create_from_options(options) as embedder:
  np.save(out, np.stack([embedder.embed(s).embeddings[0].embedding for s in sentences]))
"""


def export(work_dir):
  """The litert folder of MiniLM's export (made once) and the vocab file."""
  folder = os.path.join(work_dir, "export")
  if not os.path.exists(os.path.join(folder, "litert", "model_int8.tflite")):
    import bert_flow_tf  # pylint: disable=import-outside-toplevel
    enc = bert_flow_tf.SentenceEncoder.from_pretrained("all-minilm-l6-v2", pooling="last-avg", max_seq_length=64)
    enc.export(folder, litert=True, overwrite=True)
  return os.path.join(folder, "litert"), os.path.join(folder, "ids", "1", "assets", "vocab.txt")


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--rounds", type=int, default=1)
  parser.add_argument("--backends", default="ours," + ",".join(vs_st.PEERS) + "," + ",".join(LITERT) + "," +
                      ",".join(MEDIAPIPE))
  vs_st.add_run_arguments(parser, "/tmp/litert_bench")
  args = parser.parse_args()
  args.ours, args.ours_python = [("ours", str(REPO))], []
  backends = args.backends.split(",")
  os.makedirs(args.work_dir, exist_ok=True)
  litert_dir, vocab = export(args.work_dir)
  sizes = {name: os.path.getsize(os.path.join(litert_dir, name)) for name in sorted(os.listdir(litert_dir))}
  print(json.dumps({"litert_files_bytes": sizes}))
  sentences = sorted(stsb_sentences(args.data_dir))
  sentence_file = os.path.join(args.work_dir, f"sentences_{len(sentences)}.txt")
  with open(sentence_file, "w", encoding="utf-8") as f:
    f.write("\n".join(sentences) + "\n")
  if args.report:
    with open(args.report, encoding="utf-8") as f:
      report(args, sentences, json.load(f))
    return
  model = vs_st.peer_model(args.peers_python, args.work_dir) if any(b in vs_st.PEERS for b in backends) else None

  def argv(backend, out):
    if backend in LITERT:
      name, batch = LITERT[backend]
      return [args.python, "-c", _LITERT_RUN, os.path.join(litert_dir, name), vocab, sentence_file, out, str(batch)]
    if backend in MEDIAPIPE:
      return [args.python, "-c", _MEDIAPIPE_RUN, os.path.join(litert_dir, MEDIAPIPE[backend]), sentence_file, out]
    return vs_st.command(backend, args, model, sentence_file, out)[0]

  run = {"times": collections.defaultdict(list), "cpu_times": collections.defaultdict(list),
         "load_before": os.getloadavg(), "rounds": 0, "sizes": sizes}
  vs_st.run_rounds(args, backends, lambda backend, out: (argv(backend, out), str(REPO), None), run)
  report(args, sentences, run)


def report(args, sentences, run):
  """vs_st.py's table of `run`, the ONNX int8 / LiteRT int8 time ratio, and the sentences MediaPipe's tokenizer
  reads otherwise than ours (its one-at-a-time vectors differ from the interpreter's on HF-tokenized ids of the
  same file)."""
  vs_st.report(args, sentences, run)
  times = {b: statistics.median(t) for b, t in run["times"].items()}
  if "st-onnx-int8" in times and "litert-int8" in times:
    print(json.dumps({"onnx_int8_over_litert_int8": times["st-onnx-int8"] / times["litert-int8"]}))
  if "mediapipe-int8" in times and "litert-int8-1" in times:
    mediapipe = np.load(os.path.join(args.work_dir, "mediapipe-int8.npy"))
    interpreter = np.load(os.path.join(args.work_dir, "litert-int8-1.npy"))
    differ = np.flatnonzero(np.abs(mediapipe - interpreter).max(axis=1) > 1e-5)
    print(json.dumps({"tokenized_otherwise_by_mediapipe": len(differ), "of": len(sentences),
                      "examples": [sentences[i] for i in differ[:8]]}, ensure_ascii=False))


if __name__ == "__main__":
  main()
