"""SentenceEncoder: a BERT, a pooling and an optional calibration as one object, in sentence-transformers' shape.

  enc = SentenceEncoder.from_pretrained("all-minilm-l6-v2", pooling="first-last-avg")
  enc.fit(sentences)                              # BERT-flow, the paper's target schedule (or "whitening", ...)
  enc.encode("A man plays a guitar.")             # np.float32 [D]; a list gives [n, D]
  enc.similarity(queries, corpus)                 # [n, m] cosine
  enc.semantic_search(queries, corpus, top_k=5)   # per query [{"corpus_id", "score"}, ...]
  enc.save("my_encoder"); SentenceEncoder.load("my_encoder")
  enc.export("export/", corpus=sentences)         # SavedModels: text/, ids/ (and search/ with a corpus)

Saving and loading (the files, the fingerprint that ties a calibration to its model) are encoder_folder.py's.
It reuses the project's parts: `loaders.load_model`, `SentenceEmbedder` behind an `EmbeddingStore` (each distinct
sentence runs through BERT once per object), `calibration.calibrator` (flow or baselines) and `export`.

Legend: n, m = sentences, D = the (calibrated) embedding width.
"""
import dataclasses
import os

import numpy as np
import tensorflow as tf

from bert_flow_tf import encoder_folder
from bert_flow_tf import loaders
from bert_flow_tf import st_api
from bert_flow_tf import st_habits
from bert_flow_tf.calibration import calibrator
from bert_flow_tf.calibration import flow_fitting
from bert_flow_tf.calibration import store_stream
from bert_flow_tf.data import pairs as pairs_lib
from bert_flow_tf.embedding import settings
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from bert_flow_tf.embedding.store import EmbeddingStore
from bert_flow_tf.loaders import presets
from bert_flow_tf.loaders import st_folder
from bert_flow_tf.modeling import packing
from bert_flow_tf.modeling import pooling as pooling_lib
from bert_flow_tf.quantization import binary_search_model
from bert_flow_tf.quantization import code_search
from bert_flow_tf.serving import export as export_lib
from bert_flow_tf.serving import litert as litert_export
from bert_flow_tf.serving import search_model
from bert_flow_tf.utils import io_utils


def _embedder(model, pooling, max_seq_length, load_kwargs):
  """SentenceEmbedder of a model name, path or loaders.LoadedModel; max_seq_length None: the model's own
  (max_position_embeddings, else 512)."""
  if isinstance(model, loaders.LoadedModel):
    if load_kwargs:
      raise ValueError(f"load options {sorted(load_kwargs)} given with an already loaded model")
  else:
    model = loaders.load_model(model, **load_kwargs)
  own_length = model.config.max_position_embeddings if model.config else 512
  return SentenceEmbedder(model, pooling, max_seq_length or own_length)


class SentenceEncoder(st_api.StApi, st_habits.StHabits, encoder_folder.EncoderFiles):
  """Sentences -> (calibrated) vectors with a loaded BERT and a named pooling, answering sentence-transformers'
  calls (`encode`, `similarity`, ...: st_api, docs/api.md).

  Make one as sentence-transformers does, `SentenceEncoder("all-MiniLM-L6-v2")`, or with `from_pretrained` (the same
  arguments) or `load`.

  Args:
    model: a model name, path or loaders.LoadedModel (see `from_pretrained`), or a
      bert_flow_tf.embedding.embedder.SentenceEmbedder (its model, pooling and max_seq_length; the Normalize,
      prompts and similarity of its model's sentence-transformers folder, as for a name).
    calibration: a calibration.calibrator calibration fitted on this embedder's vectors, or None.
    batch_size: int, sentences per encoding batch unless `encode` is given one.
    cache_dir: str or None, keep the raw vectors on disk there (the embedding store of run_flow.py); None: memory.
    prompts, default_prompt_name, truncate_dim, similarity_fn_name, pooling, max_seq_length, **load_kwargs: see
      `from_pretrained`.
    normalize: bool or None, unit-length vectors out of `encode`; None: whether the model ends with a Normalize.

  Attributes:
    embedder: the SentenceEmbedder (model, tokenizer, pooling, max_seq_length).
    calibration: FlowCalibration, BaselineCalibration or None.
    fingerprint: str, see the module notes.
    max_seq_length: int, tokens per sentence (read and set; longer ones are cut, with one warning each).
  """

  def __init__(self, model=presets.DEFAULT, calibration=None, batch_size=settings.BATCH_SENTENCES, cache_dir=None,
               prompts=None, default_prompt_name=None, truncate_dim=None, similarity_fn_name=None, normalize=None,
               pooling=None, max_seq_length=None, **load_kwargs):
    self.default_device, load_kwargs = st_habits.constructor_words(model, load_kwargs)  # device=, ... (docs/api.md)
    st = st_folder.settings_of(model.loaded.source if isinstance(model, SentenceEmbedder) else model)
    if isinstance(model, SentenceEmbedder):
      if pooling or max_seq_length or load_kwargs:
        raise ValueError("pooling, max_seq_length and load options are the SentenceEmbedder's own: give a model")
      self.embedder = model
    else:
      self.embedder = _embedder(model, pooling or (st.pooling if st else settings.POOLING),
                                max_seq_length or (st and st.max_seq_length), load_kwargs)
    self.batch_size = batch_size
    self.cache_dir = cache_dir
    self.store = EmbeddingStore(self.embedder, cache_dir=cache_dir, batch_size=batch_size)
    self.prompts = dict((st.prompts if st else {}) if prompts is None else prompts)
    default_prompt_name = default_prompt_name or (st and st.default_prompt_name) or None
    if default_prompt_name is not None and default_prompt_name not in self.prompts:
      raise ValueError(f"default_prompt_name {default_prompt_name!r} is not among the prompts {sorted(self.prompts)}")
    self.default_prompt_name = default_prompt_name
    self.truncate_dim = truncate_dim
    self.similarity_fn_name = similarity_fn_name or (st and st.similarity_fn_name) or None
    self.normalize = bool(st and st.normalize) if normalize is None else bool(normalize)
    self._set_calibration(calibration)

  @classmethod
  def from_pretrained(cls, model=presets.DEFAULT, pooling=None, max_seq_length=None,
                      batch_size=settings.BATCH_SENTENCES, cache_dir=None, prompts=None, default_prompt_name=None,
                      truncate_dim=None, similarity_fn_name=None, **load_kwargs):
    """Loads a BERT for encoding sentences (uncalibrated until `fit` or `load_calibration`).

    A sentence-transformers folder, or a preset (by its name or Hub id: "all-MiniLM-L6-v2",
    "sentence-transformers/all-MiniLM-L6-v2"), brings its own pooling, max_seq_length, Normalize, prompts and
    similarity function (loaders.st_folder); the arguments given here win.

    Args:
      model: str, a model directory (TF1 checkpoint, HF safetensors, TF-Hub encoder or sentence-transformers
        folder; README: Models), a preset name or Hub id; or a loaders.LoadedModel already loaded.
      pooling: str or None, a pooling name (README: Poolings), e.g. "last-avg", "first-last-avg", "cls"; None: the
        folder's, else "last-avg".
      max_seq_length: int or None, tokens per sentence including [CLS] and [SEP]; None: the model's own
        (sentence_bert_config.json, else max_position_embeddings, else 512).
      batch_size: int, sentences per encoding batch.
      cache_dir: str or None, see the class.
      prompts: dict name -> str or None (the folder's); default_prompt_name: str or None.
      truncate_dim: int or None, `encode` keeps truncate_dim dimensions after the calibration (the first; a flow's:
        those of largest variance on its fit sentences, `quantization.truncation`).
      similarity_fn_name: "cosine" (default), "dot", "euclidean" or "manhattan".
      **load_kwargs: to loaders.load_model (do_lower_case, vocab_file, ...); device=, trust_remote_code=: st_habits.

    Returns:
      SentenceEncoder.
    """
    return cls(model, batch_size=batch_size, cache_dir=cache_dir, prompts=prompts,
               default_prompt_name=default_prompt_name, truncate_dim=truncate_dim,
               similarity_fn_name=similarity_fn_name, pooling=pooling, max_seq_length=max_seq_length, **load_kwargs)

  @property
  def truncation_order(self):
    """int32 [D] or None: the dimensions `truncate_dim` keeps first (its calibration's; `quantization.truncation`)."""
    return None if self.calibration is None else self.calibration.truncation_order

  @property
  def int8_ranges(self):
    """float32 [2, D] or None: its calibration's int8 ranges (`calibration.int8_ranges`; `sentence_codes`)."""
    return None if self.calibration is None else self.calibration.int8_ranges

  @property
  def dim(self):
    """int, the width of the calibrated vectors: the pooling's, or the calibration's (whitening-k: k)."""
    return self.embedder.dim if self.calibration is None else self.calibration.dim

  @property
  def max_seq_length(self):
    """int, tokens per sentence including [CLS] and [SEP]."""
    return self.embedder.max_seq_length

  @max_seq_length.setter
  def max_seq_length(self, value):
    if value == self.embedder.max_seq_length:
      return
    if self.calibration is not None:
      raise ValueError(f"max_seq_length stays {self.embedder.max_seq_length} while a calibration fitted on those "
                       "vectors is set; set it before fit, or make a new encoder")
    self.embedder = SentenceEmbedder(self.embedder.loaded, self.embedder.pooling_spec.name, int(value),
                                     strategy=self.embedder.strategy)
    self.store = EmbeddingStore(self.embedder, cache_dir=self.cache_dir, batch_size=self.batch_size)
    self.__dict__.pop("fingerprint", None)

  def tokenize(self, texts):
    """The model's inputs for `texts` (str or list), packed to the longest: dict packing.INPUT_NAMES -> int32 [n, S]."""
    texts = st_api.texts_of(texts) or []
    pieces = self.embedder.tokenizer.tokenize(tf.constant(texts, tf.string))
    return packing.pack_to_longest(self.embedder.tokenizer, pieces)

  def _embed(self, texts, batch_size=None, show_progress_bar=None):
    """np.float32 [n, D], the calibrated vectors of a list of str (st_api's hook)."""
    vectors = self.encode_raw(texts, batch_size, show_progress_bar)
    return vectors if self.calibration is None else self.calibration.transform(vectors)

  def _token_outputs(self, texts, batch_size):
    return self.embedder.token_outputs(texts, batch_size)

  def encode_raw(self, sentences, batch_size=None, show_progress_bar=None):
    """The pooled BERT vectors before any calibration: a list of n str -> np.float32 [n, D] (the pooling's D); warns
    when sentences were cut to max_seq_length tokens, once per sentence (`SentenceEmbedder.warn_cut`)."""
    sentences = list(sentences)
    for i, sentence in enumerate(sentences):
      if not isinstance(sentence, str):
        raise ValueError(f"sentences must be str; item {i} is {type(sentence).__name__}: {sentence!r}")
    self.embedder.warn_cut(sentences)
    self.store.batch_size = batch_size or self.batch_size
    return self.store.vectors(sentences, self.embedder.pooling_spec, show_progress_bar)

  def fit(self, sentences, method="flow", flow_config=None, learning_rate=None, num_train_epochs=None,
          batch_size=None, seed=None, init=None, from_store=False):
    """Fits a calibration on the raw vectors of `sentences` and sets it (replacing any other).

    The defaults are the paper's target setting (calibration.flow_fitting.FlowFitConfig): the flow fitted by
    maximum likelihood with constant Adam 1e-3, 1 epoch, 32 pairs per step, pairs of consecutive sentences (0 and
    1, 2 and 3, ...; an odd last one with the first), as run_flow.py pairs the lines of a sentences file. The
    settings are checked before any sentence is embedded.

    With `from_store=True` (an encoder made with a cache_dir) the sentences are embedded into the store, then the
    flow or whitening is fitted by reading the store block by block, restricted to these sentences: memory that does
    not grow with N (`calibration.store_stream`; run_flow.py's --fit_from_store). Each distinct sentence then counts
    once and pairs with the next stored row of its shard (an order set by the sentences' hashes); the flow's
    `calibration.summary["provenance"]["pairs"]` records it. The other baselines need every vector and are refused.

    Args:
      sentences: list of N >= 2 str (or their raw vectors [N, D] from `encode_raw`).
      method: str, "flow", "whitening", "whitening-K" (or the other baselines: "sn", "natsv-K", "sn+natsv-K").
      flow_config, learning_rate, num_train_epochs, batch_size, seed, init: the flow's settings, FlowFitConfig's
        flow_model_config, learning_rate, num_train_epochs, batch_size (pairs per step), seed and init; None:
        FlowFitConfig's default. Ignored by the baselines.
      from_store: bool, fit by reading the store on disk (see above); `sentences` must then be text.

    Returns:
      self.

    Raises:
      ValueError: a setting out of its range (named as above), a Glow config that does not load, fewer pairs
        than one step, or sentences that are not a list of str or vectors of this encoder's width.
    """
    given = {"flow_model_config": flow_config, "learning_rate": learning_rate, "num_train_epochs": num_train_epochs,
             "batch_size": batch_size, "seed": seed, "init": init}
    fit_config = dataclasses.replace(flow_fitting.FlowFitConfig(),
                                     **{name: value for name, value in given.items() if value is not None})
    if isinstance(sentences, str):
      raise ValueError(f"fit needs a list of sentences, got one str: {sentences!r}")
    is_text = isinstance(sentences, (list, tuple)) and all(isinstance(s, str) for s in sentences)
    if from_store and not is_text:
      raise ValueError("fit(from_store=True) reads the sentences' vectors from the store: give a list of str")
    if method == calibrator.FLOW:
      fit_config.glow_config()
      if not from_store:  # from the store, the pairs are counted once the distinct sentences are stored
        fit_config.num_steps(len(pairs_lib.consecutive_pairs(len(sentences))[0]), "the sentences")
    if from_store:
      x = self._stored(sentences)
    else:
      x = self.encode_raw(sentences) if is_text else np.asarray(sentences, np.float32)
    if not from_store and x.ndim == 2 and x.shape[1] != self.embedder.dim:
      raise ValueError(f"fit got vectors of width {x.shape[1]}; this encoder's raw vectors are "
                       f"D={self.embedder.dim} ({self.embedder.pooling_spec.describe()})")
    self._set_calibration(calibrator.fit(method, x, fit_config))
    return self

  def _stored(self, sentences):
    """store_stream.StoreShards of `sentences`, embedded into the store on disk first (what is missing)."""
    if not self.store.folder:
      raise ValueError("fit(from_store=True) reads the embedding store on disk; this encoder keeps it in memory "
                       "(give cache_dir to from_pretrained or load)")
    self.store.ensure(sentences, pooling_lib.quantities(self.embedder.pooling_spec))
    return store_stream.fit_set(self.store.folder, self.embedder.pooling_spec, sentences)

  def _set_calibration(self, calibration):
    if calibration is not None and calibration.input_dim != self.embedder.dim:
      raise ValueError(f"a calibration of vectors of width {calibration.input_dim} cannot calibrate this "
                       f"encoder's D={self.embedder.dim} ({self.embedder.pooling_spec.describe()})")
    self.calibration = calibration

  def semantic_search(self, queries, corpus, top_k=10, precision="float32", rescore=True, candidates=None,
                      num_lists=0, nprobe=None):
    """As st_api.StApi.semantic_search; precision="binary": `code_search.encoder_search` (None: its defaults)."""
    if precision != "float32":
      return code_search.encoder_search(self, queries, corpus, top_k, precision, rescore, candidates, num_lists,
                                        nprobe)
    return super().semantic_search(queries, corpus, top_k)

  def export(self, export_dir, version=1, overwrite=False, corpus=None, search="float32", truncate_dim=None,
             precisions=(), litert=False, num_lists=0):
    """Writes the servable SavedModels, with the calibration in the graph (a flow, or a baseline as export.Affine):
    export_dir/text/<version> (strings in), ids/<version> (token ids in) and export_info.json (serving/export.py),
    as run_flow.py --export_dir; with a corpus also search/<version> (serving/search_model.py) or
    binary_search/<version>. `ExportedEncoder` loads them back.

    Args:
      export_dir: str.
      version: int >= 1, TF Serving's version directory.
      overwrite: bool, replace existing versions (SavedModels only; see serving/export.py).
      corpus: None, a list of str, or the path of a UTF-8 file with one sentence per line.
      search, truncate_dim, precisions, num_lists: see quantization.binary_search_model.export_encoder
        (docs/quantization.md).
      litert: bool, also litert/model.tflite and model_int8.tflite: `encode`'s vectors (serving/litert.py).

    Returns:
      dict: "text", "ids", "search" or "binary_search" (with a corpus) (SavedModel directories), "info", "litert".

    Raises:
      ValueError: an empty corpus.
    """
    if isinstance(corpus, (str, os.PathLike)):
      corpus = io_utils.read_lines(os.fspath(corpus))
    in_graph = export_lib.in_graph(self.calibration)
    paths = binary_search_model.export_encoder(self, in_graph, export_dir, version, overwrite, corpus, search,
                                               truncate_dim, precisions, num_lists)
    if corpus is not None and search == "float32":
      corpus = list(corpus)
      paths["search"] = search_model.export_search_model(self.embedder, in_graph, self._embed(corpus), corpus,
                                                         export_dir, version=version, overwrite=overwrite)
    if litert:
      paths["litert"] = litert_export.export_encoder(self, in_graph, export_dir, truncate_dim, overwrite)
    return paths
