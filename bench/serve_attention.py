"""A/B of attention layouts for a one-sentence request through the text SavedModel (TF1 session loader).

Exports all-minilm-l6-v2, first-last-avg, 64 tokens, with a config_l3_d3_w32 Glow (as bench/serve.py does) once per
variant of SelfAttention's head split/merge, loads each export in its own session, and times single-sentence
requests with the variants interleaved request by request (rotated order). Prints per variant: p50/p99 ms, the
graph's float and int32 Transpose node counts, and max |diff| of the embeddings against `transpose` over the
timed sentences. Variants: `transpose` (float tf.transpose), `bitcast` (the int32 bitcast transposed, as
layers.swap_heads does), `swap_heads` (layers.swap_heads itself, with its custom gradient), `einsum` (no explicit transposes); `inter1`, `bitcast_inter1`, `bitcast_intra1` run in a
session with inter_op/intra_op_parallelism_threads 1. `--bulk N` times bulk encode of N sentences instead.
`python bench/serve_attention.py [--requests 300] [--variants transpose,bitcast] [--bulk 4096 --repeats 4]`.
"""
import argparse, json, math, os, pathlib, sys, tempfile, time
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import numpy as np, tensorflow as tf
from bert_flow_tf import loaders
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from bert_flow_tf.embedding.store import EmbeddingStore
from bert_flow_tf.modeling import layers
from bert_flow_tf.serving import export, session_loader
from bench.encode import stsb_sentences
import glow

def transpose_float(x, perm):
  return tf.transpose(x, perm)

def transpose_bitcast(x, perm):
  """The same bits moved as int32: TF's own Transpose kernel, not oneDNN's float one."""
  return tf.bitcast(tf.transpose(tf.bitcast(x, tf.int32), perm), tf.float32)

def swap_heads(x, perm):
  """layers.swap_heads, the product's: transpose_bitcast with its own gradient (tf.custom_gradient)."""
  assert list(perm) == [0, 2, 1, 3]
  return layers.swap_heads(x)

def einsum_call(self, x, attention_bias, training=False):
  """No explicit transposes: einsum over [B, S, N, D] (its own layout moves inside)."""
  batch, seq = tf.shape(attention_bias)[0], tf.shape(attention_bias)[3]
  heads = lambda t: tf.reshape(t, [batch, seq, self.num_heads, self.head_size])
  q, k, v = heads(self.query(x)), heads(self.key(x)), heads(self.value(x))
  logits = tf.einsum("bqnd,bknd->bnqk", q, k) * (1.0 / math.sqrt(self.head_size))
  probs = self.dropout(tf.nn.softmax(logits + attention_bias), training=training)
  context = tf.einsum("bnqk,bknd->bqnd", probs, v)
  return tf.reshape(context, [batch * seq, self.num_heads * self.head_size])

VARIANTS = {"transpose": transpose_float, "bitcast": transpose_bitcast, "swap_heads": swap_heads,
            "inter1": transpose_float,
            "bitcast_inter1": transpose_bitcast, "bitcast_intra1": transpose_bitcast, "einsum": None}

def patched(move):
  """SelfAttention.call with `move` in place of tf.transpose (same op order otherwise)."""
  def call(self, x, attention_bias, training=False):
    batch, seq = tf.shape(attention_bias)[0], tf.shape(attention_bias)[3]
    split = lambda t: move(tf.reshape(t, [batch, seq, self.num_heads, self.head_size]), [0, 2, 1, 3])
    q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
    logits = tf.matmul(q, k, transpose_b=True) * (1.0 / math.sqrt(self.head_size))
    probs = self.dropout(tf.nn.softmax(logits + attention_bias), training=training)
    context = move(tf.matmul(probs, v), [0, 2, 1, 3])
    return tf.reshape(context, [batch * seq, self.num_heads * self.head_size])
  return call

def main():
  p = argparse.ArgumentParser()
  p.add_argument("--requests", type=int, default=300)
  p.add_argument("--bulk", type=int, default=0, help="instead: time EmbeddingStore.vectors on this many sentences")
  p.add_argument("--repeats", type=int, default=3)
  p.add_argument("--variants", default="transpose,bitcast,einsum,inter1,bitcast_inter1")
  args = p.parse_args()
  sents = stsb_sentences(os.environ.get("BERT_FLOW_DATA", str(pathlib.Path(__file__).resolve().parents[2] / "shared" / "data")))
  if args.bulk:
    return bulk(args, sents[:args.bulk])
  emb = SentenceEmbedder(loaders.load_model("all-minilm-l6-v2"), "first-last-avg", max_seq_length=64)
  flow = glow.Glow.from_config("config_l3_d3_w32", dim=emb.dim, init="ddi", seed=0)
  flow.data_init(tf.constant(EmbeddingStore(emb).vectors(sents[:256], emb.pooling_spec, show_progress=False)))
  original, models = layers.SelfAttention.call, {}
  for name in args.variants.split(","):
    if name == "einsum":
      layers.SelfAttention.call = einsum_call
    else:
      layers.SelfAttention.call = patched(VARIANTS[name])
    path = export.export_models(emb, flow, tempfile.mkdtemp())["text"]
    if name.endswith(("inter1", "intra1")):  # server settings (TF Serving's --tensorflow_*_op_parallelism)
      threads = {name[-6:-1] + "_op_parallelism_threads": 1}
      m = models[name] = session_loader.SessionModel.__new__(session_loader.SessionModel)
      m.graph = tf.Graph()
      m.session = tf.compat.v1.Session(graph=m.graph, config=tf.compat.v1.ConfigProto(**threads))
      with m.graph.as_default():
        m.meta_graph = tf.compat.v1.saved_model.loader.load(m.session, ["serve"], path)
    else:
      models[name] = session_loader.SessionModel(path)
    layers.SelfAttention.call = original
  run = lambda name, batch: models[name].run("serving_default", {"sentences": batch})["embeddings"]
  single = sents[-args.requests:]
  for s in single[:20]:
    for name in models:
      run(name, [s])
  lat, out = {n: [] for n in models}, {n: [] for n in models}
  load = os.getloadavg()
  for i, s in enumerate(single):
    names = list(models)
    for name in names[i % len(names):] + names[:i % len(names)]:
      t = time.perf_counter(); out[name].append(run(name, [s])); lat[name].append(time.perf_counter() - t)
  res = {}
  for name, m in models.items():
    nodes = list(m.graph.as_graph_def().node) + [n for f in m.graph.as_graph_def().library.function for n in f.node_def]
    tr = [n.attr["T"].type for n in nodes if n.op == "Transpose"]
    res[name] = {"p50_ms": round(float(np.median(lat[name])) * 1e3, 2),
                 "p99_ms": round(float(np.percentile(lat[name], 99)) * 1e3, 2),
                 "transposes_float": tr.count(tf.float32.as_datatype_enum), "transposes_int32": tr.count(tf.int32.as_datatype_enum),
                 "max_abs_diff": float(np.max(np.abs(np.concatenate(out[name]) - np.concatenate(out["transpose"]))))}
  print(json.dumps({"variants": res, "requests": len(single), "loadavg_before": load, "loadavg_after": os.getloadavg()}))

def bulk(args, sents):
  """Bulk encode (the product's path: EmbeddingStore.vectors, batch 64, length buckets), variants interleaved."""
  original, embedders = layers.SelfAttention.call, {}
  for name in args.variants.split(","):
    layers.SelfAttention.call = einsum_call if name == "einsum" else patched(VARIANTS[name])
    embedders[name] = SentenceEmbedder(loaders.load_model("all-minilm-l6-v2"), "first-last-avg", max_seq_length=64)
    EmbeddingStore(embedders[name]).vectors(sents[:256], embedders[name].pooling_spec, show_progress=False)  # trace
    layers.SelfAttention.call = original
  seconds, out = {n: [] for n in embedders}, {}
  load = os.getloadavg()
  for _ in range(args.repeats):
    for name, emb in embedders.items():
      t = time.perf_counter()
      out[name] = EmbeddingStore(emb).vectors(sents, emb.pooling_spec, show_progress=False)
      seconds[name].append(time.perf_counter() - t)
  print(json.dumps({"sentences": len(sents), "seconds": {n: [round(x, 2) for x in v] for n, v in seconds.items()},
                    "max_abs_diff": {n: float(np.max(np.abs(out[n] - out["transpose"]))) for n in out},
                    "loadavg_before": load, "loadavg_after": os.getloadavg()}))

if __name__ == "__main__":
  main()
