"""Beam's filesystems (local paths, gs://, s3://, hdfs://...) as the embedding store's filesystem seam.

`store_files` owns the store's layout and takes the filesystem as an argument; `BEAM_FILES` is that argument where
the pipeline reads keys and writes shards, so a store can live in a bucket.
"""
import contextlib
import uuid

from apache_beam.io.filesystems import FileSystems


class BeamFiles:
  """join, exists, match, open and an atomic create, through apache_beam.io.filesystems.FileSystems."""

  join = staticmethod(FileSystems.join)
  exists = staticmethod(FileSystems.exists)

  @staticmethod
  def match(pattern):
    return sorted(m.path for r in FileSystems.match([pattern]) for m in r.metadata_list)

  @staticmethod
  def open(path):
    return FileSystems.open(path)

  @staticmethod
  @contextlib.contextmanager
  def create_atomically(path):
    """Yields a binary file; its bytes appear at `path` (replacing a file there) only once the block succeeds.
    The temporary file, `<path>.tmp-<random>`, does not end in .npz: readers never see it."""
    tmp = f"{path}.tmp-{uuid.uuid4().hex}"
    try:
      with FileSystems.create(tmp) as f:
        yield f
      FileSystems.rename([tmp], [path])
    except BaseException:
      if FileSystems.exists(tmp):
        FileSystems.delete([tmp])
      raise


BEAM_FILES = BeamFiles()
