"""Siamese training data: sentence pairs -> padded id/mask arrays and tf.data batches.

Each sentence is packed alone as `[CLS] pieces [SEP]` (numpy, so tf.data can slice fixed arrays); `dupe_factor`
copies get one random piece [MASK]ed, as the original; regression labels are scaled to [0, 1].

Legend: N = pairs, S = sequence length.
"""
import numpy as np
import tensorflow as tf

from bert_flow_tf.modeling import packing
from bert_flow_tf.siamese.config import SPLITS
from bert_flow_tf.utils import tf_data



def piece_arrays(tokenizer, sentences, max_pieces):
  """list of str -> list of np.int32 word-piece id arrays, each cut to `max_pieces`."""
  ragged = tokenizer.tokenize_list(sentences)
  values, splits = ragged.flat_values.numpy(), ragged.row_splits.numpy()
  return [values[s:min(e, s + max_pieces)] for s, e in zip(splits[:-1], splits[1:])]


def pack_arrays(pieces, tokenizer, seq_length):
  """`tokenizer.pack` for a list of N id arrays -> (ids, mask) np.int32 [N, S]."""
  values = np.concatenate(pieces).astype(np.int32) if pieces else np.zeros([0], np.int32)
  ragged = tf.RaggedTensor.from_row_lengths(values, np.array([len(p) for p in pieces], np.int64))
  packed = tokenizer.pack(ragged, seq_length)
  return packed["input_word_ids"].numpy(), packed["input_mask"].numpy()


def mask_one_piece(pieces, mask_id, rng):
  """A copy of each id array with one random position set to `mask_id` (empty arrays stay empty)."""
  out = []
  for p in pieces:
    p = p.copy()
    if len(p):
      p[rng.integers(len(p))] = mask_id
    out.append(p)
  return out


def make_features(pair_sets, task, tokenizer, max_seq_length, dupe_factor=1, num_examples=-1, seed=0):
  """Packs labelled pairs into numpy features (the dict `SiameseModel.__call__` reads, without batching).

  Args:
    pair_sets: list of PairSet.
    task: Task (for is_regression, label_min, label_max).
    tokenizer: BertTokenizer.
    max_seq_length: int S.
    dupe_factor: int. Copies 2..k get one [MASK]ed piece per sentence.
    num_examples: int. -1 all labelled, else only the first N after a shuffle by `seed` keep `labeled` = 1.
    seed: int.

  Returns:
    dict of np arrays with N * dupe_factor rows (copy t of pair i at row t * N + i).
  """
  sentences_a = [s for ps in pair_sets for s in ps.sentences_a]
  sentences_b = [s for ps in pair_sets for s in ps.sentences_b]
  labels = np.concatenate([ps.labels for ps in pair_sets]) if pair_sets else np.zeros([0])
  n = len(labels)
  if task.is_regression:
    labels = ((labels.astype(np.float64) - task.label_min) / (task.label_max - task.label_min)).astype(np.float32)
  else:
    labels = labels.astype(np.int32)
  labeled = np.ones([n], np.float32)
  rng = np.random.default_rng(seed)
  if num_examples >= 0:
    labeled[:] = 0.0
    labeled[rng.permutation(n)[:num_examples]] = 1.0
  pieces_a = piece_arrays(tokenizer, sentences_a, max_seq_length - 2)
  pieces_b = piece_arrays(tokenizer, sentences_b, max_seq_length - 2)
  if dupe_factor > 1 and tokenizer.mask_id is None:
    raise ValueError(f"dupe_factor={dupe_factor} needs a [MASK] token, which the vocab lacks")
  copies_a, copies_b = [pieces_a], [pieces_b]
  for _ in range(dupe_factor - 1):
    copies_a.append(mask_one_piece(pieces_a, tokenizer.mask_id, rng))
    copies_b.append(mask_one_piece(pieces_b, tokenizer.mask_id, rng))
  ids_a, mask_a = pack_arrays(sum(copies_a, []), tokenizer, max_seq_length)
  ids_b, mask_b = pack_arrays(sum(copies_b, []), tokenizer, max_seq_length)
  return {"ids_a": ids_a, "mask_a": mask_a, "ids_b": ids_b, "mask_b": mask_b,
          "label": np.tile(labels, dupe_factor), "labeled": np.tile(labeled, dupe_factor),
          "is_real": np.ones([n * dupe_factor], np.float32)}


def _trim_to_longest(batch):
  """Cuts each side of a padded batch to its longest sentence (dynamic S, `packing.padded_length`)."""
  out = dict(batch)
  for side in ("a", "b"):
    length = packing.padded_length(tf.reduce_sum(batch[f"mask_{side}"], axis=1), tf.shape(batch[f"ids_{side}"])[1])
    out[f"ids_{side}"] = batch[f"ids_{side}"][:, :length]
    out[f"mask_{side}"] = batch[f"mask_{side}"][:, :length]
  return out


def pair_dataset(features, batch_size, static_shapes, order=None):
  """Batches features (rows in `order`, default as given) into a tf.data.Dataset, dropping a partial batch."""
  if order is not None:
    features = {k: v[order] for k, v in features.items()}
  dataset = tf.data.Dataset.from_tensor_slices(features).batch(batch_size, drop_remainder=True)
  if not static_shapes:
    dataset = dataset.map(_trim_to_longest)
  return tf_data.untuned(dataset.prefetch(2))


def pad_rows(features, multiple):
  """Pads features to a multiple of `multiple` rows with copies of row 0 marked `is_real` = 0."""
  n = len(features["is_real"])
  extra = -n % multiple
  if not extra:
    return features
  out = {k: np.concatenate([v, np.repeat(v[:1], extra, axis=0)]) for k, v in features.items()}
  out["is_real"][n:] = 0.0
  return out


def split_sets(task, splits):
  """The PairSets of `task` in `splits` (in order); a ValueError naming the empty ones."""
  sets = {"train": task.train, "dev": task.dev, "test": task.test}
  empty = [s for s in splits if not sets[s]]
  if empty:
    raise ValueError(f"task {task.name!r} has no data in split(s) {empty} here; present: "
                     f"{[s for s in SPLITS if sets[s]]} (for SNLI without its train files use "
                     "train_splits=('dev', 'test'))")
  return [ps for s in splits for ps in sets[s]]
