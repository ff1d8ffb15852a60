"""Serves one export from two TensorFlow versions as the model server would, and compares the embeddings.

Exports MiniLM (`--model_dir`, `--pooling`, max_seq_length 64) with a Glow whose ActNorms are data-initialized on
the test sentences, turned to its principal axes over them as a fitted flow is (graph_calibration.RotatedFlow), and
a binary search model (`binary_search/1`) over the test sentences, cut to the 11 top axes that 12 sentences span (or
takes `--export_dir`, an existing export, searched when it holds binary_search/1), then, in a fresh process of this
Python (TF 2.21) and of `--other_python` (e.g. the TF 2.20 venv of scripts/tf220_venv.sh):
  * runs scripts/check_servable.py (so core ops are checked against each version's op registry);
  * loads both SavedModels with the TF1 session loader on `serve` and feeds them through the signature tensor
    names (bert_flow_tf.serving.session_loader; tensorflow_text imported for the text model only).
Prints one JSON object: each Python's versions, the audit results, and the largest |difference| of every output
between the two versions (string outputs: 0 when equal, inf when not) and, for a fresh export, against the
in-process SentenceEmbedder + flow (the search: against `hamming_search.search_codes` of the same vectors). Exit
status 1 when an audit fails or a difference exceeds --tolerance (default 1e-5).

Usage: python scripts/serving_across_versions.py --other_python ~/.cache/bert-flow-tf-tf220/bin/python
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import tensorflow as tf

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

# pylint: disable=wrong-import-position
from bert_flow_tf import loaders
from bert_flow_tf.calibration import decompositions
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from bert_flow_tf.embedding.store import EmbeddingStore
from bert_flow_tf.modeling.tokenizer import BertTokenizer
from bert_flow_tf.quantization import binary_search_model
from bert_flow_tf.quantization import corpus_codes
from bert_flow_tf.quantization import hamming_search
from bert_flow_tf.quantization import int8_ranges
from bert_flow_tf.quantization import truncation
from bert_flow_tf.serving import export
from bert_flow_tf.serving import graph_calibration
from glow.model import Glow
# pylint: enable=wrong-import-position

SENTENCES = ["A man is playing a guitar.", "A woman slices an onion.", "",
             "Three dogs run across a snowy field near the river.", "Café owners in Zürich protest the new tax.",
             "word " * 80, "Hi.", "The stock market fell sharply on Monday after the report.",
             "A child is riding a horse.", "Two men are playing chess in the park.", "一个男人在弹吉他。",
             "Ünïcödé ßtraße ΣΟΦΊΑ naïve résumé"]
SEARCH = {"queries": ["A man plays the guitar.", "dogs in the snow", ""], "k": 3, "candidates": 6}


def _run(python, args):
  env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""),
             TF_CPP_MIN_LOG_LEVEL="2")
  return subprocess.run([python] + args, env=env, capture_output=True, text=True, cwd=REPO, check=False)


def export_fresh(model_dir, pooling, export_dir):
  """Exports the model + a DDI Glow, and the binary search over SENTENCES; returns (tokenizer ids of SENTENCES,
  in-process embeddings [n, D], in-process search {"indices": [q, k], "scores": [q, k]})."""
  embedder = SentenceEmbedder(loaders.load_model(model_dir), pooling, max_seq_length=64)
  store = EmbeddingStore(embedder)
  raw = store.vectors(SENTENCES, embedder.pooling_spec, show_progress=False)
  glow_model = Glow.from_config("config_l3_d3_w32", dim=embedder.dim, init="ddi", seed=0)
  glow_model.data_init(tf.constant(raw))
  latent = decompositions.Scatter()
  latent.add(glow_model(tf.constant(raw), training=False)[0].numpy())
  flow = graph_calibration.RotatedFlow(glow_model, truncation.principal_axes(latent)[0])  # as a fitted flow is exported
  export.export_models(embedder, flow, export_dir, version=1)
  ids = {k: v.numpy().tolist() for k, v in embedder.tokenizer(tf.constant(SENTENCES)).items()}
  z = flow(tf.constant(raw), training=False)[0].numpy()
  ranges = int8_ranges.fit_ranges(z)
  # Its top principal axes that 12 sentences span (11 about their mean); beyond them z @ axes is float noise.
  dims = truncation.kept_indices(None, len(SENTENCES) - 1, embedder.dim)
  binary_search_model.export_binary_search(embedder, flow, [(SENTENCES, z[:, dims])], len(SENTENCES), ranges[:, dims],
                                           export_dir, dims=dims)
  queries = store.vectors(SEARCH["queries"], embedder.pooling_spec, show_progress=False)
  q = flow(tf.constant(queries), training=False)[0].numpy()[:, dims]
  hits = hamming_search.search_codes(q, corpus_codes.CorpusCodes.of(z[:, dims], ranges[:, dims]),
                                     SEARCH["k"], SEARCH["candidates"])
  search = {"indices": np.array([[h["corpus_id"] for h in row] for row in hits]),
            "scores": np.array([[h["score"] for h in row] for row in hits])}
  return ids, z, search


def tokenize_with_export(export_dir):
  """Packed ids of SENTENCES from the export's own vocab and settings (for an existing export)."""
  with open(os.path.join(export_dir, "export_info.json"), encoding="utf-8") as f:
    info = json.load(f)
  tokenizer = BertTokenizer(os.path.join(export_dir, "ids", "1", "assets", "vocab.txt"), info["do_lower_case"],
                            info["max_seq_length"])
  return {k: v.numpy().tolist() for k, v in tokenizer(tf.constant(SENTENCES)).items()}


def serve_in(python, export_dir, ids, workdir, tag):
  """Audit + session-loader outputs from a fresh process of `python`: (audit dict, dict name -> np.ndarray)."""
  audit = _run(python, [os.path.join(REPO, "scripts", "check_servable.py"), export_dir])
  audit_lines = audit.stdout.splitlines()
  outputs = {}
  runs = {"text": [{"saved_model": os.path.join(export_dir, "text", "1"), "signature": "serving_default",
                    "inputs": {"sentences": SENTENCES}},
                   {"saved_model": os.path.join(export_dir, "text", "1"), "signature": "similarity",
                    "inputs": {"sentences_a": SENTENCES, "sentences_b": SENTENCES[1:] + SENTENCES[:1]}}],
          "ids": [{"saved_model": os.path.join(export_dir, "ids", "1"), "signature": "serving_default",
                   "inputs": ids}]}
  if os.path.isdir(os.path.join(export_dir, binary_search_model.KIND, "1")):
    runs[binary_search_model.KIND] = [{"saved_model": os.path.join(export_dir, binary_search_model.KIND, "1"),
                                 "signature": "serving_default", "inputs": SEARCH}]
  for kind, requests in runs.items():
    requests_json = os.path.join(workdir, f"{tag}-{kind}.json")
    out = os.path.join(workdir, f"{tag}-{kind}.npz")
    with open(requests_json, "w", encoding="utf-8") as f:
      json.dump(requests, f)
    result = _run(python, ["-m", "bert_flow_tf.serving.session_loader"]
                  + (["--tensorflow_text"] if kind != "ids" else []) + [requests_json, out])
    if result.returncode != 0:
      raise RuntimeError(f"{python}: the session loader failed on the {kind} model:\n{result.stderr[-3000:]}")
    with np.load(out) as arrays:
      outputs.update({f"{kind}/{name}": arrays[name] for name in arrays.files})
  by_model = {}  # "text/1" -> its indented report lines
  for line in audit_lines:
    if line.startswith("  ") and by_model:
      by_model[list(by_model)[-1]].append(line.strip())
    elif not line.startswith("servable:"):
      by_model[line.split(":")[0]] = []
  summary = {"tf_version": str(outputs.pop("text/tf_version")), "audit_exit_status": audit.returncode,
             "audit": {name: [line for line in lines if line.startswith(("oldest", "NOT SERVABLE"))]
                       for name, lines in by_model.items()}}
  return summary, {k: v for k, v in outputs.items() if k.split("/")[1][0].isdigit()}


def max_abs_diff(a, b):
  """Largest |a - b| of two outputs; string outputs: 0.0 when equal, inf when not."""
  if a.dtype.kind in "SUO":
    return 0.0 if a.shape == b.shape and np.all(a == b) else float("inf")
  return float(np.abs(a.astype(np.float64) - b.astype(np.float64)).max())


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--other_python", required=True, help="a Python with another TF + tensorflow-text")
  parser.add_argument("--export_dir", help="an existing export (default: export a fresh one to a temp dir)")
  parser.add_argument("--model_dir", default="all-minilm-l6-v2")
  parser.add_argument("--pooling", default="first-last-avg")
  parser.add_argument("--tolerance", type=float, default=1e-5)
  args = parser.parse_args()
  with tempfile.TemporaryDirectory() as workdir:
    export_dir = args.export_dir
    want = search = None
    if export_dir is None:
      export_dir = os.path.join(workdir, "export")
      ids, want, search = export_fresh(args.model_dir, args.pooling, export_dir)
    else:
      ids = tokenize_with_export(export_dir)
    this, this_out = serve_in(sys.executable, export_dir, ids, workdir, "this")
    other, other_out = serve_in(args.other_python, export_dir, ids, workdir, "other")
  report = {"this": this, "other": other, "sentences": len(SENTENCES),
            "embeddings_max_abs": float(np.abs(this_out["text/0/embeddings"]).max()),
            "max_abs_diff_other_vs_this": {k: max_abs_diff(other_out[k], this_out[k]) for k in this_out}}
  if want is not None:
    report["max_abs_diff_vs_in_process"] = {
        f"{tag}/{k}": max_abs_diff(out[k], want)
        for tag, out in (("this", this_out), ("other", other_out)) for k in out if k.endswith("/embeddings")}
    report["max_abs_diff_vs_in_process"].update({
        f"{tag}/{binary_search_model.KIND}/0/{name}": max_abs_diff(out[f"{binary_search_model.KIND}/0/{name}"],
                                                                   search[name])
        for tag, out in (("this", this_out), ("other", other_out)) for name in search})
  diffs = list(report["max_abs_diff_other_vs_this"].values()) + list(
      report.get("max_abs_diff_vs_in_process", {}).values())
  report["ok"] = bool(this["audit_exit_status"] == 0 and other["audit_exit_status"] == 0
                      and max(diffs) <= args.tolerance)
  print(json.dumps(report, indent=2))
  return 0 if report["ok"] else 1


if __name__ == "__main__":
  sys.exit(main())
