"""Writes tests/fixtures/st_util.json: what sentence-transformers' `util` helpers return on fixed vectors.

tests/util_test.py checks bert_flow_tf.util against it. It needs sentence-transformers (and torch), which the
project's environment does not have, so CI never runs this script; it only reads the committed file. Run it with
sentence-transformers 6.2 in a venv of its own (the committed file was written so):

  python3 -m venv /tmp/st6 && /tmp/st6/bin/pip install "torch==2.13.0+cpu" "sentence-transformers==6.2.0"
  /tmp/st6/bin/python scripts/make_util_fixture.py [--out tests/fixtures/st_util.json]

The vectors: 60 rows of width 8, float32, drawn with numpy's seed 0 around 5 random centres (spread 0.35), so that
communities and near-duplicate pairs exist; rows 0..9 are the queries of the search. The file holds the vectors,
sentence-transformers' version, and each helper's output under the arguments recorded beside it (the similarity
functions: on rows 0..9 against all, and pairwise on rows 0..29 against rows 30..59; AnglE's also at width 7).
"""
import argparse
import json
import pathlib

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
# util's similarity functions, scored as every query (rows 0..9) with every row, and as row i with row 30 + i.
MATRIX = ("dot_score", "euclidean_sim", "manhattan_sim", "pytorch_cos_sim")
PAIRWISE = ("pairwise_cos_sim", "pairwise_dot_score", "pairwise_euclidean_sim", "pairwise_manhattan_sim",
            "pairwise_angle_sim")


def vectors():
  """float32 [60, 8] around 5 centres (numpy seed 0)."""
  rng = np.random.default_rng(0)
  centres = rng.normal(size=(5, 8))
  return (centres[rng.integers(0, 5, size=60)] + 0.35 * rng.normal(size=(60, 8))).astype(np.float32)


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--out", default=str(REPO / "tests" / "fixtures" / "st_util.json"))
  args = parser.parse_args()
  import sentence_transformers  # pylint: disable=g-import-not-at-top,import-outside-toplevel
  import torch  # pylint: disable=g-import-not-at-top,import-outside-toplevel
  from sentence_transformers import util  # pylint: disable=g-import-not-at-top,import-outside-toplevel
  x = vectors()
  out = {"sentence_transformers": sentence_transformers.__version__, "embeddings": x.tolist(),
         "cos_sim": util.cos_sim(x[:10], x).numpy().tolist(),
         "semantic_search": {"args": {"top_k": 5, "corpus_chunk_size": 7},
                             "result": util.semantic_search(x[:10], x, top_k=5, corpus_chunk_size=7)},
         "paraphrase_mining": [
             {"args": args_, "result": util.paraphrase_mining_embeddings(x, **args_)}
             for args_ in ({"top_k": 3}, {"top_k": 5, "max_pairs": 40, "query_chunk_size": 16,
                                          "corpus_chunk_size": 25})],
         "community_detection": [
             {"args": args_, "result": util.community_detection(x, **args_)}
             for args_ in ({"threshold": 0.9, "min_community_size": 3}, {"threshold": 0.8, "min_community_size": 8,
                                                                         "batch_size": 16})],
         "similarity": {name: getattr(util, name)(x[:10], x).numpy().tolist() for name in MATRIX},
         "pairwise": {name: getattr(util, name)(x[:30], x[30:]).numpy().tolist() for name in PAIRWISE},
         "pairwise_angle_sim_odd_width": util.pairwise_angle_sim(x[:30, :7], x[30:, :7]).numpy().tolist(),
         "normalize_embeddings": util.normalize_embeddings(torch.from_numpy(x[:10])).numpy().tolist(),
         "quantize_embeddings": {
             precision: util.quantize_embeddings(x[:10], precision=precision, calibration_embeddings=x).tolist()
             for precision in ("int8", "uint8", "binary", "ubinary")}}
  pathlib.Path(args.out).write_text(json.dumps(out) + "\n", encoding="utf-8")
  print(f"wrote {args.out}")


if __name__ == "__main__":
  main()
