"""SentenceEncoder: a BERT, a pooling and an optional calibration as one object, in sentence-transformers' shape.

  enc = SentenceEncoder.from_pretrained("all-minilm-l6-v2", pooling="first-last-avg")
  enc.fit(sentences)                              # BERT-flow, the paper's target schedule (or "whitening", ...)
  enc.encode("A man plays a guitar.")             # np.float32 [D]; a list gives [n, D]
  enc.similarity(queries, corpus)                 # [n, m] cosine
  enc.semantic_search(queries, corpus, top_k=5)   # per query [{"corpus_id", "score"}, ...]
  enc.save("my_encoder"); SentenceEncoder.load("my_encoder")
  enc.export("export/", corpus=sentences)         # SavedModels: text/, ids/ (and search/ with a corpus)

It reuses the project's parts: `loaders.load_model`, `SentenceEmbedder` behind an `EmbeddingStore` (each distinct
sentence runs through BERT once per object), `calibration.calibrator` (flow or baselines) and `export`.

`save(dir)` writes, atomically (a hidden sibling renamed into place):
  <dir>/sentence_encoder.json   the model (its path or preset name), pooling, max_seq_length, the fingerprint
  <dir>/calibration/            the calibration (see calibration.calibrator), when there is one
The BERT weights are not copied: as BERT-whitening keeps its kernel and bias beside the model, the calibration is
kept with the name of the model it was fitted on, and `load` checks the fingerprint of the model it finds.

The fingerprint hashes what the vectors depend on: the encoder's weights (shapes, bytes), the model config,
the vocabulary file's bytes, do_lower_case, the pooling and max_seq_length (not the file format: the same weights
read from a TF1 checkpoint or an HF directory give the same vectors). A calibration is refused on vectors with
another fingerprint.

Legend: n, m = sentences, D = the (calibrated) embedding width.
"""
import functools
import hashlib
import json
import os

import numpy as np

import glow
from bert_flow_tf.serving import binary_search
from bert_flow_tf.serving import export as export_lib
from bert_flow_tf import encoder_folder
from bert_flow_tf import loaders
from bert_flow_tf import quantized_search
from bert_flow_tf import search
from bert_flow_tf.calibration import calibrator
from bert_flow_tf.calibration import fitted_flow
from bert_flow_tf.calibration import store_stream
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from bert_flow_tf.embedding.store import EmbeddingStore
from bert_flow_tf.modeling import pooling as pooling_lib
from bert_flow_tf.utils import errors
from bert_flow_tf.utils import io_utils


def fingerprint(embedder):
  """16 hex digits naming what `embedder`'s vectors depend on (see the module notes)."""
  model = embedder.loaded
  h = hashlib.sha256()
  head = {"config": None if model.config is None else model.config.to_dict(),
          "do_lower_case": bool(model.do_lower_case), "pooling": embedder.pooling.name,
          "max_seq_length": embedder.max_seq_length}
  h.update(json.dumps(head, sort_keys=True).encode("utf-8"))
  with open(model.vocab_file, "rb") as f:
    h.update(f.read())
  for variable in model.encoder.variables:  # in creation order; their names change with Keras' layer counters
    value = variable.numpy()
    h.update(f"{value.shape}:{value.dtype}".encode("utf-8"))
    h.update(np.ascontiguousarray(value).tobytes())
  return h.hexdigest()[:16]


def _describe(model, pooling, max_seq_length, fingerprint_hex):
  return f"{model} (pooling {pooling}, max_seq_length {max_seq_length}, fingerprint {fingerprint_hex})"


class SentenceEncoder(search.SearchMixin):
  """Sentences -> (calibrated) vectors with a loaded BERT and a named pooling.

  Make one with `from_pretrained` or `load`.

  Args:
    embedder: bert_flow_tf.embedding.embedder.SentenceEmbedder.
    calibration: a calibration.calibrator calibration fitted on this embedder's vectors, or None.
    batch_size: int, sentences per encoding batch unless `encode` is given one.
    cache_dir: str or None, keep the raw vectors on disk there (the embedding store of run_flow.py); None: memory.

  Attributes:
    embedder: the SentenceEmbedder (model, tokenizer, pooling, max_seq_length).
    calibration: FlowCalibration, BaselineCalibration or None.
    fingerprint: str, see the module notes.
  """

  def __init__(self, embedder, calibration=None, batch_size=64, cache_dir=None):
    self.embedder = embedder
    self.batch_size = batch_size
    self.store = EmbeddingStore(embedder, root=cache_dir, batch_size=batch_size)
    self.calibration = None
    if calibration is not None:
      self._set_calibration(calibration)

  @classmethod
  def from_pretrained(cls, model="all-minilm-l6-v2", pooling="last-avg", max_seq_length=64, batch_size=64,
                      cache_dir=None, **load_kwargs):
    """Loads a BERT for encoding sentences (uncalibrated until `fit` or `load_calibration`).

    Args:
      model: str, a model directory (TF1 checkpoint, HF safetensors or TF-Hub encoder; README: Models) or a preset
        name ("all-minilm-l6-v2"); or a loaders.LoadedModel already loaded.
      pooling: str, a pooling name (README: Poolings), e.g. "last-avg", "first-last-avg", "cls".
      max_seq_length: int, tokens per sentence including [CLS] and [SEP].
      batch_size: int, sentences per encoding batch.
      cache_dir: str or None, see the class.
      **load_kwargs: passed to loaders.load_model (do_lower_case, vocab_file, ...).

    Returns:
      SentenceEncoder.
    """
    if isinstance(model, loaders.LoadedModel):
      if load_kwargs:
        raise ValueError(f"load options {sorted(load_kwargs)} given with an already loaded model")
    else:
      model = loaders.load_model(model, **load_kwargs)
    return cls(SentenceEmbedder(model, pooling, max_seq_length), batch_size=batch_size, cache_dir=cache_dir)

  @functools.cached_property
  def fingerprint(self):
    """str, see the module notes; hashed on first use (save, load, describe), not when the encoder is made."""
    return fingerprint(self.embedder)

  @property
  def dim(self):
    """int, the width of `encode`'s vectors: the pooling's, or the calibration's (whitening-k: k)."""
    return self.embedder.dim if self.calibration is None else self.calibration.dim

  def describe(self):
    """One line: the model, pooling, max_seq_length and fingerprint."""
    return _describe(self.embedder.loaded.source, self.embedder.pooling.name, self.embedder.max_seq_length,
                     self.fingerprint)

  def encode(self, sentences, batch_size=None, normalize_embeddings=False, show_progress_bar=None):
    """Sentence vectors in input order, without dropout; calibrated when a calibration is set.

    Args:
      sentences: str, or a list (any iterable) of str.
      batch_size: int or None (the object's), sentences per BERT batch.
      normalize_embeddings: bool, scale each vector to unit L2 norm (after the calibration).
      show_progress_bar: bool or None. None or True: a progress line on stderr when at least 2,000 new
        sentences are encoded (utils.progress's threshold; shorter runs take seconds); False: never.

    Returns:
      np.float32 [D] for a str, [n, D] for a list.
    """
    if isinstance(sentences, str):
      return self.encode([sentences], batch_size, normalize_embeddings, show_progress_bar)[0]
    vectors = self.encode_raw(sentences, batch_size, show_progress_bar)
    if self.calibration is not None:
      vectors = self.calibration.transform(vectors)
    return search.normalize(vectors) if normalize_embeddings else vectors

  def encode_raw(self, sentences, batch_size=None, show_progress_bar=None):
    """The pooled BERT vectors before any calibration: a list of n str -> np.float32 [n, D] (the pooling's D)."""
    sentences = list(sentences)
    for i, sentence in enumerate(sentences):
      if not isinstance(sentence, str):
        raise ValueError(f"sentences must be str; item {i} is {type(sentence).__name__}: {sentence!r}")
    self.store.batch_size = batch_size or self.batch_size
    return self.store.vectors(sentences, self.embedder.pooling, show_progress_bar is not False)

  def fit(self, sentences, method="flow", flow_config=glow.DEFAULT_CONFIG, learning_rate=1e-3,
          num_train_epochs=1.0, batch_size=32, seed=1234, init="original", from_store=False):
    """Fits a calibration on the raw vectors of `sentences` and sets it (replacing any other).

    The defaults are the paper's target setting: the flow fitted by maximum likelihood with constant Adam 1e-3,
    1 epoch, 32 pairs per step, pairs of consecutive sentences (0 and 1, 2 and 3, ...; an odd last one with the
    first), as run_flow.py pairs the lines of a sentences file.

    With `from_store=True` (an encoder made with a cache_dir) the sentences are embedded into the store, then the
    flow or whitening is fitted by reading the store block by block, restricted to these sentences: memory that does
    not grow with N (`calibration.store_stream`; run_flow.py's --fit_from_store). Each distinct sentence then counts
    once and pairs with the next stored row of its shard (an order set by the sentences' hashes); the flow's
    `calibration.summary["provenance"]["pairs"]` records it. The other baselines need every vector and are refused.

    Args:
      sentences: list of N >= 2 str (or their raw vectors [N, D] from `encode_raw`).
      method: str, "flow", "whitening", "whitening-K" (or the other baselines: "sn", "natsv-K", "sn+natsv-K").
      flow_config, learning_rate, num_train_epochs, batch_size, seed, init: the flow's
        (calibration.calibrator.fit); ignored by the baselines.
      from_store: bool, fit by reading the store on disk (see above); `sentences` must then be text.

    Returns:
      self.
    """
    if isinstance(sentences, str):
      raise ValueError(f"fit needs a list of sentences, got one str: {sentences!r}")
    is_text = isinstance(sentences, (list, tuple)) and all(isinstance(s, str) for s in sentences)
    if from_store and not is_text:
      raise ValueError("fit(from_store=True) reads the sentences' vectors from the store: give a list of str")
    if from_store:
      x = self._stored(sentences)
    else:
      x = self.encode_raw(sentences) if is_text else np.asarray(sentences, np.float32)
    if not from_store and x.ndim == 2 and x.shape[1] != self.embedder.dim:
      raise ValueError(f"fit got vectors of width {x.shape[1]}; this encoder's raw vectors are "
                       f"D={self.embedder.dim} ({self.embedder.pooling.describe()})")
    self._set_calibration(calibrator.fit(method, x, flow_config=flow_config, learning_rate=learning_rate,
                                         num_train_epochs=num_train_epochs, batch_size=batch_size, seed=seed,
                                         init=init))
    return self

  def _stored(self, sentences):
    """store_stream.StoreShards of `sentences`, embedded into the store on disk first (what is missing)."""
    if not self.store.folder:
      raise ValueError("fit(from_store=True) reads the embedding store on disk; this encoder keeps it in memory "
                       "(give cache_dir to from_pretrained or load)")
    self.store.ensure(sentences, pooling_lib.quantities(self.embedder.pooling))
    return store_stream.fit_set(self.store.folder, self.embedder.pooling, sentences)

  def _set_calibration(self, calibration):
    if calibration is not None and calibration.input_dim != self.embedder.dim:
      raise ValueError(f"a calibration of vectors of width {calibration.input_dim} cannot calibrate this "
                       f"encoder's D={self.embedder.dim} ({self.embedder.pooling.describe()})")
    self.calibration = calibration

  def save(self, path, overwrite=False):
    """Writes the encoder's description and calibration to the directory `path`, atomically.

    An existing `path` is replaced only when it is empty or an earlier `save` wrote it (its sentence_encoder.json
    and calibration/, nothing else); any other folder only with `overwrite=True`; the working directory, its
    parents, the home directory and / never (docs/security.md).

    Args:
      path: str, the directory.
      overwrite: bool, replace a non-empty folder that `save` did not write.

    Returns:
      str, path.

    Raises:
      errors.UserError: `path` may not be replaced (one line saying why and how to go on).
    """
    with io_utils.atomic_dir(path, own=encoder_folder.OWN, overwrite=overwrite) as tmp:
      encoder_folder.write(tmp, self.embedder, self.fingerprint, self.calibration)
    return path

  @classmethod
  def load(cls, path, model=None, batch_size=64, cache_dir=None, trust_saved_model=False):
    """Restores what `save(path)` wrote: the model it names (or `model`), pooling, max_seq_length, calibration.

    The folder's files are data: a model it names in TF1-checkpoint or HF safetensors format, or a preset, is
    loaded; a SavedModel (TF-Hub format) is a program, and is loaded only when the caller names it (`model=`) or
    opts in with `trust_saved_model=True` (docs/security.md). A relative model path is resolved against `path`.

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
    info = encoder_folder.read_info(path)
    if model is None:
      model = encoder_folder.model_of(path, info["model"], trust_saved_model)
    try:
      encoder = cls.from_pretrained(
          model, pooling=info["pooling"], max_seq_length=info["max_seq_length"], batch_size=batch_size,
          cache_dir=cache_dir, **({} if isinstance(model, loaders.LoadedModel) else
                                  {"do_lower_case": info["do_lower_case"]}))
    except ValueError as e:  # the saved settings do not fit the model (e.g. max_seq_length > its positions)
      if isinstance(e, errors.UserError):
        raise
      raise errors.UserError(str(e), os.path.join(path, encoder_folder.INFO_FILE)) from e
    return encoder.load_calibration(path)

  def load_calibration(self, path):
    """Sets the calibration saved in `path` (by `save`), after checking it was fitted on this encoder's vectors.

    Returns:
      self.

    Raises:
      ValueError: it was fitted on another model, pooling or max_seq_length (one line naming both); errors.UserError:
        its calibration/ is missing, broken, or not the method sentence_encoder.json names.
    """
    info = encoder_folder.read_info(path)
    if info["fingerprint"] != self.fingerprint:
      fitted = _describe(info["model"], info["pooling"], info["max_seq_length"], info["fingerprint"])
      raise ValueError(f"{path} was saved from {fitted}, not from this encoder's {self.describe()}")
    self._set_calibration(encoder_folder.load_calibration(path, info))
    return self

  def load_flow(self, flow_dir):
    """Sets a flow fitted by run_flow.py (exp/<name>/flows/<fit>-<dataset>) or `flow_fitting.fit_flow`, after
    checking its flow.json: fitted on vectors of this width, pooling and max_seq_length.

    Returns:
      self.

    Raises:
      ValueError: naming each setting that differs, with this encoder's value and the flow's.
    """
    fitted_flow.check(flow_dir, dim=self.embedder.dim, provenance={
        "sentence_embedding_type": self.embedder.pooling.name, "max_seq_length": self.embedder.max_seq_length})
    self._set_calibration(calibrator.load(flow_dir))
    return self

  def semantic_search(self, queries, corpus, top_k=10, precision="float32", rescore=True,
                      candidates=quantized_search.DEFAULT_CANDIDATES):
    """Top-k of each query in the corpus: exact cosine ("float32"), or ("binary") by Hamming distance of the sign
    bits, the `candidates` nearest rescored by cosine with their int8 codes (the calibration's int8 ranges;
    bert_flow_tf/quantized_search.py). Arguments and result as `search.SearchMixin.semantic_search`."""
    ranges = None if self.calibration is None else self.calibration.int8_ranges
    return quantized_search.semantic_search(self.vectors_of(queries), self.vectors_of(corpus), top_k, precision,
                                            rescore, candidates, ranges)

  def export(self, export_dir, version=1, overwrite=False, corpus=None, search="float32", truncate_dim=None,
             precisions=()):
    """Writes the servable SavedModels (README: Encoding and serving; bert_flow_tf/serving/export.py).

    export_dir/text/<version> (strings in), export_dir/ids/<version> (token ids in) and export_info.json, as
    run_flow.py --export_dir writes them, with the calibration in the graph (a flow, or a baseline as
    export.Affine); with a corpus also export_dir/search/<version>: query strings and k in,
    the top-k corpus indices, cosine scores and sentences out, computed in the graph. `ExportedEncoder` loads
    them back.

    Args:
      export_dir: str.
      version: int >= 1, TF Serving's version directory.
      overwrite: bool, replace existing versions (SavedModels only; see serving/export.py).
      corpus: None, a list of str, or the path of a UTF-8 file with one sentence per line.
      search: "float32" (search/<version>, exact) or "binary" (binary_search/<version>: Hamming search with int8
        rescoring, its corpus encoded a block at a time; serving/binary_search.py).
      truncate_dim: int or None, the binary search's width: the first truncate_dim calibrated dimensions.
      precisions: quantization precisions ("int8", "binary", ...) the text model also returns, one output each.

    Returns:
      dict: "text", "ids", "search" or "binary_search" (with a corpus) (the SavedModel directories) and "info".

    Raises:
      ValueError: an empty corpus.
    """
    if isinstance(corpus, (str, os.PathLike)):
      corpus = io_utils.read_lines(os.fspath(corpus))
    flow = None
    if self.calibration is not None and self.calibration.method == calibrator.FLOW:
      flow = self.calibration.glow
    elif self.calibration is not None:
      flow = export_lib.Affine(self.calibration.method, *self.calibration.affine())
    if search not in quantized_search.SEARCH_PRECISIONS:
      raise ValueError(f"search precision {search!r} is not supported; use one of "
                       f"{', '.join(quantized_search.SEARCH_PRECISIONS)}")
    quantizer = None
    if precisions:
      quantizer = binary_search.GraphQuantizer(precisions, None if self.calibration is None else
                                               self.calibration.int8_ranges, self.dim)
    paths = export_lib.export_models(self.embedder, flow, export_dir, version=version, overwrite=overwrite,
                                     quantizer=quantizer)
    if corpus is not None and search == "binary":
      paths["binary_search"] = binary_search.export_encoder_corpus(self, flow, list(corpus), export_dir,
                                                                   truncate_dim, version, overwrite)
    elif corpus is not None:
      paths["search"] = export_lib.export_search_model(self.embedder, flow, self.encode(corpus), list(corpus),
                                                       export_dir, version=version, overwrite=overwrite)
    return paths
