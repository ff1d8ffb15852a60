"""QuantitiesHandler: a RunInference ModelHandler that embeds (key, sentence) pairs with our QuantityEncoder.

Beam's own TensorFlow handlers load through `tf.keras.models.load_model`, which cannot read our models under Keras 3
(apache/beam issue 30616); this one loads with `bert_flow_tf.loaders` once per worker process and runs the same
tokenizer, length-bucketed batches and pooling quantities as `QuantityEncoder.encode_quantities`.

Legend: n = sentences in one RunInference batch, H = hidden size.
"""
import os

from apache_beam.ml.inference import base

from bert_flow_tf.embedding import settings

DEFAULT_INFERENCE_BATCH = 2048


class QuantitiesHandler(base.ModelHandler):
  """Embeds `(key, sentence)` examples into `(key, {quantity: float32 [H]})` predictions.

  Args:
    model_kwargs: dict, keyword arguments of `bert_flow_tf.loaders.load_model` (`model_flags.model_kwargs`).
    names: tuple of quantity names (`pooling.quantities`), e.g. ("mean-1", "mean-6").
    max_seq_length: int, tokens per sentence including [CLS] and [SEP].
    batch_size: int, sentences per encoder batch inside one RunInference call (run_flow.py's --encode_batch_sentences).
    inference_batch_size: int, sentences per RunInference call (each call builds one length-bucketed tf.data
      pipeline, whose start costs ~0.4 s: keep calls large).
    intra_op_threads: int or None, TensorFlow's intra-op threads in each worker process (None: TF's default, all
      cores; with N worker processes on one machine give cores / N).
  """

  def __init__(self, model_kwargs, names, max_seq_length, batch_size=settings.BATCH_SENTENCES,
               inference_batch_size=DEFAULT_INFERENCE_BATCH, intra_op_threads=None):
    if not names:
      raise ValueError("names: no quantity to compute (empty)")
    if batch_size < 1 or inference_batch_size < batch_size:
      raise ValueError(f"batch_size {batch_size} must be >= 1 and <= inference_batch_size {inference_batch_size}")
    if intra_op_threads is not None and intra_op_threads < 1:
      raise ValueError(f"intra_op_threads must be >= 1 or None, got {intra_op_threads}")
    # Fixed-size calls (BatchElements would otherwise try sizes from batch_size up, each a new tf.data start).
    super().__init__(min_batch_size=inference_batch_size, max_batch_size=inference_batch_size)
    self._model_kwargs = dict(model_kwargs)
    self._names = tuple(sorted(set(names)))
    self._max_seq_length = max_seq_length
    self._batch_size = batch_size
    self._intra_op_threads = intra_op_threads

  def load_model(self):
    """The QuantityEncoder of this worker process (RunInference calls this once per process)."""
    if self._intra_op_threads:
      os.environ.setdefault("TF_NUM_INTRAOP_THREADS", str(self._intra_op_threads))
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    # tensorflow_text first: it registers the ops a TF-Hub preprocess SavedModel needs before anything loads one.
    import tensorflow_text  # pylint: disable=g-import-not-at-top,unused-import
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    from bert_flow_tf import loaders  # pylint: disable=g-import-not-at-top
    from bert_flow_tf.embedding.embedder import QuantityEncoder  # pylint: disable=g-import-not-at-top
    if self._intra_op_threads:
      try:
        tf.config.threading.set_intra_op_parallelism_threads(self._intra_op_threads)
        tf.config.threading.set_inter_op_parallelism_threads(min(2, self._intra_op_threads))
      except RuntimeError:  # TF already started in this process: the environment variable above decided
        pass
    model = loaders.load_model(**self._model_kwargs)
    return QuantityEncoder(model, max_seq_length=self._max_seq_length)  # the handler asks for quantities

  def run_inference(self, batch, model, inference_args=None):
    """Embeds one batch.

    Args:
      batch: sequence of n (key bytes, sentence str).
      model: the QuantityEncoder from `load_model`.
      inference_args: unused (must be None or empty).

    Returns:
      list of n (key, {name: np.float32 [H]}), in batch order.
    """
    sentences = [sentence for _, sentence in batch]
    values = model.encode_quantities(sentences, self._names, self._batch_size)
    return [(key, {name: values[name][i] for name in self._names}) for i, (key, _) in enumerate(batch)]

  def get_num_bytes(self, batch):
    return sum(len(sentence.encode("utf-8")) for _, sentence in batch)

  def get_metrics_namespace(self):
    return "bert_flow_tf"
