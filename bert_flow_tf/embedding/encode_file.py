"""A file of sentences in, their vectors out: what `python -m bert_flow_tf.encode` runs."""
import time

from absl import logging
import numpy as np

from bert_flow_tf import export
import glow
from bert_flow_tf.calibration import fitted_flow
from bert_flow_tf.embedding.store import EmbeddingStore
from bert_flow_tf.utils import io_utils


def encode_file(input_file, output_file, embedder=None, flow_dir=None, exported_model=None, batch_size=64):
  """Encodes a UTF-8 file of sentences (one per line) into a float32 .npy [n, D], in input order, atomically.

  Args:
    input_file: str. UTF-8 text, one sentence per line (empty lines included).
    output_file: str. Where the float32 [n, D] .npy goes.
    embedder: SentenceEmbedder, or None with `exported_model`.
    flow_dir: str or None. A fitted-flow directory (flow.json + checkpoint, as `fit_flow` writes it): the output
      is the flow's calibrated z of the embedder's vectors.
    exported_model: str or None. A text SavedModel (<export_dir>/text/<version>) to encode through instead of
      `embedder`; it already fixes the model, pooling, max_seq_length and flow.
    batch_size: int. Sentences per batch.

  Returns:
    np.float32 [n, D], as written.

  Raises:
    ValueError: not exactly one of `embedder` / `exported_model`, or `flow_dir` with `exported_model`.
    FileNotFoundError / ValueError from `io_utils.read_lines` for a missing or non-UTF-8 input file.
  """
  if (embedder is None) == (exported_model is None):
    raise ValueError(f"give an embedder or an exported_model, not both or neither (exported_model="
                     f"{exported_model!r})")
  if exported_model is not None and flow_dir is not None:
    raise ValueError(f"flow_dir={flow_dir!r}: the exported model {exported_model} already fixes its flow")
  sentences = io_utils.read_lines(input_file)
  with io_utils.atomic_path(output_file) as tmp:  # an unwritable output fails here, before the encoding
    start = time.perf_counter()
    if exported_model is not None:
      embeddings = export.encode_with_saved_model(exported_model, sentences, batch_size)
      what = f"exported model {exported_model}"
    else:
      flow = fitted_flow.load(flow_dir) if flow_dir is not None else None
      # An in-memory store: each distinct line is encoded once.
      store = EmbeddingStore(embedder, root=None, batch_size=batch_size)
      embeddings = store.vectors(sentences, embedder.pooling)
      what = embedder.pooling.describe()
      if flow is not None:
        embeddings = glow.transform(flow, embeddings)
        what += f", then the flow in {flow_dir}"
    seconds = time.perf_counter() - start
    with open(tmp, "wb") as f:
      np.save(f, embeddings)
  logging.info("wrote %s: %d x %d float32 (%s) in %.1f s, %.0f sentences/s", output_file, *embeddings.shape,
               what, seconds, len(sentences) / max(seconds, 1e-9))
  return embeddings
