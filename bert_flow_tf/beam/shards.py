"""The embedding store's shards through Beam's filesystems (local paths, gs://, s3://, hdfs://...).

The layout is the store's own (`bert_flow_tf/embedding/store.py`): <folder>/<quantity>/<shard name>.npz with
`keys` S16 [k] and `vectors` float32 [k, H]. Shards are named by a hash of their sorted keys (`store.shard_name`),
so one group of sentences gets one name in every quantity's folder, and writing it again (a retried bundle)
replaces the file with the same bytes instead of adding a second shard.

Legend: k = sentences in a shard, H = hidden size.
"""
import io
import logging
import uuid
import zipfile

import numpy as np
from apache_beam.io.filesystems import FileSystems

from bert_flow_tf.embedding import store as store_lib


def shard_paths(folder, name):
  """The paths of the shards of quantity `name` under the store folder `folder` (sorted; [] when none)."""
  pattern = FileSystems.join(folder, name, "*.npz")
  return sorted(m.path for r in FileSystems.match([pattern]) for m in r.metadata_list)


def read_keys(path):
  """np.bytes_ S16 [k]: the keys of one shard (its vectors are not read); [] for an unreadable shard, which the
  store deletes and encodes again when it next opens."""
  try:
    with FileSystems.open(path) as f, np.load(io.BytesIO(f.read())) as data:
      return data["keys"]
  except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as e:
    logging.warning("store shard %s is unreadable (%s); its sentences count as missing", path, e)
    return np.zeros([0], "S16")


def write_shard(folder, keys, values):
  """Writes one shard per quantity, atomically: a temporary file beside it, then a rename.

  Args:
    folder: str, the store folder (<cached_dir>/<model key>).
    keys: np.bytes_ S16 [k], sorted.
    values: dict quantity name -> np.float32 [k, H].

  Returns:
    str, the shard's file name (the same in every quantity's folder).
  """
  if np.any(keys[1:] <= keys[:-1]):
    raise ValueError(f"shard keys must be sorted and distinct ({len(keys)} keys)")
  name = store_lib.shard_name(keys)
  for quantity, vectors in sorted(values.items()):
    if vectors.shape[0] != len(keys) or not np.all(np.isfinite(vectors)):
      raise ValueError(f"quantity {quantity!r}: vectors {vectors.shape} for {len(keys)} keys, or not finite")
    final = FileSystems.join(folder, quantity, name)
    if FileSystems.exists(final):  # written by an earlier try of this bundle: same keys, same vectors
      continue
    buffer = io.BytesIO()
    np.savez(buffer, keys=keys, vectors=np.asarray(vectors, np.float32))
    tmp = f"{final}.tmp-{uuid.uuid4().hex}"        # not *.npz: the store never reads a partial file
    with FileSystems.create(tmp) as f:
      f.write(buffer.getvalue())
    FileSystems.rename([tmp], [final])
  return name
