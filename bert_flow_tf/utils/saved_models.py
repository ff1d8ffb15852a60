"""Loading a SavedModel with one-line errors: a missing, cut or corrupt file is named with what is wrong with it.

`load(path)` is tf.saved_model.load; when that fails, `damage(path)` looks at the files TensorFlow read, in the order
it reads them, and the first one found wrong replaces TensorFlow's message (which spans lines, names no file, or
blames the `tags=` argument for an empty saved_model.pb):

  saved_model.pb                  missing, unreadable, empty, not parsing, or holding no MetaGraph
  variables/variables.index       missing, unreadable, or not a checkpoint index (cut or corrupt)
  variables/variables.data-*      missing, or a variable that reads past its end (cut) or fails its checksum

A failure whose files are all sound (an op that is not registered, say) raises as TensorFlow raised it.
"""
import glob
import os

from google.protobuf import message
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from bert_flow_tf.utils import errors

GRAPH_FILE = "saved_model.pb"
_VARIABLES = os.path.join("variables", "variables")  # the checkpoint prefix of a SavedModel's variables


def load(path):
  """tf.saved_model.load(path); a damaged SavedModel raises errors.UserError (or FileNotFoundError, PermissionError)
  naming its file (`damage`)."""
  try:
    return tf.saved_model.load(path)
  except (OSError, ValueError, IndexError, tf.errors.OpError) as e:  # IndexError: a cut variables file
    found = damage(path)
    if found is None:
      raise
    raise found from e


def damage(path):
  """The first thing wrong with the files of the SavedModel folder `path`, as an exception naming the file
  (errors.UserError, or FileNotFoundError / PermissionError), or None when they look sound."""
  graph = os.path.join(path, GRAPH_FILE)
  if not os.path.isdir(path):
    return errors.missing_file("no SavedModel folder", path)
  if not os.path.isfile(graph):
    return errors.missing_file(f"no {GRAPH_FILE}: not a SavedModel", graph)
  try:
    with open(graph, "rb") as f:
      saved = saved_model_pb2.SavedModel.FromString(f.read())
  except OSError as e:
    return e
  except message.DecodeError:
    return errors.UserError(f"{GRAPH_FILE} does not parse as a SavedModel: cut short or corrupt", graph)
  if not saved.meta_graphs:
    size = os.path.getsize(graph)
    return errors.UserError(f"{'empty' if size == 0 else f'{size}-byte'} {GRAPH_FILE}: it holds no MetaGraph (cut "
                            "short or corrupt)", graph)
  return _variables_damage(os.path.join(path, _VARIABLES))


def _variables_damage(prefix):
  """What is wrong with the checkpoint `prefix` (variables.index and its data shards), or None."""
  index = prefix + ".index"
  for path in (os.path.dirname(prefix), index):
    if not os.path.exists(path):
      return errors.UserError("the SavedModel's variables are missing", path)
  found = glob.glob(glob.escape(prefix) + ".data-?????-of-?????")
  count = int(found[0][-5:]) if found else 1
  shards = [f"{prefix}.data-{i:05d}-of-{count:05d}" for i in range(count)]
  for shard in shards:
    if not os.path.exists(shard):
      return errors.UserError("the SavedModel's variables are missing", shard)
  data = shards[0] if count == 1 else f"{prefix}.data-*"
  try:
    reader = tf.train.load_checkpoint(prefix)
  except (tf.errors.OpError, ValueError) as e:
    return errors.UserError(f"the SavedModel's variables index is cut short or corrupt ({errors.brief(e)})", index)
  for name in sorted(reader.get_variable_to_shape_map()):
    try:
      reader.get_tensor(name)
    except IndexError:  # "Read less bytes than requested"
      return errors.UserError(f"the SavedModel's variables are cut short: the file ends before {name}", data)
    except (tf.errors.OpError, ValueError) as e:
      return errors.UserError(f"the SavedModel's variables are corrupt: {name} does not read ({errors.brief(e)})",
                              data)
  return None
