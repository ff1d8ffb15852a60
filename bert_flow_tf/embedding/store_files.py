"""The embedding store's files: the one owner of their layout, for the store, the streamed fits and Beam.

  <cache_dir>/<model key>/model.json             what the key stands for (`describe_model`)
  <cache_dir>/<model key>/<quantity>/<shard>.npz  keys: S16 [k] (`sentence_keys`), sorted and distinct;
                                                  vectors: float32 [k, H]; both stored uncompressed (np.savez)

The model key hashes the model's files (names, sizes, modification times), the vocabulary, do_lower_case and
max_seq_length. A shard is named by a hash of its keys (`shard_name`), so a writer that repeats itself (a retried
Beam bundle) replaces a shard instead of adding one. Two writers that did not see each other (two processes filling
one store) may store a sentence in two shards, and a quantity whose corrupt shard was deleted and re-encoded may
hold a sentence under another shard name than its sibling quantity: readers therefore go by key (`KeyIndex`, first
occurrence wins), never by shard name or count.

Files are reached through a filesystem seam (`LOCAL`, or Beam's `apache_beam.io.filesystems` in
bert_flow_tf/beam/filesystem.py): join, exists, match, open, and an atomic create (a temporary file, then a rename).

Legend: k = rows in a shard, n = keys asked for, H = hidden size.
"""
import contextlib
import glob
import hashlib
import json
import os
import zipfile
import zlib

import numpy as np

from bert_flow_tf.utils import io_utils

STORE_VERSION = 1
DEFAULT_SHARD_SIZE = 16384
INFO_FILE = "model.json"
KEY_BYTES = 16
_CHECK_BYTES = 8 * 2 ** 20   # read a block at a time when a shard is checked


class LocalFiles:
  """The filesystem seam on this machine's filesystem (the store's own writes go through io_utils)."""

  join = staticmethod(os.path.join)
  exists = staticmethod(os.path.exists)

  @staticmethod
  def match(pattern):
    return sorted(glob.glob(pattern))

  @staticmethod
  def open(path):
    return open(path, "rb")

  @staticmethod
  @contextlib.contextmanager
  def create_atomically(path):
    """Yields a binary file; its bytes appear at `path` only once the block succeeds."""
    with io_utils.atomic_path(path) as tmp:
      with open(tmp, "wb") as f:
        yield f


LOCAL = LocalFiles()


def model_fingerprint(model_path):
  """A string that changes when the model files change: their names, sizes and modification times.

  Args:
    model_path: a model directory, or a checkpoint prefix (every file starting with it counts).
  """
  model_path = os.path.realpath(model_path)
  if os.path.isdir(model_path):
    files = [os.path.join(root, name) for root, _, names in os.walk(model_path) for name in names]
  else:
    files = glob.glob(glob.escape(model_path) + "*")
  parts = [model_path]
  for path in sorted(files):
    stat = os.stat(path)
    parts.append(f"{os.path.relpath(path, os.path.dirname(model_path))}:{stat.st_size}:{stat.st_mtime_ns}")
  return "\n".join(parts)


def describe_model(embedder):
  """dict: what a store key stands for (store version, model files, vocab, casing, max_seq_length, format).

  Args:
    embedder: a SentenceEmbedder (its model and max_seq_length).
  """
  model = embedder.loaded
  return {"store_version": STORE_VERSION, "model": model.source,
          "model_files": model_fingerprint(model.files),
          "vocab": model_fingerprint(model.vocab_file), "do_lower_case": model.do_lower_case,
          "max_seq_length": embedder.max_seq_length, "format": model.format}


def model_key(description):
  """The store's folder name for a `describe_model` dict: 32 hex digits."""
  return hashlib.sha256(json.dumps(description, sort_keys=True).encode("utf-8")).hexdigest()[:32]


def model_folder(cache_dir, description, fs=LOCAL):
  """<cache_dir>/<model key> of a `describe_model` dict; writes its model.json there when missing."""
  folder = fs.join(cache_dir, model_key(description))
  info = fs.join(folder, INFO_FILE)
  if not fs.exists(info):
    with fs.create_atomically(info) as f:
      f.write((json.dumps(description, indent=2, sort_keys=True) + "\n").encode("utf-8"))
  return folder


def sentence_keys(sentences):
  """np.bytes_ S16 [n]: the first 16 bytes of each sentence's UTF-8 sha256."""
  keys = [hashlib.sha256(s.encode("utf-8")).digest()[:KEY_BYTES] for s in sentences]
  return np.array(keys, dtype=f"S{KEY_BYTES}").reshape(len(keys))


def shard_name(keys):
  """The file name of a shard holding np.bytes_ S16 [k] `keys` (in that order): "<32 hex digits>.npz"."""
  return hashlib.sha256(np.asarray(keys, f"S{KEY_BYTES}").tobytes()).hexdigest()[:32] + ".npz"


def shard_paths(folder, quantity, fs=LOCAL):
  """The shard files of `quantity` in the store folder `folder`, sorted ([] when none). Temporary files
  (`*.tmp-*`, `.tmp-*`) are never listed."""
  return fs.match(fs.join(folder, quantity, "*.npz"))


def write_shard(folder, quantity, keys, vectors, fs=LOCAL):
  """Writes one shard of `quantity` atomically (replacing a shard of the same keys); returns its path.

  Args:
    folder: str, a store folder (<cache_dir>/<model key>).
    quantity: str, e.g. "mean-3".
    keys: np.bytes_ S16 [k], sorted and distinct.
    vectors: float32 [k, H], finite.
  """
  keys, vectors = np.asarray(keys, f"S{KEY_BYTES}"), np.asarray(vectors, np.float32)
  if keys.ndim != 1 or np.any(keys[1:] <= keys[:-1]):
    raise ValueError(f"shard keys must be sorted and distinct ({len(keys)} keys)")
  if vectors.ndim != 2 or len(vectors) != len(keys) or not np.all(np.isfinite(vectors)):
    raise ValueError(f"quantity {quantity!r}: vectors {vectors.shape} for {len(keys)} keys, or not finite")
  path = fs.join(folder, quantity, shard_name(keys))
  with fs.create_atomically(path) as f:
    np.savez(f, keys=keys, vectors=vectors)
  return path


def read_keys(path, fs=LOCAL):
  """np.bytes_ S16 [k]: the keys of the shard at `path` (its vectors are not read). Raises ValueError (or OSError,
  zipfile.BadZipFile) for a file that is not a shard."""
  with fs.open(path) as f, np.load(f) as data:
    keys = data["keys"]
  if keys.dtype != np.dtype(f"S{KEY_BYTES}") or keys.ndim != 1:
    raise ValueError(f"{path}: keys are {keys.dtype} {keys.shape}, not S{KEY_BYTES} [k]")
  return keys


def shard_member(path, name):
  """np.memmap, read-only, of the member `name` ("keys" or "vectors") of the local shard at `path`: the file's
  bytes in place (np.savez stores members uncompressed); indexing it reads only the pages of the rows asked for."""
  shape, dtype, fortran_order, _, offset, _ = _member_layout(path, name)
  return np.memmap(path, dtype, "r", offset, shape, "F" if fortran_order else "C")


def _member_layout(path, name):
  """(shape, dtype, fortran order, offset of the member's bytes, offset of its array data, its ZipInfo) of the
  array `name` in the npz at `path`; raises ValueError when the member is compressed or its size is not the
  shape's."""
  with zipfile.ZipFile(path) as archive:
    info = archive.getinfo(name + ".npy")
    if info.compress_type != zipfile.ZIP_STORED:
      raise ValueError(f"{path}: {name} is compressed; the store writes shards with np.savez (uncompressed)")
    with archive.open(info) as member:
      read_header = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
      shape, fortran_order, dtype = read_header[np.lib.format.read_magic(member)](member)
      header_bytes = member.tell()
  with open(path, "rb") as f:                                   # the member's bytes: after the local file header
    f.seek(info.header_offset + 26)
    name_length, extra_length = np.frombuffer(f.read(4), "<u2")
  start = info.header_offset + 30 + int(name_length) + int(extra_length)
  if info.file_size - header_bytes != int(np.prod(shape)) * dtype.itemsize:
    raise ValueError(f"{path}: {name} holds {info.file_size - header_bytes} data bytes for shape {shape}")
  return shape, dtype, fortran_order, start, start + header_bytes, info


def _check_member(path, name, finite):
  """Reads the member `name` of the shard at `path` a block of _CHECK_BYTES at a time (memory stays flat).
  Raises ValueError when its bytes are cut short, do not match the zip's CRC or (`finite`) hold NaN or inf."""
  _, dtype, _, start, data, info = _member_layout(path, name)
  with open(path, "rb") as f:
    f.seek(start)
    crc = zlib.crc32(f.read(data - start))                      # the npy header
    left = info.file_size - (data - start)
    step = max(1, _CHECK_BYTES // dtype.itemsize) * dtype.itemsize
    while left > 0:
      block = f.read(min(step, left))
      if len(block) != min(step, left):
        raise ValueError(f"{path}: {name} is cut short")
      if finite and not np.all(np.isfinite(np.frombuffer(block, dtype))):
        raise ValueError(f"{path}: {name} holds NaN or inf")
      crc = zlib.crc32(block, crc)
      left -= len(block)
  if crc != info.CRC:
    raise ValueError(f"{path}: {name} does not match its CRC")


def check_shard(path, width):
  """np.bytes_ S16 [k]: the keys of the local shard at `path`, once every byte of it is checked (zip CRC, key
  dtype, vectors float32 [k, width], finite), a block at a time. Raises ValueError, OSError, KeyError,
  zipfile.BadZipFile or EOFError for a shard that fails."""
  keys, vectors = shard_member(path, "keys"), shard_member(path, "vectors")
  if not (keys.dtype == np.dtype(f"S{KEY_BYTES}") and keys.ndim == 1 and vectors.dtype == np.float32
          and vectors.shape == (len(keys), width)):
    raise ValueError(f"holds keys {keys.dtype} {keys.shape} and vectors {vectors.dtype} {vectors.shape} "
                     f"(want float32 width {width})")
  keys = np.array(keys)
  del vectors
  _check_member(path, "keys", False)
  _check_member(path, "vectors", True)
  return keys


def in_sorted(sorted_keys, keys):
  """bool [n]: which of `keys` are in `sorted_keys` (np.bytes_ S16, sorted): the one test of "which keys are
  stored"."""
  pos = np.searchsorted(sorted_keys, keys)
  found = pos < len(sorted_keys)
  found[found] = sorted_keys[pos[found]] == keys[found]
  return found


class KeyIndex:
  """Where each key of one quantity lies: sorted keys S16 [N] with (shard, row) int64 [N, 2], and the shards'
  sources (a local path, read memory-mapped, or float32 [k, H] in memory). A key stored in several shards is found
  in the first one added (the index sorts stably), so every key is read once whatever the store's history.

  Args:
    width: int, H.
  """

  def __init__(self, width):
    self.width = width
    self.sources = []
    self.keys = np.zeros([0], f"S{KEY_BYTES}")
    self.where = np.zeros([0, 2], np.int64)

  def add(self, shard_keys, sources):
    """Adds shards: their keys (each S16 [k]) and sources, sorting the index once."""
    where = [np.stack([np.full(len(keys), len(self.sources) + i), np.arange(len(keys))], axis=1)
             for i, keys in enumerate(shard_keys)]
    self.sources.extend(sources)
    keys = np.concatenate([self.keys, *shard_keys])
    where = np.concatenate([self.where, *where]).reshape(-1, 2)
    order = np.argsort(keys, kind="stable")
    self.keys, self.where = keys[order], where[order]

  def find(self, keys):
    """bool [n]: which of `keys` are stored."""
    return in_sorted(self.keys, keys)

  def locate(self, keys):
    """int64 [n, 2]: (shard, row) of each of `keys`, all stored (its first shard when stored twice)."""
    return self.where[np.searchsorted(self.keys, keys)]

  def read(self, where):
    """float32 [n, H]: the rows at `where` (int [n, 2] of (shard, row)), reading only those rows."""
    return read_rows(self.sources, where, self.width)


def read_rows(sources, where, width):
  """float32 [n, width]: the rows at `where` (int [n, 2] of (shard, row)) of shards `sources` (local paths, read
  memory-mapped, or float32 [k, width] arrays), reading only those rows."""
  out = np.empty([len(where), width], np.float32)
  for shard in np.unique(where[:, 0]):
    rows = where[:, 0] == shard
    source = sources[shard]
    vectors = shard_member(source, "vectors") if isinstance(source, str) else source
    out[rows] = vectors[where[rows, 1]]
  return out
