"""What sentence-transformers users call on a model, over any encoder's vectors (docs/api.md).

`StApi` gives a class `encode` in sentence-transformers' signature, `encode_query` / `encode_document`, prompts,
`truncate_dim`, `get_sentence_embedding_dimension`, `similarity_fn_name`, `similarity`, `similarity_pairwise` and
`semantic_search`, over three hooks of the class:

  _embed(texts, batch_size, show_progress_bar) -> np.float32 [n, D]   the (calibrated) vectors
  _token_outputs(texts, batch_size) -> list of n (inputs dict, float32 [S_i, H])
  dim: int, D

`encode` runs, as sentence-transformers does: prompt + text -> vectors -> unit length when the model ends with a
Normalize (`normalize`) -> truncate_dim dimensions -> unit length (normalize_embeddings) -> precision, by the one
contract of `sentence_codes` (the codes of a class with int8 ranges are taken from its calibrated vectors, so they
depend on the sentence alone). The calibration (a flow, whitening) comes before all of them: truncate_dim cuts the
calibrated vector, keeping its first truncate_dim dimensions, or for a calibration with a truncation order (a flow)
those it orders first (`quantization.truncation`).

Legend: n = sentences, D = width, S_i = the tokens of sentence i.
"""
import contextlib

import numpy as np
import tensorflow as tf
from absl import logging

from bert_flow_tf import search
from bert_flow_tf import similarity as similarity_lib
from bert_flow_tf.quantization import sentence_codes
from bert_flow_tf.quantization import st_layouts
from bert_flow_tf.utils import progress

OUTPUT_VALUES = ("sentence_embedding", "token_embeddings", None)


def texts_of(value):
  """A str, list/tuple of str or numpy string array -> list of str; anything else -> None (vectors)."""
  if isinstance(value, str):
    return [value]
  if isinstance(value, np.ndarray) and value.dtype.kind in "US":
    return [str(v) for v in value.reshape(-1)]
  if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
    return [str(v) for v in value]
  return None


def device_scope(device):
  """A tf.device context for `device`: None (TF's placement), "cpu", "gpu", "cuda", "cuda:1", "/GPU:0", ...

  Raises:
    ValueError: a list of devices (multi-process encoding), or a device this machine does not have.
  """
  if device is None:
    return contextlib.nullcontext()
  if not isinstance(device, str):
    raise ValueError(f"device must be None or one device name such as 'cpu', 'gpu:0' or '/GPU:0', got {device!r} "
                     "(multi-process encoding over a list of devices is not supported)")
  name = device.strip().lower().replace("cuda", "gpu")
  kind, _, index = name.lstrip("/").replace("device:", "").partition(":")
  if kind not in ("cpu", "gpu") or (index and not index.isdigit()):
    raise ValueError(f"device {device!r} is not a device name: use 'cpu', 'gpu', 'gpu:N', 'cuda:N' or '/GPU:N'")
  spec = f"/{kind.upper()}:{index or 0}"
  known = [d.name.replace("/device:", "/") for d in tf.config.list_logical_devices()]
  if spec not in known:
    raise ValueError(f"device {device!r} ({spec}) is not on this machine, which has {', '.join(known)}")
  return tf.device(spec)


def _inputs(inputs, kwargs):
  """encode's `inputs`, or sentence-transformers 5's `sentences=` popped from kwargs (6 still takes that name)."""
  if "sentences" in kwargs:
    if inputs is not None:
      raise TypeError("encode got inputs twice: as inputs and as sentences= (its earlier name)")
    return kwargs.pop("sentences")
  if inputs is None:
    raise TypeError("encode needs inputs: a str or a list of str")
  return inputs


class StApi:
  """sentence-transformers' calls over the hooks of the module notes.

  Attributes the class may set: prompts (dict name -> str), default_prompt_name (str or None), truncate_dim (int or
  None), truncation_order (int32 [D] or None: the dimensions truncate_dim keeps first, `quantization.truncation`),
  int8_ranges (float32 [2, D] or None: the calibration's, `calibration.int8_ranges`), normalize (bool: the model ends with a Normalize), similarity_fn_name ("cosine" (default), "dot",
  "euclidean" or "manhattan"; bert_flow_tf.similarity).
  """

  prompts = {}
  default_prompt_name = None
  truncate_dim = None
  truncation_order = None
  int8_ranges = None
  normalize = False
  default_device = None  # the device `encode` runs on when the call names none (st_habits: `to`)
  _similarity_fn_name = None

  @property
  def similarity_fn_name(self):
    return self._similarity_fn_name or "cosine"

  @similarity_fn_name.setter
  def similarity_fn_name(self, value):
    self._similarity_fn_name = None if value is None else similarity_lib.check_name(value)

  def vectors_of(self, texts_or_vectors, for_cosine=False):
    """Sentences (str, list of str, numpy string array) encoded as `encode` does, or vectors [n, D] / [D] ->
    np.float32 [n, D].

    for_cosine: the vectors are only scored by cosine, so a model's Normalize step is skipped (it changes no cosine
    and would round the scores differently).
    """
    texts = texts_of(texts_or_vectors)
    if texts is None:
      return np.atleast_2d(np.asarray(texts_or_vectors, np.float32))
    prompt = self._prompt(None, None)
    texts = [prompt + text for text in texts] if prompt else texts
    return self._embedded(texts, truncate_dim=self.truncate_dim, model_normalize=not for_cosine)

  def similarity(self, a, b):
    """similarity_fn_name's scores of every a with every b.

    Args:
      a: str, list of n str, numpy string array, or vectors float [n, D] (e.g. from `encode`).
      b: the same, m of them.

    Returns:
      np.float32 [n, m] (a str or a [D] vector counts as one row).
    """
    cosine = self.similarity_fn_name == "cosine"
    return similarity_lib.matrix(self.similarity_fn_name, self.vectors_of(a, cosine), self.vectors_of(b, cosine))

  def similarity_pairwise(self, a, b):
    """similarity_fn_name's score of a[i] with b[i]: as `similarity`, n of each -> np.float32 [n]."""
    cosine = self.similarity_fn_name == "cosine"
    return similarity_lib.pairwise(self.similarity_fn_name, self.vectors_of(a, cosine), self.vectors_of(b, cosine))

  def semantic_search(self, queries, corpus, top_k=10):
    """Exact cosine top-k of each query in the corpus (search.semantic_search).

    Args:
      queries: str, list of n str, numpy string array, or vectors float [n, D].
      corpus: the same, m of them (encode a large corpus once and pass its vectors).
      top_k: int >= 1.

    Returns:
      list of n lists of {"corpus_id": int, "score": float}, best first.
    """
    search.check_top_k(top_k)
    return search.semantic_search(self.vectors_of(queries, True), self.vectors_of(corpus, True), top_k=top_k)


  def _prompt(self, prompt_name, prompt):
    """The text to put before each sentence, as sentence-transformers picks it; None for none."""
    if prompt is not None:
      if prompt_name is not None:
        logging.warning("encode got both prompt and prompt_name; using prompt %r", prompt)
      return prompt
    if prompt_name is not None:
      if prompt_name not in self.prompts:
        raise ValueError(f"prompt_name {prompt_name!r} is not among the prompts {sorted(self.prompts)}")
      return self.prompts[prompt_name]
    return self.prompts.get(self.default_prompt_name) if self.default_prompt_name else None

  def _embedded(self, texts, batch_size=None, show_progress_bar=None, truncate_dim=None, normalize_embeddings=False,
                model_normalize=True):
    """np.float32 [n, D'] of a list of str: vectors -> Normalize -> truncate -> normalize_embeddings."""
    return self._encoded(texts, batch_size, show_progress_bar, truncate_dim, normalize_embeddings,
                         model_normalize)[1]

  def _encoded(self, texts, batch_size=None, show_progress_bar=None, truncate_dim=None, normalize_embeddings=False,
               model_normalize=True):
    """(calibrated float32 [n, D], returned float32 [n, D']): `sentence_codes.vectors` of a list of str."""
    calibrated = self._embed(texts, batch_size, show_progress_bar)
    return calibrated, sentence_codes.vectors(calibrated, model_normalize and self.normalize, truncate_dim,
                                              self.truncation_order, normalize_embeddings)

  def encode(self, inputs=None, prompt_name=None, prompt=None, batch_size=None, show_progress_bar=None,
             output_value="sentence_embedding", precision="float32", convert_to_numpy=True, convert_to_tensor=False,
             device=None, normalize_embeddings=False, truncate_dim=None, pool=None, chunk_size=None, ranges=None,
             calibration_embeddings=None, **kwargs):
    """Sentence vectors in input order, as sentence-transformers' `SentenceTransformer.encode` (docs/api.md).

    Args:
      inputs: str, list of str or numpy string array (sentence-transformers 6's name; its earlier `sentences=` is
        taken too, as 6 takes it).
      prompt_name: str or None, a key of `prompts`; prompt: str or None, put before each sentence (wins).
      batch_size: int or None (the object's), sentences per BERT batch.
      show_progress_bar: True, False or None (auto: after 5 s with work left; utils.progress).
      output_value: "sentence_embedding", "token_embeddings" (per sentence float32 [S_i, H]) or None (per
        sentence a dict of the inputs, token_embeddings and sentence_embedding).
      precision: "float32", "int8", "uint8", "binary" or "ubinary" (bert_flow_tf.quantization): the codes of
        `sentence_codes` (with a calibration: of its vectors, with its int8 ranges; the same codes whatever the batch
        or normalize_embeddings), else as sentence-transformers, from `ranges`, `calibration_embeddings` or this
        call's vectors.
      convert_to_numpy: bool, one np.ndarray (else a list of tf.Tensor).
      convert_to_tensor: bool, one tf.Tensor (wins over convert_to_numpy).
      device: None (the object's `default_device`), or one device ("cpu", "gpu:0", "/GPU:0") to run on.
      normalize_embeddings: bool, unit length after truncate_dim.
      truncate_dim: int or None (the object's truncate_dim): keep truncate_dim dimensions (the first, or a flow's
        of largest variance: `quantization.truncation`).
      pool, chunk_size: multi-process encoding; only None is accepted.
      ranges: float [2, D'] or None, int8/uint8 ranges of the returned vectors (quantize_embeddings'; wins over
        the calibration's); calibration_embeddings: float [m, D'] or None, vectors to take them from.
      **kwargs: `task` is accepted and ignored (no Router module here); anything else is refused.

    Returns:
      np.ndarray [D] for a str, [n, D] for a list (binary precisions: [n, D / 8]); a tf.Tensor with
      convert_to_tensor; a list of n with convert_to_numpy=False or another output_value.
    """
    sentences = _inputs(inputs, kwargs)
    if set(kwargs) - {"task"}:
      raise ValueError(f"encode got keyword arguments it does not use: {sorted(set(kwargs) - {'task'})}")
    if pool is not None or chunk_size is not None:
      raise ValueError("multi-process encoding (pool, chunk_size) is not supported: encode runs one "
                       "tf.distribute strategy (from_pretrained's model and strategy)")
    st_layouts.check_precision(precision)
    progress.check_show(show_progress_bar)
    if output_value not in OUTPUT_VALUES:
      raise ValueError(f"output_value {output_value!r} is not one of {OUTPUT_VALUES}")
    single = isinstance(sentences, str)
    texts = texts_of(sentences)
    texts = list(sentences) if texts is None else texts
    for i, text in enumerate(texts):
      if not isinstance(text, str):
        raise ValueError(f"sentences must be str; item {i} is {type(text).__name__}: {text!r}")
    prompt = self._prompt(prompt_name, prompt)
    if prompt:
      texts = [prompt + text for text in texts]
    truncate_dim = self.truncate_dim if truncate_dim is None else truncate_dim
    with device_scope(self.default_device if device is None else device):
      if output_value == "sentence_embedding":
        calibrated, x = self._encoded(texts, batch_size, show_progress_bar, truncate_dim, normalize_embeddings)
        x = sentence_codes.codes(calibrated, x, precision, truncate_dim, self.truncation_order, self.int8_ranges,
                                 ranges, calibration_embeddings)
        out = tf.constant(x) if convert_to_tensor else x if convert_to_numpy else [tf.constant(v) for v in x]
      else:
        rows = self._token_outputs(texts, batch_size or self.batch_size)
        if output_value == "token_embeddings":
          out = [tokens for _, tokens in rows]
        else:
          x = self._embedded(texts, batch_size, False, truncate_dim, normalize_embeddings)
          out = [{**inputs, "token_embeddings": tokens, "sentence_embedding": tf.constant(v)}
                 for (inputs, tokens), v in zip(rows, x)]
    return out[0] if single else out

  def encode_query(self, inputs=None, prompt_name=None, prompt=None, **kwargs):
    """`encode` with the "query" prompt when the model has one and none is given."""
    if prompt_name is None and prompt is None and "query" in self.prompts:
      prompt_name = "query"
    return self.encode(inputs, prompt_name=prompt_name, prompt=prompt, **kwargs)

  def encode_document(self, inputs=None, prompt_name=None, prompt=None, **kwargs):
    """`encode` with the first of the "document", "passage", "corpus" prompts the model has, when none is given."""
    if prompt_name is None and prompt is None:
      prompt_name = next((name for name in ("document", "passage", "corpus") if name in self.prompts), None)
    return self.encode(inputs, prompt_name=prompt_name, prompt=prompt, **kwargs)

  def get_max_seq_length(self):
    """int, tokens per sentence the model reads (the class's max_seq_length)."""
    return self.max_seq_length

  def get_sentence_embedding_dimension(self):
    """int, the width of `encode`'s vectors: `dim`, or truncate_dim when smaller."""
    return min(self.dim, self.truncate_dim) if self.truncate_dim else self.dim

  @contextlib.contextmanager
  def truncate_sentence_embeddings(self, truncate_dim):
    """Within the `with` block, `encode` keeps `truncate_dim` dimensions, as `truncate_dim` does (None: all)."""
    before, self.truncate_dim = self.truncate_dim, truncate_dim
    try:
      yield
    finally:
      self.truncate_dim = before
