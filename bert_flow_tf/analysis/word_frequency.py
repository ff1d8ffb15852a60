"""The paper's Table 1: how word frequency biases BERT's word-embedding matrix.

For the words of each word-frequency-rank bucket, the mean l2-norm of their rows of the word-embedding matrix
and the mean l2 distance and dot product to their k nearest neighbours (k = 3, 5, 7; nearest by l2 distance,
among all V rows of the matrix, the word itself left out). The paper found frequent words near the origin and
densely packed, rare words far out and sparse (Sec. 2.2).

Which vocabulary entries are words, and their rank:
  * A WordPiece entry counts as a word when it is a whole-word piece: not a `##` continuation piece, not a
    bracketed special or placeholder token ([PAD], [CLS], [unused0], ...), and without a digit (wordfreq does not
    count digit strings: it estimates them from a pattern, which would put "00" 15th). Its frequency is the
    `wordfreq` package's English frequency (`wordfreq.word_frequency(token, "en")`, case-insensitive; the data
    ships inside the wheel, nothing is downloaded). Entries wordfreq gives frequency 0 (punctuation, most
    symbols and CJK characters, rare names) are left out.
  * Words are ranked by descending frequency, ties broken by vocabulary id; rank 0 is the most frequent. Ranks
    are among the vocabulary's words, not among all English words.
  * The paper's buckets are printed "(0, 100)", "[100, 500)", "[500, 5K)", "[5K, 1K)"; we read them as
    [0, 100), [100, 500), [500, 5K), [5K, 10K): contiguous, and 10K is the only upper bound above 5K that makes
    "[5K, 1K)" one typo away.

The paper ranked by a Wikipedia dump's counts (BERT-base's uncased vocabulary); wordfreq mixes Wikipedia with
subtitles, news, books, web text and social media, so the ranks differ somewhat.

Legend: V = vocabulary size, H = embedding width, Q = query words.
"""
import importlib.metadata
import re

import numpy as np

from bert_flow_tf.modeling import tokenizer as tokenizer_lib
from bert_flow_tf.reporting import markdown

BUCKETS = ((0, 100), (100, 500), (500, 5000), (5000, 10000))
KS = (3, 5, 7)
LANGUAGE = "en"
FREQUENCY_SOURCE = f"wordfreq {importlib.metadata.version('wordfreq')}, English"
# Paper Table 1 (BERT-base word embeddings), one value per bucket of BUCKETS.
PAPER_TABLE1 = {
    "mean_norm": (0.95, 1.04, 1.22, 1.45),
    "knn_l2_k3": (0.77, 0.93, 1.16, 1.30),
    "knn_l2_k5": (0.83, 0.99, 1.22, 1.34),
    "knn_l2_k7": (0.87, 1.04, 1.26, 1.37),
    "knn_dot_k3": (0.73, 0.92, 1.20, 1.63),
    "knn_dot_k5": (0.73, 0.91, 1.19, 1.61),
    "knn_dot_k7": (0.72, 0.90, 1.17, 1.60),
}
ROW_NAMES = {"mean_norm": "Mean l2-norm", **{f"knn_l2_k{k}": f"Mean k-NN l2-dist. (k={k})" for k in KS},
             **{f"knn_dot_k{k}": f"Mean k-NN dot-product (k={k})" for k in KS}}
_SPECIAL = re.compile(r"^\[.*\]$")


def word_embedding_matrix(model):
  """The word-embedding matrix of a LoadedModel, float32 [V, H] (before position/type embeddings and LayerNorm).

  Our BertEncoder exposes it as `embeddings.word_embeddings`; a TF-Hub encoder as its variable named
  `.../word_embeddings/...` with one row per vocabulary entry.
  """
  embeddings = getattr(model.encoder, "embeddings", None)
  if embeddings is not None and hasattr(embeddings, "word_embeddings"):
    return embeddings.word_embeddings.numpy()
  vocab_size = len(tokenizer_lib.read_vocab(model.vocab_file))
  found = [v for v in model.encoder.variables
           if "word_embeddings" in v.name and v.shape.rank == 2 and v.shape[0] == vocab_size]
  if len(found) != 1:
    raise ValueError(f"{model.source}: expected one word_embeddings variable of {vocab_size} rows, found "
                     f"{[v.name for v in found] or 'none'}")
  return found[0].numpy()


def is_whole_word(token):
  """True for a vocabulary entry that may count as a word (see the module docstring); frequency decides next."""
  return not (token.startswith("##") or _SPECIAL.match(token) or any(c.isdigit() for c in token))


def word_frequencies(vocab, language=LANGUAGE):
  """wordfreq frequency of each whole-word vocabulary entry, 0 for the others. float64 [V]."""
  import wordfreq  # pylint: disable=g-import-not-at-top  # its word lists take 0.5 s to load: only for Table 1
  return np.array([wordfreq.word_frequency(t, language) if is_whole_word(t) else 0. for t in vocab], np.float64)


def frequency_ranks(frequencies):
  """Rank of each entry among those with frequency > 0 (0 = most frequent; ties by id), -1 for the rest. [V]."""
  frequencies = np.asarray(frequencies, np.float64)
  order = np.lexsort((np.arange(len(frequencies)), -frequencies))  # by -frequency, then by id
  order = order[frequencies[order] > 0]
  ranks = np.full(len(frequencies), -1, np.int64)
  ranks[order] = np.arange(len(order))
  return ranks


def nearest_neighbours(matrix, query_ids, k, chunk_size=512):
  """The k nearest rows (l2) of each query row among all rows but itself, in chunks of queries.

  Candidates are picked with float32 ||q||^2 + ||x||^2 - 2 q.x; the distances and dot products returned are
  recomputed in float64 from the rows themselves.

  Args:
    matrix: [V, H] embedding rows.
    query_ids: int [Q], rows to find neighbours for.
    k: int, neighbours per query (< V).
    chunk_size: int, queries per [chunk, V] distance block (512 x 30522 float32 = 62 MB).

  Returns:
    (distances, dots): float64 [Q, k] each, neighbours in order of increasing distance.
  """
  matrix = np.asarray(matrix)
  query_ids = np.asarray(query_ids, np.int64)
  if not 0 < k < matrix.shape[0]:
    raise ValueError(f"k={k} must be in [1, V - 1 = {matrix.shape[0] - 1}]")
  rows32 = matrix.astype(np.float32)
  rows64 = matrix.astype(np.float64)
  squared = np.einsum("vh,vh->v", rows32, rows32)                                      # [V]
  distances, dots = [], []
  for start in range(0, len(query_ids), chunk_size):
    ids = query_ids[start:start + chunk_size]                                          # [C]
    block = squared[ids, None] + squared[None, :] - 2. * rows32[ids] @ rows32.T       # [C, V]
    block[np.arange(len(ids)), ids] = np.inf                                           # not itself
    nearest = np.argpartition(block, k - 1, axis=1)[:, :k]                             # [C, k]
    diff = rows64[ids, None, :] - rows64[nearest]                                      # [C, k, H]
    dist = np.sqrt(np.einsum("ckh,ckh->ck", diff, diff))
    dot = np.einsum("ch,ckh->ck", rows64[ids], rows64[nearest])
    order = np.argsort(dist, axis=1, kind="stable")
    distances.append(np.take_along_axis(dist, order, axis=1))
    dots.append(np.take_along_axis(dot, order, axis=1))
  return np.concatenate(distances), np.concatenate(dots)


def frequency_table(matrix, ranks, buckets=BUCKETS, ks=KS):
  """Table 1 for an embedding matrix and the frequency rank of its rows.

  Args:
    matrix: [V, H] word-embedding rows.
    ranks: int [V], frequency rank per row, -1 for rows that are not ranked words.
    buckets: ((lo, hi), ...) half-open rank ranges.
    ks: neighbour counts.

  Returns:
    dict: "buckets" [[lo, hi], ...], "num_words" per bucket, and per row name of ROW_NAMES ("mean_norm",
    "knn_l2_k3", "knn_dot_k3", ...) the list of per-bucket means (None for an empty bucket).
  """
  matrix = np.asarray(matrix, np.float64)
  ranks = np.asarray(ranks)
  if ranks.shape != (matrix.shape[0],):
    raise ValueError(f"ranks {ranks.shape} must have one entry per matrix row ({matrix.shape[0]})")
  members = [np.flatnonzero((ranks >= lo) & (ranks < hi)) for lo, hi in buckets]
  queries = np.concatenate(members)
  distances, dots = nearest_neighbours(matrix, queries, max(ks))
  norms = np.linalg.norm(matrix, axis=1)
  table = {"buckets": [list(b) for b in buckets], "num_words": [len(m) for m in members]}
  mean = lambda values: float(values.mean()) if values.size else None
  ends = np.cumsum([0] + [len(m) for m in members])
  table["mean_norm"] = [mean(norms[m]) for m in members]
  for k in ks:
    table[f"knn_l2_k{k}"] = [mean(distances[a:b, :k]) for a, b in zip(ends[:-1], ends[1:])]
    table[f"knn_dot_k{k}"] = [mean(dots[a:b, :k]) for a, b in zip(ends[:-1], ends[1:])]
  return table


def table1(model, buckets=BUCKETS, ks=KS, language=LANGUAGE):
  """Table 1 for a LoadedModel's word-embedding matrix, words ranked by wordfreq (see `frequency_table`).

  Example:
    model = bert_flow_tf.loaders.load_model("all-minilm-l6-v2")
    print(table1_markdown(table1(model)))
  """
  vocab = tokenizer_lib.read_vocab(model.vocab_file)
  matrix = word_embedding_matrix(model)
  if matrix.shape[0] != len(vocab):
    raise ValueError(f"{model.vocab_file}: {len(vocab)} entries for a word-embedding matrix of "
                     f"{matrix.shape[0]} rows")
  ranks = frequency_ranks(word_frequencies(vocab, language))
  table = frequency_table(matrix, ranks, buckets, ks)
  table["examples"] = _examples(vocab, ranks, buckets)
  return table


def _examples(vocab, ranks, buckets, count=5):
  """The first `count` words of each bucket, by rank."""
  by_rank = {int(r): vocab[i] for i, r in enumerate(ranks) if r >= 0}
  return [[by_rank[r] for r in range(lo, min(hi, lo + count)) if r in by_rank] for lo, hi in buckets]


def _bucket_name(lo, hi):
  name = lambda n: f"{n // 1000}K" if n >= 1000 and n % 1000 == 0 else str(n)
  return f"[{name(lo)}, {name(hi)})"


def table1_markdown(table, paper=True):
  """Markdown of a `frequency_table` result; with `paper`, the paper's value after each of ours ("ours / paper")."""
  header = ["rank of word frequency"] + [_bucket_name(lo, hi) for lo, hi in table["buckets"]]
  rows = [["words in bucket"] + [str(n) for n in table["num_words"]]]
  for key, name in ROW_NAMES.items():
    if key not in table:
      continue
    ours = ["-" if v is None else f"{v:.2f}" for v in table[key]]
    if paper and [tuple(b) for b in table["buckets"]] == list(BUCKETS):
      ours = [f"{o} / {p:.2f}" for o, p in zip(ours, PAPER_TABLE1[key])]
    rows.append([name] + ours)
  return markdown.markdown_table(header, rows) + "\n"
