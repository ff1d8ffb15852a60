"""Loads a SavedModel as the TF Serving model server does, and runs its signatures: a TF1 session.

The server loads the `serve` meta graph into a session and feeds and fetches the tensors the SignatureDef names;
it never calls the Python functions of a TF2 SavedModel. This module does the same with
`tf.compat.v1.saved_model.loader.load`. It imports TensorFlow alone (tensorflow-text only when asked, before
loading, as the server links its ops), so it runs in a venv of another TF version too:

  python -m bert_flow_tf.serving.session_loader [--tensorflow_text] REQUESTS_JSON OUT_NPZ

REQUESTS_JSON is a list of {"saved_model": dir, "signature": name, "inputs": {input name: nested list}}; strings
are UTF-8 text, numbers are cast to the signature's dtype. OUT_NPZ holds "<i>/<output name>" for request i, plus
"tf_version" and "tensorflow_text_loaded" (whether tensorflow_text was imported in this process); string outputs are
fixed-width bytes arrays.
"""
import json
import sys

import numpy as np
import tensorflow as tf

SERVE_TAG = "serve"


class SessionModel:
  """One SavedModel's `serve` meta graph in its own graph and TF1 session."""

  def __init__(self, saved_model_dir):
    self.graph = tf.Graph()
    self.session = tf.compat.v1.Session(graph=self.graph)
    with self.graph.as_default():
      self.meta_graph = tf.compat.v1.saved_model.loader.load(self.session, [SERVE_TAG], saved_model_dir)

  def run(self, signature_name, inputs):
    """Feeds `inputs` (dict input name -> array-like) through the SignatureDef's tensor names.

    Returns:
      dict output name -> np.ndarray.

    Raises:
      KeyError: an unknown signature, or inputs that are not exactly the signature's.
    """
    signature = self.meta_graph.signature_def[signature_name]
    if set(inputs) != set(signature.inputs):
      raise KeyError(f"signature {signature_name} takes {sorted(signature.inputs)}, got {sorted(inputs)}")
    feed = {}
    for name, info in signature.inputs.items():
      dtype = tf.dtypes.as_dtype(info.dtype)
      value = inputs[name]
      feed[info.name] = (np.array(_utf8(value), dtype=object) if dtype == tf.string
                         else np.asarray(value, dtype.as_numpy_dtype))
    names = sorted(signature.outputs)
    values = self.session.run([signature.outputs[n].name for n in names], feed_dict=feed)
    return dict(zip(names, values))

  def close(self):
    self.session.close()


def _utf8(value):
  """Nested lists of str/bytes -> the same nesting of bytes."""
  if isinstance(value, (list, tuple, np.ndarray)):
    return [_utf8(v) for v in value]
  return value.encode("utf-8") if isinstance(value, str) else value


def run_requests(requests):
  """Runs each {"saved_model", "signature", "inputs"} request; one session per SavedModel.

  Returns:
    list of dict output name -> np.ndarray, in request order.
  """
  models = {}
  results = []
  try:
    for request in requests:
      path = request["saved_model"]
      if path not in models:
        models[path] = SessionModel(path)
      results.append(models[path].run(request["signature"], request["inputs"]))
  finally:
    for model in models.values():
      model.close()
  return results


def main(argv):
  args = argv[1:]
  with_text = "--tensorflow_text" in args
  args = [a for a in args if a != "--tensorflow_text"]
  if len(args) != 2:
    print("usage: python -m bert_flow_tf.serving.session_loader [--tensorflow_text] REQUESTS_JSON OUT_NPZ",
          file=sys.stderr)
    return 2
  if with_text:
    import tensorflow_text  # noqa: F401  pylint: disable=unused-import,import-outside-toplevel
  with open(args[0], encoding="utf-8") as f:
    requests = json.load(f)
  arrays = {"tf_version": np.array(tf.__version__),
            "tensorflow_text_loaded": np.array("tensorflow_text" in sys.modules)}
  for i, outputs in enumerate(run_requests(requests)):
    # String outputs (object arrays of bytes) as fixed-width bytes: an npz of them loads without pickle.
    arrays.update({f"{i}/{name}": value.astype(np.bytes_) if value.dtype == object else value
                   for name, value in outputs.items()})
  np.savez(args[1], **arrays)
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv))
