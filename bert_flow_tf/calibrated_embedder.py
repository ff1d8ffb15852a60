"""CalibratedEmbedder: a SentenceEncoder's sentences -> calibrated vectors. A SentenceEmbedder (BERT, tokenizer,
pooling, max_seq_length) behind an EmbeddingStore (each distinct sentence runs through BERT once per object), then
the calibration (calibration.calibrator: a flow or a baseline), or none.

It is the `calibrated_embedder` part of st_api.StApi: dim, max_seq_length, embed, token_outputs.

Legend: n = sentences, D = the pooling's width, D' = the calibrated width.
"""
import numpy as np

from bert_flow_tf import loaders
from bert_flow_tf import text_inputs
from bert_flow_tf.calibration import calibrator
from bert_flow_tf.calibration import store_stream
from bert_flow_tf.data import pairs as pairs_lib
from bert_flow_tf.embedding import settings
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from bert_flow_tf.embedding.store import EmbeddingStore
from bert_flow_tf.modeling import pooling as pooling_lib


def sentence_embedder(model, pooling, max_seq_length, load_kwargs):
  """SentenceEmbedder of a model name, path or loaders.LoadedModel; max_seq_length None: the model's own
  (max_position_embeddings, else 512)."""
  if isinstance(model, loaders.LoadedModel):
    if load_kwargs:
      raise ValueError(f"load options {sorted(load_kwargs)} given with an already loaded model")
  else:
    model = loaders.load_model(model, **load_kwargs)
  own_length = model.config.max_position_embeddings if model.config else 512
  return SentenceEmbedder(model, pooling, max_seq_length or own_length)


class CalibratedEmbedder:
  """Sentences -> np.float32 [n, D'] calibrated vectors (see the module notes).

  Args:
    embedder: SentenceEmbedder.
    batch_size: int, sentences per BERT batch unless a call names one (read and set).
    cache_dir: str or None, keep the raw vectors on disk there (the embedding store of run_flow.py); None: memory.
    calibration: a calibration.calibrator calibration fitted on this embedder's vectors, or None (`calibrate`).

  Attributes:
    embedder, batch_size, cache_dir, calibration: as given; store: the EmbeddingStore.
  """

  def __init__(self, embedder, batch_size, cache_dir=None, calibration=None):
    self.embedder = embedder
    self.batch_size = batch_size
    self.cache_dir = cache_dir
    self.store = EmbeddingStore(embedder, cache_dir=cache_dir, batch_size=batch_size)
    self.calibration = None
    self.calibrate(calibration)

  @property
  def dim(self):
    """int, the width of the calibrated vectors: the pooling's D, or the calibration's D' (whitening-k: k)."""
    return self.embedder.dim if self.calibration is None else self.calibration.dim

  @property
  def max_seq_length(self):
    """int, tokens per sentence including [CLS] and [SEP]."""
    return self.embedder.max_seq_length

  def with_max_seq_length(self, value):
    """A CalibratedEmbedder of the same model and pooling reading `value` tokens per sentence (no calibration).

    Raises:
      ValueError: this one has a calibration (fitted on vectors of its own max_seq_length).
    """
    if self.calibration is not None:
      raise ValueError(f"max_seq_length stays {self.embedder.max_seq_length} while a calibration fitted on those "
                       "vectors is set; set it before fit, or make a new encoder")
    embedder = SentenceEmbedder(self.embedder.loaded, self.embedder.pooling_spec.name, int(value),
                                strategy=self.embedder.strategy)
    return CalibratedEmbedder(embedder, self.batch_size, self.cache_dir)

  def calibrate(self, calibration):
    """Sets `calibration` (or None); ValueError when it was fitted on vectors of another width."""
    if calibration is not None and calibration.input_dim != self.embedder.dim:
      raise ValueError(f"a calibration of vectors of width {calibration.input_dim} cannot calibrate this "
                       f"encoder's D={self.embedder.dim} ({self.embedder.pooling_spec.describe()})")
    self.calibration = calibration

  def raw(self, sentences, batch_size=None, show_progress_bar=None):
    """The pooled BERT vectors before any calibration: a list of n str -> np.float32 [n, D]; warns when sentences
    were cut to max_seq_length tokens, once per sentence (`SentenceEmbedder.warn_cut`)."""
    sentences = text_inputs.sentence_list(sentences)
    self.embedder.warn_cut(sentences)
    self.store.batch_size = settings.batch_for(batch_size, self.batch_size)
    return self.store.vectors(sentences, self.embedder.pooling_spec, show_progress_bar)

  def embed(self, texts, batch_size=None, show_progress_bar=None):
    """np.float32 [n, D'], the calibrated vectors of a list of n str."""
    vectors = self.raw(texts, batch_size, show_progress_bar)
    return vectors if self.calibration is None else self.calibration.transform(vectors)

  def token_outputs(self, texts, batch_size=None):
    """Per sentence (inputs dict, float32 [S_i, H]): `SentenceEmbedder.token_outputs`."""
    return self.embedder.token_outputs(texts, settings.batch_for(batch_size, self.batch_size))

  def fit(self, sentences, method, fit_config, from_store=False):
    """A calibration of `method` (calibrator.fit) fitted on the raw vectors of `sentences`: a list of N >= 2 str,
    or their raw vectors [N, D]. The settings are checked before any sentence is embedded.

    With `from_store` the sentences are embedded into the store on disk, then the flow or whitening is fitted by
    reading the store block by block, restricted to these sentences (`fit_set`; `calibration.store_stream`). Each
    distinct sentence then counts once and pairs with the next stored row of its shard (an order set by the
    sentences' hashes); the flow's `calibration.summary["provenance"]["pairs"]` records it. The other baselines
    need every vector and are refused.

    Raises:
      ValueError: fit_config's Glow config does not load or gives fewer pairs than one step, or sentences that are
        not a list of str (from_store: of str) or vectors of width D.
    """
    if text_inputs.is_one(sentences):
      raise ValueError(f"fit needs a list of sentences, got one {type(sentences).__name__}: {sentences!r}")
    texts = text_inputs.texts_of(sentences)
    is_text = texts is not None
    sentences = sentences if texts is None else texts
    if from_store and not is_text:
      raise ValueError("fit(from_store=True) reads the sentences' vectors from the store: give a list of str")
    if method == calibrator.FLOW:
      fit_config.glow_config()
      if not from_store:  # from the store, the pairs are counted once the distinct sentences are stored
        fit_config.num_steps(len(pairs_lib.consecutive_pairs(len(sentences))[0]), "the sentences")
    return calibrator.fit(method, self.fit_set(sentences, is_text, from_store), fit_config)

  def fit_set(self, sentences, is_text, from_store):
    """What a calibration is fitted on: the raw vectors float32 [N, D] of `sentences` (a list of str, or given as
    vectors), or with `from_store` a store_stream.StoreShards of them, embedded into the store on disk first.

    Raises:
      ValueError: from_store without a store on disk, or vectors of another width than D.
    """
    if from_store:
      if not self.store.folder:
        raise ValueError("fit(from_store=True) reads the embedding store on disk; this encoder keeps it in memory "
                         "(give cache_dir to from_pretrained or load)")
      self.store.ensure(sentences, pooling_lib.quantities(self.embedder.pooling_spec))
      return store_stream.fit_set(self.store.folder, self.embedder.pooling_spec, sentences)
    x = self.raw(sentences) if is_text else np.asarray(sentences, np.float32)
    if x.ndim == 2 and x.shape[1] != self.embedder.dim:
      raise ValueError(f"fit got vectors of width {x.shape[1]}; this encoder's raw vectors are "
                       f"D={self.embedder.dim} ({self.embedder.pooling_spec.describe()})")
    return x
