"""Where a single-sentence request through the text SavedModel spends its op time: step stats (RunMetadata,
FULL_TRACE) of 50 one-sentence requests through the TF1 session loader (how TF Serving runs it), summed by op type,
by name scope and (the attention transposes) by node; plus the graph's node counts and a plain p50 over 200 requests.
Exports all-minilm-l6-v2, first-last-avg, 64 tokens, with a config_l3_d3_w32 Glow as bench/serve.py does. The trace
slows each op: read the shares, not the microseconds. `python bench/serve_ops.py` (no flags).
"""
import collections, os, pathlib, sys, tempfile, time
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import numpy as np, tensorflow as tf
from bert_flow_tf import loaders
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from bert_flow_tf.embedding.store import EmbeddingStore
from bert_flow_tf.serving import export, session_loader
from bench.encode import stsb_sentences
import glow
sents = stsb_sentences(os.environ.get("BERT_FLOW_DATA", str(pathlib.Path(__file__).resolve().parents[2] / "shared" / "data")))
emb = SentenceEmbedder(loaders.load_model("all-minilm-l6-v2"), "first-last-avg", max_seq_length=64)
flow = glow.Glow.from_config("config_l3_d3_w32", dim=emb.dim, init="ddi", seed=0)
flow.data_init(tf.constant(EmbeddingStore(emb).vectors(sents[:256], emb.pooling_spec, show_progress=False)))
d = tempfile.mkdtemp()
text_dir = export.export_models(emb, flow, d)["text"]
m = session_loader.SessionModel(text_dir)
sig = m.meta_graph.signature_def["serving_default"]
feed_name, out_name = sig.inputs["sentences"].name, sig.outputs["embeddings"].name
print("graph nodes", len(m.graph.as_graph_def().node), "functions", len(m.graph.as_graph_def().library.function),
      "function nodes", sum(len(f.node_def) for f in m.graph.as_graph_def().library.function))
single = sents[-300:]
for s in single[:20]:
  m.session.run(out_name, {feed_name: np.array([s.encode()], object)})
lat = []
for s in single[:200]:
  t = time.perf_counter(); m.session.run(out_name, {feed_name: np.array([s.encode()], object)}); lat.append(time.perf_counter() - t)
print("p50 ms %.2f" % (np.median(lat) * 1e3), "load", os.getloadavg())
opts = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE)
by_type, by_name, n_nodes, total = collections.Counter(), collections.Counter(), collections.Counter(), 0
for s in single[:50]:
  md = tf.compat.v1.RunMetadata()
  m.session.run(out_name, {feed_name: np.array([s.encode()], object)}, options=opts, run_metadata=md)
  for dev in md.step_stats.dev_stats:
    for n in dev.node_stats:
      us = n.op_end_rel_micros - n.op_start_rel_micros
      op = n.timeline_label.split("(")[0].split(" = ")[-1] if " = " in n.timeline_label else n.node_name
      by_type[op] += us; n_nodes[dev.device] += 1
      by_name[n.node_name.split("/")[0] + "/" + "/".join(n.node_name.split("/")[1:3])] += us
      total += us
print("nodes per request", {k: v / 50 for k, v in n_nodes.items()})
print("op us per request total %.0f" % (total / 50))
for k, v in by_type.most_common(25):
  print("  %-40s %8.0f us  %5.1f%%" % (k, v / 50, 100 * v / total))
print("by scope")
for k, v in by_name.most_common(25):
  print("  %-70s %8.0f us  %5.1f%%" % (k[:70], v / 50, 100 * v / total))
print("transposes")
tr = collections.Counter(); shapes = {}
md = tf.compat.v1.RunMetadata()
m.session.run(out_name, {feed_name: np.array([single[0].encode()], object)}, options=opts, run_metadata=md)
for dev in md.step_stats.dev_stats:
  for n in dev.node_stats:
    if "Transpose" in n.timeline_label:
      tr[n.node_name] += n.op_end_rel_micros - n.op_start_rel_micros
      shapes[n.node_name] = [[d.size for d in o.tensor_description.shape.dim] for o in n.output]
for k, v in tr.most_common(12):
  print("  %6d us %s %s" % (v, k[-90:], shapes[k]))
print(len(tr), "transposes")
