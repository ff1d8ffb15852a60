"""SentenceEncoder: a BERT, a pooling and an optional calibration as one object, in sentence-transformers' shape.

  enc = SentenceEncoder.from_pretrained("all-minilm-l6-v2", pooling="first-last-avg")
  enc.fit(sentences)                              # BERT-flow, the paper's target schedule (or "whitening", ...)
  enc.encode("A man plays a guitar.")             # np.float32 [D]; a list gives [n, D]
  enc.similarity(queries, corpus)                 # [n, m] cosine
  enc.semantic_search(queries, corpus, top_k=5)   # per query [{"corpus_id", "score"}, ...]
  enc.save("my_encoder"); SentenceEncoder.load("my_encoder")
  enc.export("export/", corpus=sentences)         # SavedModels: text/, ids/ (and search/ with a corpus)

It is made of two parts, each with its contract, that st_api.StApi's sentence-transformers calls use:
  calibrated_embedder   calibrated_embedder.CalibratedEmbedder: BERT and pooling behind an EmbeddingStore, then
                        the calibration (`calibration.calibrator`: a flow or a baseline): sentences -> vectors [n, D]
  sentence_codes        quantization.sentence_codes.SentenceCodes: Normalize, truncate_dim, the calibration's
                        truncation order and int8 ranges: vectors -> what `encode` returns, codes included
and hands them, as values, to encoder_folder (save and load, the fingerprint) and encoder_export (export).

Legend: n, m = sentences, D = the (calibrated) embedding width.
"""
import contextlib
import dataclasses
import functools
import os

import tensorflow as tf

from bert_flow_tf import calibrated_embedder as calibrated_lib
from bert_flow_tf import encoder_export
from bert_flow_tf import encoder_folder
from bert_flow_tf import st_api
from bert_flow_tf import st_habits
from bert_flow_tf import text_inputs
from bert_flow_tf.calibration import flow_fitting
from bert_flow_tf.embedding import settings
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from bert_flow_tf.loaders import presets
from bert_flow_tf.loaders import st_folder
from bert_flow_tf.modeling import packing
from bert_flow_tf.quantization import sentence_codes


class SentenceEncoder(st_api.StApi):
  """Sentences -> (calibrated) vectors with a loaded BERT and a named pooling, answering sentence-transformers'
  calls (`encode`, `similarity`, ...: st_api, docs/api.md).

  Make one as sentence-transformers does, `SentenceEncoder("all-MiniLM-L6-v2")`, or with `from_pretrained` (the same
  arguments) or `load`. `SentenceEncoder(path)` of a folder that `save` wrote reads it as `load(path)` does (the
  keywords given here win over the folder's settings).

  Args:
    model: a model name, path or loaders.LoadedModel (see `from_pretrained`), a folder `save` wrote, or a
      bert_flow_tf.embedding.embedder.SentenceEmbedder (its model, pooling and max_seq_length; the Normalize,
      prompts and similarity of its model's sentence-transformers folder, as for a name).
    calibration: a calibration.calibrator calibration fitted on this embedder's vectors, or None (a saved folder's
      own, if any).
    batch_size: int, sentences per encoding batch unless `encode` is given one.
    cache_dir: str or None, keep the raw vectors on disk there (the embedding store of run_flow.py); None: memory.
    prompts, default_prompt_name, truncate_dim, similarity_fn_name, pooling, max_seq_length, **load_kwargs: see
      `from_pretrained`.
    normalize: bool or None, unit-length vectors out of `encode`; None: whether the model ends with a Normalize.

  Attributes:
    calibrated_embedder, sentence_codes: its parts (see the module notes).
    embedder: the SentenceEmbedder (model, tokenizer, pooling, max_seq_length).
    calibration: FlowCalibration, BaselineCalibration or None (read and set).
    store: the EmbeddingStore (in cache_dir, else in memory); cache_dir: as given.
    fingerprint: str, `encoder_folder.fingerprint`.
    max_seq_length: int, tokens per sentence (read and set; longer ones are cut, with one warning each).
  """

  def __init__(self, model=presets.DEFAULT, calibration=None, batch_size=settings.BATCH_SENTENCES, cache_dir=None,
               prompts=None, default_prompt_name=None, truncate_dim=None, similarity_fn_name=None, normalize=None,
               pooling=None, max_seq_length=None, **load_kwargs):
    model = st_habits.model_argument(model, load_kwargs, presets.DEFAULT)  # or model_name_or_path=
    device, load_kwargs = st_habits.constructor_words(load_kwargs)  # device=, ... (docs/api.md)
    saved = os.fspath(model) if encoder_folder.is_saved(model) else None
    if saved:  # a folder `save` wrote, read as `load(saved)` reads it; a keyword given here wins over the folder's
      model, load_kwargs = encoder_folder.constructor_arguments(saved, dict(
          load_kwargs, prompts=prompts, default_prompt_name=default_prompt_name, truncate_dim=truncate_dim,
          similarity_fn_name=similarity_fn_name, normalize=normalize, pooling=pooling, max_seq_length=max_seq_length))
      prompts, default_prompt_name, truncate_dim, similarity_fn_name, normalize, pooling, max_seq_length = (
          load_kwargs.pop(name, None) for name in encoder_folder.SETTINGS)
    st = st_folder.settings_of(model.loaded.source if isinstance(model, SentenceEmbedder) else model)
    if isinstance(model, SentenceEmbedder):
      if pooling or max_seq_length or load_kwargs:
        raise ValueError("pooling, max_seq_length and load options are the SentenceEmbedder's own: give a model")
      embedder = model
    else:
      with encoder_folder.loading_errors(saved, named_by_folder=True) if saved else contextlib.nullcontext():
        embedder = calibrated_lib.sentence_embedder(model, pooling or (st.pooling if st else settings.POOLING),
                                                    max_seq_length or (st and st.max_seq_length), load_kwargs)
    codes = sentence_codes.SentenceCodes(bool(st and st.normalize) if normalize is None else bool(normalize),
                                         truncate_dim)
    super().__init__(calibrated_lib.CalibratedEmbedder(embedder, batch_size, cache_dir), codes,
                     (st.prompts if st else {}) if prompts is None else prompts,
                     default_prompt_name or (st and st.default_prompt_name) or None,
                     similarity_fn_name or (st and st.similarity_fn_name) or None, device)
    self.cache_dir = cache_dir
    self.calibration = calibration
    if saved and calibration is None:
      self.load_calibration(saved)

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
  def embedder(self):
    """The SentenceEmbedder: model, tokenizer, pooling, max_seq_length."""
    return self.calibrated_embedder.embedder

  @property
  def store(self):
    """The EmbeddingStore of the raw vectors (on disk in cache_dir, else in memory)."""
    return self.calibrated_embedder.store

  @property
  def calibration(self):
    """FlowCalibration, BaselineCalibration or None; setting one checks its width and gives `sentence_codes` its
    truncation order and int8 ranges."""
    return self.calibrated_embedder.calibration

  @calibration.setter
  def calibration(self, calibration):
    self.calibrated_embedder.calibrate(calibration)
    self.sentence_codes.truncation_order = None if calibration is None else calibration.truncation_order
    self.sentence_codes.int8_ranges = None if calibration is None else calibration.int8_ranges

  @property
  def max_seq_length(self):
    """int, tokens per sentence including [CLS] and [SEP] (set before fit: `CalibratedEmbedder.with_max_seq_length`)."""
    return self.calibrated_embedder.max_seq_length

  @max_seq_length.setter
  def max_seq_length(self, value):
    if value != self.max_seq_length:
      self.calibrated_embedder = self.calibrated_embedder.with_max_seq_length(value)
      self.__dict__.pop("fingerprint", None)

  @property
  def tokenizer(self):
    """The model's bert_flow_tf.modeling.tokenizer.BertTokenizer (a Keras layer: strings -> the packed inputs)."""
    return self.embedder.tokenizer

  def tokenize(self, texts):
    """The model's inputs for `texts` (str or list), packed to the longest: dict packing.INPUT_NAMES -> int32 [n, S]."""
    texts = self.embedder.bounded(text_inputs.sentence_list(texts))  # the pieces up to max_seq_length
    pieces = self.embedder.tokenizer.tokenize(tf.constant(texts, tf.string))
    return packing.pack_to_longest(self.embedder.tokenizer, pieces)

  def encode_raw(self, sentences, batch_size=None, show_progress_bar=None):
    """The pooled BERT vectors before any calibration: a list of n str -> np.float32 [n, D] (the pooling's D)
    (`CalibratedEmbedder.raw`)."""
    return self.calibrated_embedder.raw(sentences, batch_size, show_progress_bar)

  def fit(self, sentences=None, method="flow", flow_config=None, learning_rate=None, num_train_epochs=None,
          batch_size=None, seed=None, init=None, from_store=False, **kwargs):
    """Fits a calibration on the raw vectors of `sentences` and sets it (replacing any other).

    The defaults are the paper's target setting (calibration.flow_fitting.FlowFitConfig): the flow fitted by
    maximum likelihood with constant Adam 1e-3, 1 epoch, 32 pairs per step, pairs of consecutive sentences (0 and
    1, 2 and 3, ...; an odd last one with the first), as run_flow.py pairs the lines of a sentences file. The
    settings are checked before any sentence is embedded.

    With `from_store=True` (an encoder made with a cache_dir) the flow or whitening is fitted by reading the store
    block by block: memory that does not grow with N (`CalibratedEmbedder.fit`; run_flow.py's --fit_from_store).

    Args:
      sentences: list of N >= 2 str (or their raw vectors [N, D] from `encode_raw`).
      method: str, "flow", "whitening", "whitening-K" (or the other baselines: "sn", "natsv-K", "sn+natsv-K").
      flow_config, learning_rate, num_train_epochs, batch_size, seed, init: the flow's settings, FlowFitConfig's
        flow_model_config, learning_rate, num_train_epochs, batch_size (pairs per step), seed and init; None:
        FlowFitConfig's default. Ignored by the baselines.
      from_store: bool, fit by reading the store on disk (see above); `sentences` must then be text.
      **kwargs: none is taken; sentence-transformers' fit(train_objectives=...) is refused in one line
        (st_habits.check_fit_words).

    Returns self. Raises ValueError: a setting out of its range (named as above), a Glow config that does not load,
    fewer pairs than one step, or sentences that are not a list of str or vectors of this encoder's width.
    """
    st_habits.check_fit_words(sentences, kwargs)
    given = {"flow_model_config": flow_config, "learning_rate": learning_rate, "num_train_epochs": num_train_epochs,
             "batch_size": batch_size, "seed": seed, "init": init}
    fit_config = dataclasses.replace(flow_fitting.FlowFitConfig(),
                                     **{name: value for name, value in given.items() if value is not None})
    self.calibration = self.calibrated_embedder.fit(sentences, method, fit_config, from_store)
    return self

  def export(self, export_dir, version=1, overwrite=False, corpus=None, search="float32", truncate_dim=None,
             precisions=(), litert=False, num_lists=0):
    """Writes the servable SavedModels, with the calibration in the graph (a flow, or a baseline as
    graph_calibration.Affine): export_dir/text/<version> (strings in), ids/<version> (token ids in) and
    export_info.json (serving/export.py), as run_flow.py --export_dir; with a corpus also search/<version>
    (serving/search_model.py) or binary_search/<version>. `ExportedEncoder` loads them back.

    Args (`encoder_export.export`'s, docs/quantization.md): export_dir (str); version (int >= 1, TF Serving's
    version directory); overwrite (replace existing versions); corpus (None, a list of str, or the path of a UTF-8
    file with one sentence per line); search ("float32" or "binary"), truncate_dim, precisions, num_lists; litert
    (bool, also litert/model.tflite and model_int8.tflite: `encode`'s vectors, serving/litert.py).

    Returns:
      dict: "text", "ids", "search" or "binary_search" (with a corpus) (SavedModel directories), "info", "litert".
    """
    return encoder_export.export(self.calibrated_embedder, self.sentence_codes, export_dir, version, overwrite,
                                 corpus, search, truncate_dim, precisions, litert, num_lists)

  @functools.cached_property
  def fingerprint(self):
    """str, `encoder_folder.fingerprint` of its embedder: hashed on first use (save, load, describe)."""
    return encoder_folder.fingerprint(self.embedder)

  def describe(self):
    """One line: the model, pooling, max_seq_length and fingerprint."""
    return encoder_folder.describe(self.embedder.loaded.source, self.embedder.pooling_spec.name,
                                   self.embedder.max_seq_length, self.fingerprint)

  def save(self, path, overwrite=False):
    """Writes the encoder's description, settings and calibration to the directory `path`, atomically; replaces
    only a folder `save` wrote, an empty one, or with overwrite=True another (`encoder_folder.save`). Returns path."""
    settings_ = {"prompts": self.prompts, "default_prompt_name": self.default_prompt_name,
                 "truncate_dim": self.truncate_dim, "similarity_fn_name": self.similarity_fn_name,
                 "normalize": self.normalize}
    return encoder_folder.save(path, self.embedder, self.fingerprint, self.calibration, settings_, overwrite)

  def save_pretrained(self, path, overwrite=False):
    """sentence-transformers' name of `save`."""
    return self.save(path, overwrite=overwrite)

  @classmethod
  def load(cls, path, model=None, batch_size=settings.BATCH_SENTENCES, cache_dir=None, trust_saved_model=False):
    """Restores what `save(path)` wrote: the model it names (or `model`), pooling, max_seq_length, settings and
    calibration.

    The folder's files are data (docs/security.md): a SavedModel it names (a program) is loaded only when the
    caller names it (`model=`) or opts in with `trust_saved_model=True`. A relative model path is read from `path`.

    Args:
      path: str, a directory written by `save`.
      model: None (the model path or preset the file names), another path, or a loaders.LoadedModel; it must be
        the model the calibration was fitted on (same fingerprint).
      batch_size, cache_dir: as `from_pretrained`.
      trust_saved_model: bool, load (and so run) a SavedModel that the folder's sentence_encoder.json names.

    Returns:
      SentenceEncoder.

    Raises:
      errors.UserError: a missing, broken or unreadable file, or a SavedModel named without the opt-in (one line
        naming the file); ValueError: the model found is not the one saved (one line naming both).
    """
    with encoder_folder.loading_errors(path, named_by_folder=model is None):
      model, folder = encoder_folder.saved_model_and_settings(path, model, trust_saved_model)
      encoder = cls(model, batch_size=batch_size, cache_dir=cache_dir, **folder)
    return encoder.load_calibration(path)

  def load_calibration(self, path):
    """Sets the calibration `save(path)` wrote, after checking it was fitted on this encoder's vectors
    (`encoder_folder.saved_calibration`: ValueError naming both when not). Returns self."""
    self.calibration = encoder_folder.saved_calibration(path, self.fingerprint, self.describe())
    return self

  def load_flow(self, flow_dir):
    """Sets a flow fitted by run_flow.py (exp/<name>/flows/<fit>-<dataset>) or `flow_fitting.fit_flow`, after
    checking its flow.json: fitted on vectors of this width, pooling and max_seq_length
    (`encoder_folder.fitted_flow_calibration`: ValueError naming each setting that differs). Returns self."""
    self.calibration = encoder_folder.fitted_flow_calibration(flow_dir, self.embedder)
    return self
