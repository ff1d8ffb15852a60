"""How costs grow with the corpus: embed, store, flow fit (streamed and in memory), and Beam against SentenceEmbedder.

For each corpus size (the first N of every distinct sentence in the shared data sets, in a seeded order) it runs
each stage in its own process and reports its wall seconds and peak RSS (the process's own, from wait4):

  embed        SentenceEmbedder into an EmbeddingStore on disk (`ensure`: what run_flow --fit_from_store runs, no
               vector read back): seconds, sentences/s, store MB
  fit_stream   the flow (default config, 1 epoch, 32 pairs a step) on pairs streamed from the store shard by
               shard (calibration/store_stream.StreamedPairs), plus streamed whitening statistics
  fit_memory   the same pairs read into memory first (pair_sources.CachedPairs), the default path
  beam_W       `python -m bert_flow_tf.beam --num_workers=W` into a fresh store (launcher RSS only; its worker
               processes are not waited for by it)
  run_flow_stream  the whole product process: `python run_flow.py --train_file=<corpus> --fit_from_store
               --cache_dir=<the store>` (the flow only, no evaluation), every sentence already stored
  run_flow_memory  the same command without --fit_from_store (the default, every vector in memory)

  python bench/beam_growth.py --sizes 10000,30000,0 --beam_sizes 10000 --beam_workers 1,2

`--synthetic_sizes 100000,300000,1000000` also writes stores of random D=384 vectors of those sizes (in the store's
layout, 16,384 rows a shard) and runs only the two fits on them, `--synthetic_epochs` of an epoch each: how the
fit's memory grows past the shared data's size, where the shuffle buffer and the shards read side by side are full.

`--store_dir` reuses the stores (store_<N>/) of an earlier run's --work_dir instead of embedding again (no embed
row then); `--fit_stages fit_stream` runs only the streamed fit, `--fit_stages run_flow_stream,run_flow_memory`
only the whole run_flow.py processes. Size 0 means every distinct sentence. Prints one
JSON line per (size, stage), then a summary JSON object; records the load average before and after.
"""
import argparse
import json
import os
import pathlib
import random
import shutil
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DATA_DIR = os.environ.get("BERT_FLOW_DATA", str(REPO.parent / "shared" / "data"))
POOLING = "last-avg"
TASKS = ("sts-b", "sick-r", "sts-12-16", "snli", "qnli")


def all_sentences(data_dir):
  """Every distinct non-blank sentence of the shared data sets, in a seeded order."""
  from bert_flow_tf import data  # pylint: disable=g-import-not-at-top
  seen = set()
  for name in TASKS:
    task = data.load_task(name, data_dir)
    for split in (task.train, task.dev, task.test):
      for pairs in split:
        seen.update(s for s in (*pairs.sentences_a, *pairs.sentences_b) if s.strip())
  out = sorted(seen)
  random.Random(0).shuffle(out)
  return out


def _embedder(model):
  from bert_flow_tf import loaders  # pylint: disable=g-import-not-at-top
  from bert_flow_tf.embedding.embedder import SentenceEmbedder  # pylint: disable=g-import-not-at-top
  return SentenceEmbedder(loaders.load_model(model_dir=model), POOLING, max_seq_length=64)


def stage_embed(args):
  from bert_flow_tf.embedding.store import EmbeddingStore  # pylint: disable=g-import-not-at-top
  from bert_flow_tf.modeling import pooling as pooling_lib  # pylint: disable=g-import-not-at-top
  sentences = open(args.corpus, encoding="utf-8").read().split("\n")[:-1]
  store = EmbeddingStore(_embedder(args.model), args.store, batch_size=64)
  start = time.perf_counter()
  store.ensure(sentences, pooling_lib.quantities(store.embedder.pooling), show_progress=False)
  seconds = time.perf_counter() - start
  return {"seconds": seconds, "sentences_per_s": len(sentences) / seconds, "encoded": store.encoded,
          "folder": store.folder}


def _pairs_in_memory(shards):
  """CachedPairs of the stream's pairing (consecutive rows of each shard), every vector in memory."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  from bert_flow_tf.calibration import pair_sources  # pylint: disable=g-import-not-at-top
  from bert_flow_tf.data import pairs as pairs_lib  # pylint: disable=g-import-not-at-top
  a, b = [], []
  for i in range(len(shards)):
    x = shards.read(i)
    rows_a, rows_b = pairs_lib.consecutive_pairs(len(x))
    a.append(x[rows_a])
    b.append(x[rows_b])
  return pair_sources.CachedPairs(np.concatenate(a), np.concatenate(b))


def stage_fit(args):
  from bert_flow_tf.calibration import flow_fitting, store_stream  # pylint: disable=g-import-not-at-top
  from bert_flow_tf.modeling import pooling as pooling_lib  # pylint: disable=g-import-not-at-top
  shards = store_stream.StoreShards(args.store, pooling_lib.resolve(POOLING, 6))
  out = {}
  start = time.perf_counter()
  if args.stage == "fit_stream":
    store_stream.fit_whitening(shards)
    out["whitening_seconds"] = time.perf_counter() - start
    pairs = store_stream.StreamedPairs(shards)
  else:
    pairs = _pairs_in_memory(shards)
  fit_config = flow_fitting.FlowFitConfig(save_checkpoints_steps=10 ** 9, num_train_epochs=args.epochs)
  start = time.perf_counter()
  _, summary = flow_fitting.fit_flow(pairs, fit_config, args.flow_dir)
  out.update(seconds=time.perf_counter() - start, steps=summary["num_steps"], pairs=len(pairs),
             last_loss=summary["last_loss"])
  return out


def write_random_store(folder, n, dim=384, shard_size=16384, seed=0):
  """A store folder of n random anisotropic float32 [dim] vectors under "mean-6" (MiniLM's last-avg)."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  from bert_flow_tf.embedding import store_files  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(seed)
  scale = np.geomspace(3.0, 0.03, dim).astype(np.float32)
  os.makedirs(os.path.join(folder, "mean-6"), exist_ok=True)
  for start in range(0, n, shard_size):
    k = min(shard_size, n - start)
    keys = np.sort(store_files.sentence_keys([f"synthetic {i}" for i in range(start, start + k)]))
    vectors = rng.standard_normal((k, dim), dtype=np.float32) * scale
    np.savez(os.path.join(folder, "mean-6", store_files.shard_name(keys)), keys=keys, vectors=vectors)
  return folder


def _run(cmd, env=None):
  """(wall seconds, peak RSS MB of the child, its last stdout line parsed as JSON or None)."""
  start = time.perf_counter()
  proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=REPO, env=env, text=True)
  out = proc.stdout.read()
  _, status, usage = os.wait4(proc.pid, 0)
  wall = time.perf_counter() - start
  if status != 0:
    raise RuntimeError(f"{cmd} failed with status {status}")
  lines = [line for line in out.splitlines() if line.startswith("{")]
  return wall, usage.ru_maxrss / 1024, json.loads(lines[-1]) if lines else None


def _run_flow(args, stage, corpus, folder, output_dir, env):
  """The whole `python run_flow.py` process fitting the flow on `corpus` with the store `folder` (a model key's
  folder) as its cache; run_flow_stream adds --fit_from_store. Checks that it encoded nothing."""
  shards = sorted(pathlib.Path(folder).parent.rglob("*.npz"))
  cmd = [sys.executable, "run_flow.py", f"--train_file={corpus}", f"--cache_dir={pathlib.Path(folder).parent}",
         f"--model_dir={args.model}", f"--pooling={POOLING}", "--max_seq_length=64",
         f"--output_dir={output_dir}"]
  wall, rss, _ = _run(cmd + (["--fit_from_store"] if stage == "run_flow_stream" else []), env)
  if sorted(pathlib.Path(folder).parent.rglob("*.npz")) != shards:
    raise RuntimeError(f"{stage} changed the store {folder}: the corpus was not stored already")
  steps = json.loads((output_dir / "flows" / "target-custom" / "flow.json").read_text())["num_steps"]
  return {"wall_s": wall, "peak_rss_mb": rss, "steps": steps}


def _du_mb(folder):
  return sum(f.stat().st_size for f in pathlib.Path(folder).rglob("*") if f.is_file()) / 2 ** 20


def main():
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--sizes", default="10000,30000,0")
  parser.add_argument("--beam_sizes", default="10000")
  parser.add_argument("--beam_workers", default="1,2")
  parser.add_argument("--model", default="all-minilm-l6-v2")
  parser.add_argument("--work_dir", default="/tmp/beam_growth")
  parser.add_argument("--beam_python", default=sys.executable, help="A Python with apache_beam installed.")
  parser.add_argument("--synthetic_sizes", default="")
  parser.add_argument("--synthetic_epochs", type=float, default=0.05)
  parser.add_argument("--store_dir", default=None, help="An earlier --work_dir whose store_<N>/ folders are reused.")
  parser.add_argument("--fit_stages", default="fit_stream,fit_memory")
  parser.add_argument("--stage", default=None, help=argparse.SUPPRESS)
  parser.add_argument("--epochs", type=float, default=1.0, help=argparse.SUPPRESS)
  parser.add_argument("--corpus", default=None, help=argparse.SUPPRESS)
  parser.add_argument("--store", default=None, help=argparse.SUPPRESS)
  parser.add_argument("--flow_dir", default=None, help=argparse.SUPPRESS)
  args = parser.parse_args()
  if args.stage:
    result = stage_embed(args) if args.stage == "embed" else stage_fit(args)
    print(json.dumps(result))
    return
  env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2")
  work = pathlib.Path(args.work_dir)
  shutil.rmtree(work, ignore_errors=True)
  work.mkdir(parents=True)
  sentences = all_sentences(DATA_DIR)
  rows, load_before = [], os.getloadavg()
  me = [sys.executable, str(pathlib.Path(__file__).resolve())]
  fit_stages = [s for s in args.fit_stages.split(",") if s]
  for n in [int(s) for s in args.synthetic_sizes.split(",") if s]:
    folder = write_random_store(str(work / f"synthetic_{n}"), n)
    for stage in fit_stages:
      wall, rss, got = _run(me + ["--stage", stage, "--store", folder, "--epochs", str(args.synthetic_epochs),
                                  "--flow_dir", str(work / f"{stage}_synthetic_{n}")], env)
      rows.append({"sentences": n, "stage": f"{stage}_synthetic", "wall_s": wall, "peak_rss_mb": rss,
                   "store_mb": _du_mb(folder), **got})
      print(json.dumps(rows[-1]), flush=True)
  for size in [int(s) for s in args.sizes.split(",") if s]:
    n = size or len(sentences)
    corpus = work / f"corpus_{n}.txt"
    corpus.write_text("".join(s.replace("\n", " ") + "\n" for s in sentences[:n]), encoding="utf-8")
    if args.store_dir:
      folder = str(next(pathlib.Path(args.store_dir, f"store_{n}").glob("*/model.json")).parent)
    else:
      wall, rss, got = _run(me + ["--stage", "embed", "--corpus", str(corpus), "--store", str(work / f"store_{n}"),
                                  "--model", args.model], env)
      folder = got.pop("folder")
      rows.append({"sentences": n, "stage": "embed", "wall_s": wall, "peak_rss_mb": rss,
                   "store_mb": _du_mb(folder), **got})
      print(json.dumps(rows[-1]), flush=True)
    for stage in fit_stages:
      if stage.startswith("run_flow"):
        rows.append({"sentences": n, "stage": stage, **_run_flow(args, stage, corpus, folder, work / f"{stage}_{n}",
                                                                 env)})
      else:
        wall, rss, got = _run(me + ["--stage", stage, "--store", folder, "--flow_dir", str(work / f"{stage}_{n}")],
                              env)
        rows.append({"sentences": n, "stage": stage, "wall_s": wall, "peak_rss_mb": rss, **got})
      print(json.dumps(rows[-1]), flush=True)
    if size in [int(s) for s in args.beam_sizes.split(",") if s]:
      for workers in [int(w) for w in args.beam_workers.split(",")]:
        cache = work / f"beam_{n}_{workers}"
        wall, rss, got = _run([args.beam_python, "-m", "bert_flow_tf.beam", f"--input_pattern={corpus}",
                               f"--cache_dir={cache}", f"--model_dir={args.model}",
                               f"--pooling={POOLING}", f"--num_workers={workers}"], env)
        rows.append({"sentences": n, "stage": f"beam_{workers}", "wall_s": wall, "launcher_peak_rss_mb": rss,
                     "sentences_per_s": n / wall, "store_mb": _du_mb(got["folder"]),
                     "embedded": got["embedded"]})
        print(json.dumps(rows[-1]), flush=True)
  print(json.dumps({"rows": rows, "loadavg_before": load_before, "loadavg_after": os.getloadavg(),
                    "cpus": os.cpu_count(), "model": args.model, "pooling": POOLING}))


if __name__ == "__main__":
  main()
