"""Beam's filesystems (local paths, gs://, s3://, hdfs://...) as the embedding store's filesystem seam.

`store_files` owns the store's layout and takes the filesystem as an argument; `BEAM_FILES` is that argument where
the pipeline reads keys and writes shards, so a store can live in a bucket. Temporary files carry the writer's pid
and host as every writer's do (`io_utils.tmp_name`), so `sweep_stale` can tell a killed worker's from a live one's.
"""
import contextlib

from apache_beam.io.filesystem import BeamIOError
from apache_beam.io.filesystems import FileSystems

from bert_flow_tf.utils import io_utils


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
    The temporary file, `.tmp-<pid>-<host>-<random>` beside `path`, does not end in .npz: readers never see it."""
    tmp = FileSystems.join(FileSystems.split(path)[0], io_utils.tmp_name())
    try:
      with FileSystems.create(tmp) as f:
        yield f
      FileSystems.rename([tmp], [path])
    except BaseException:
      if FileSystems.exists(tmp):
        FileSystems.delete([tmp])
      raise

  def sweep_stale(self, folder):
    """Removes the temporary files in `folder` that killed writers on this host left (their process is gone);
    a live writer's, and other hosts', are kept."""
    stale = [path for path in self.match(FileSystems.join(folder, ".tmp-*"))
             if io_utils.left_by_dead_writer(FileSystems.split(path)[1])]
    try:
      if stale:
        FileSystems.delete(stale)
    except BeamIOError:  # another run swept one first: best effort
      pass


BEAM_FILES = BeamFiles()
