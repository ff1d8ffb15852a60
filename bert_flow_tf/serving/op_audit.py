"""Op audit of exported SavedModels: can the TF Serving model server run every op, and from which release on?

The model server runs core TensorFlow ops and, since TF Serving 2.2, tensorflow-text's `ops_lib`. It cannot run
Python ops (`PyFunc`, `EagerPyFunc`: they call back into a Python interpreter the server does not have) nor ops
of any other custom library. Some tensorflow-text ops reached the server later than 2.2 (from tensorflow/serving's
BUILD files and release notes): `TEXT_OP_SERVING_SINCE`.

An op counts as tensorflow-text's when one of the installed tensorflow-text op libraries registers it, and as core
when TensorFlow registers it and no tensorflow-text library does. Core ops are checked against the TensorFlow of
this process; whether an older TF reads the graph is what `scripts/check_serving_tf220.sh` checks, by loading it.
"""
import dataclasses
import glob
import importlib.util
import os

import tensorflow as tf
from tensorflow.core.framework import op_def_pb2
from tensorflow.core.protobuf import saved_model_pb2
from tensorflow.python.client import pywrap_tf_session

PYTHON_OPS = frozenset({"PyFunc", "PyFuncStateless", "EagerPyFunc"})
# The first TF Serving release that links tensorflow-text's full ops_lib.
OPS_LIB_SERVING_SINCE = (2, 2)
# Oldest TF Serving release whose model server has each tensorflow-text op. A tensorflow-text op not listed here
# fails the audit: its release is unknown, and guessing would make the printed minimum wrong.
TEXT_OP_SERVING_SINCE = {
    "NormalizeUTF8": OPS_LIB_SERVING_SINCE,
    "CaseFoldUTF8": OPS_LIB_SERVING_SINCE,
    "WordpieceTokenizeWithOffsets": OPS_LIB_SERVING_SINCE,
    "FastWordpieceTokenizeWithOffsets": (2, 10),
    "FastBertNormalize": (2, 12),  # so FastBertTokenizer
    "TFText>RoundRobinTrim": (2, 20),
    "TFText>RoundRobinGenerateMasks": (2, 20),
}
CORE, TEXT, PYTHON, UNKNOWN = "core", "tensorflow-text", "python", "unregistered"


@dataclasses.dataclass
class Audit:
  """The ops of one SavedModel, by source, and what keeps TF Serving from running it.

  Attributes:
    path: str, the SavedModel directory.
    ops: dict source (CORE, TEXT, PYTHON, UNKNOWN) -> sorted list of op names.
    problems: list of str, one line each; empty when the server can run every op.
    oldest_serving: (major, minor), the oldest TF Serving release with all its ops (core ops: see the module
      notes), or None when there are problems.
  """
  path: str
  ops: dict
  problems: list
  oldest_serving: tuple

  def servable(self):
    return not self.problems


def saved_model_ops(saved_model_dir):
  """Every op type in a SavedModel's meta graphs: graph nodes and the function library's nodes.

  Returns:
    set of str.
  """
  proto = saved_model_pb2.SavedModel()
  with tf.io.gfile.GFile(os.path.join(saved_model_dir, "saved_model.pb"), "rb") as f:
    proto.ParseFromString(f.read())
  ops = set()
  for meta_graph in proto.meta_graphs:
    ops.update(node.op for node in meta_graph.graph_def.node)
    for function in meta_graph.graph_def.library.function:
      ops.update(node.op for node in function.node_def)
  return ops


def registered_ops():
  """(core ops, tensorflow-text ops): frozensets of the op names this process's TF and tensorflow-text register.

  Loads each tensorflow-text op library (a no-op for one already loaded) and reads the ops it registers.
  """
  spec = importlib.util.find_spec("tensorflow_text")
  if spec is None:
    raise ImportError("the op audit needs tensorflow-text installed, to tell its ops from unknown ones")
  text = set()
  for location in spec.submodule_search_locations:
    for library in glob.glob(os.path.join(location, "python", "**", "_*.so"), recursive=True):
      text.update(_op_names(pywrap_tf_session.TF_GetOpList(pywrap_tf_session.TF_LoadLibrary(library))))
  buffer = pywrap_tf_session.TF_GetAllOpList()
  every = _op_names(pywrap_tf_session.TF_GetBuffer(buffer))
  return frozenset(every - text), frozenset(text)


def _op_names(serialized_op_list):
  op_list = op_def_pb2.OpList()
  op_list.ParseFromString(serialized_op_list)
  return {op.name for op in op_list.op}


def audit_saved_model(saved_model_dir, core_only=False, registry=None):
  """Audits one SavedModel.

  Args:
    saved_model_dir: str, a directory with saved_model.pb.
    core_only: bool, also fail on tensorflow-text ops (the tokenizer-free ids model).
    registry: (core ops, text ops) from `registered_ops()`; computed when None.

  Returns:
    Audit.
  """
  core, text = registry or registered_ops()
  ops = {CORE: [], TEXT: [], PYTHON: [], UNKNOWN: []}
  for op in sorted(saved_model_ops(saved_model_dir)):
    source = PYTHON if op in PYTHON_OPS else CORE if op in core else TEXT if op in text else UNKNOWN
    ops[source].append(op)
  problems = [f"Python op {op}: the model server has no Python interpreter" for op in ops[PYTHON]]
  problems += [f"op {op} is registered by neither TensorFlow nor tensorflow-text" for op in ops[UNKNOWN]]
  if core_only:
    problems += [f"tensorflow-text op {op} in a model that must use core TensorFlow ops only" for op in ops[TEXT]]
  problems += [f"tensorflow-text op {op} has no known oldest TF Serving release (add it to "
               f"TEXT_OP_SERVING_SINCE in {__name__})" for op in ops[TEXT] if op not in TEXT_OP_SERVING_SINCE]
  oldest = None
  if not problems:
    oldest = max([(0, 0)] + [TEXT_OP_SERVING_SINCE[op] for op in ops[TEXT]])
  return Audit(saved_model_dir, ops, problems, oldest)


def audit_export(export_dir):
  """Audits every `<kind>/<version>/` SavedModel under an export directory (see bert_flow_tf.serving.export).

  The `ids` model must use core ops only.

  Returns:
    dict "kind/version" -> Audit, sorted by name.

  Raises:
    FileNotFoundError: no SavedModel under `export_dir`.
  """
  found = sorted(glob.glob(os.path.join(export_dir, "*", "*", "saved_model.pb")))
  if not found:
    raise FileNotFoundError(f"no <kind>/<version>/saved_model.pb under {export_dir}")
  registry = registered_ops()
  audits = {}
  for pb in found:
    path = os.path.dirname(pb)
    kind = os.path.basename(os.path.dirname(path))
    audits[f"{kind}/{os.path.basename(path)}"] = audit_saved_model(path, core_only=kind == "ids", registry=registry)
  return audits


def format_release(release):
  """(2, 12) -> "2.12"; (0, 0) (no tensorflow-text op) -> "any"."""
  return "any" if release == (0, 0) else f"{release[0]}.{release[1]}"


def report_lines(name, audit):
  """The audit of one SavedModel as printable lines: its ops by source, then problems or the oldest release."""
  counts = ", ".join(f"{len(audit.ops[s])} {s}" for s in (CORE, TEXT, PYTHON, UNKNOWN))
  lines = [f"{name}: {sum(map(len, audit.ops.values()))} op types ({counts})"]
  for source in (CORE, TEXT, PYTHON, UNKNOWN):
    if audit.ops[source]:
      names = [f"{op} (TF Serving >= {format_release(TEXT_OP_SERVING_SINCE[op])})"
               if source == TEXT and op in TEXT_OP_SERVING_SINCE else op for op in audit.ops[source]]
      lines.append(f"  {source}: {', '.join(names)}")
  lines += [f"  NOT SERVABLE: {problem}" for problem in audit.problems]
  if audit.servable():
    lines.append(f"  oldest TF Serving release with all its tensorflow-text ops: "
                 f"{format_release(audit.oldest_serving)} (core ops checked against TF {tf.__version__})")
  return lines
