"""What sentence-transformers users call on a model, over any encoder's vectors (docs/api.md).

`StApi` gives both encoders `encode` in sentence-transformers' signature, `encode_query` / `encode_document`,
prompts, `truncate_dim`, `get_sentence_embedding_dimension`, `similarity_fn_name`, `similarity`,
`similarity_pairwise`, `semantic_search` (at a precision: quantization.code_search) (and `device`, `to`, `eval`:
st_habits.Devices; a torch model's calls refused in one line: st_habits.TorchCalls), over two parts each encoder
gives its constructor:

  calibrated_embedder   sentences -> the calibrated vectors, with
                          dim: int D; max_seq_length: int; batch_size: int (read and set)
                          embed(texts, batch_size=None, show_progress_bar=None) -> np.float32 [n, D]
                          token_outputs(texts, batch_size=None) -> list of n (inputs dict, float32 [S_i, H])
  sentence_codes        quantization.sentence_codes.SentenceCodes: the model's Normalize, the default truncate_dim,
                        the calibration's truncation order and int8 ranges

`encode` runs, as sentence-transformers does: prompt + text -> calibrated vectors -> unit length when the model
ends with a Normalize -> truncate_dim dimensions (the first, or those a saved truncation order puts first) -> unit
length (normalize_embeddings) -> precision, by the one contract of `quantization.sentence_codes` (with int8
ranges, the codes of the calibrated vectors: they depend on the sentence alone).

Legend: n = sentences, D = width, S_i = the tokens of sentence i.
"""
import contextlib

import numpy as np
import tensorflow as tf
from absl import logging

from bert_flow_tf import search
from bert_flow_tf import similarity as similarity_lib
from bert_flow_tf import st_habits
from bert_flow_tf import text_inputs
from bert_flow_tf.embedding import settings
from bert_flow_tf.quantization import code_search
from bert_flow_tf.quantization import hamming_search
from bert_flow_tf.quantization import st_layouts
from bert_flow_tf.utils import progress

OUTPUT_VALUES = ("sentence_embedding", "token_embeddings", None)


def _inputs(inputs, kwargs):
  """encode's `inputs`, or sentence-transformers 5's `sentences=` popped from kwargs (6 still takes that name)."""
  if "sentences" in kwargs:
    if inputs is not None:
      raise TypeError("encode got inputs twice: as inputs and as sentences= (its earlier name)")
    return kwargs.pop("sentences")
  if inputs is None:
    raise TypeError("encode needs inputs: a str or a list of str")
  return inputs


class StApi(st_habits.Devices, st_habits.TorchCalls):
  """sentence-transformers' calls over an encoder's parts (see the module notes).

  Args:
    calibrated_embedder: the sentences' calibrated vectors (the module notes' contract).
    sentence_codes: quantization.sentence_codes.SentenceCodes of those vectors.
    prompts: dict name -> str, or None (none); default_prompt_name: str (a key of prompts) or None.
    similarity_fn_name: "cosine" (None: the default), "dot", "euclidean" or "manhattan" (bert_flow_tf.similarity).
    default_device: str or None, the device `encode` runs on when a call names none (st_habits.Devices).

  Raises ValueError: default_prompt_name not among the prompts, or an unknown similarity_fn_name.
  """

  def __init__(self, calibrated_embedder, sentence_codes, prompts=None, default_prompt_name=None,
               similarity_fn_name=None, default_device=None):
    self.calibrated_embedder = calibrated_embedder
    self.sentence_codes = sentence_codes
    self.prompts = dict(prompts or {})
    if default_prompt_name is not None and default_prompt_name not in self.prompts:
      raise ValueError(f"default_prompt_name {default_prompt_name!r} is not among the prompts {sorted(self.prompts)}")
    self.default_prompt_name = default_prompt_name
    self.similarity_fn_name = similarity_fn_name
    super().__init__(default_device)

  @property
  def similarity_fn_name(self):
    return self._similarity_fn_name or "cosine"

  @similarity_fn_name.setter
  def similarity_fn_name(self, value):
    self._similarity_fn_name = None if value is None else similarity_lib.check_name(value)

  @property
  def dim(self):
    """int D, the width of the calibrated vectors."""
    return self.calibrated_embedder.dim

  @property
  def batch_size(self):
    """int, sentences per batch unless `encode` is given one (read and set)."""
    return self.calibrated_embedder.batch_size

  @batch_size.setter
  def batch_size(self, value):
    self.calibrated_embedder.batch_size = settings.check_batch_sentences("batch_size", value)

  @property
  def truncate_dim(self):
    """int or None: the dimensions `encode` keeps when a call names none (read and set)."""
    return self.sentence_codes.truncate_dim

  @truncate_dim.setter
  def truncate_dim(self, value):
    self.sentence_codes.truncate_dim = value

  @property
  def normalize(self):
    """bool: unit-length vectors out of `encode` (the model ends with a Normalize; read and set)."""
    return self.sentence_codes.normalize

  @normalize.setter
  def normalize(self, value):
    self.sentence_codes.normalize = bool(value)

  @property
  def truncation_order(self):
    """int32 [D] or None: the dimensions `truncate_dim` keeps first (the calibration's, `quantization.truncation`)."""
    return self.sentence_codes.truncation_order

  @property
  def int8_ranges(self):
    """float32 [2, D] or None: the calibration's int8 ranges (`quantization.int8_ranges`; `sentence_codes`)."""
    return self.sentence_codes.int8_ranges

  def vectors_of(self, texts_or_vectors, for_cosine=False):
    """Sentences (str, list of str, numpy string array) encoded as `encode` does, or vectors [n, D] / [D] ->
    np.float32 [n, D].

    for_cosine: the vectors are only scored by cosine, so a model's Normalize step is skipped (it changes no cosine
    and would round the scores differently).
    """
    texts = text_inputs.texts_of(texts_or_vectors)
    if texts is None:
      return np.atleast_2d(np.asarray(texts_or_vectors, np.float32))
    prompt = self._prompt(None, None)
    texts = [prompt + text for text in texts] if prompt else texts
    return self._encoded(texts, truncate_dim=self.truncate_dim, model_normalize=not for_cosine)[1]

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

  def semantic_search(self, queries, corpus, top_k=10, precision="float32", rescore=True, candidates=None,
                      num_lists=0, nprobe=None):
    """Top-k of each query in the corpus: exact cosine (precision "float32", search.semantic_search), or the binary
    search of `code_search.semantic_search` ("binary") with the int8 ranges cut as `encode` cuts.

    Args:
      queries: str, list of n str, numpy string array, or vectors float [n, D].
      corpus: the same, m of them (encode a large corpus once and pass its vectors).
      top_k: int >= 1, of any size: min(top_k, m) hits.
      precision, rescore, candidates, num_lists, nprobe: `code_search.semantic_search`'s (None: its defaults).

    Returns:
      list of n lists of {"corpus_id": int, "score": float}, best first.
    """
    top_k = search.check_top_k(top_k)
    hamming_search.check_search_precision(precision)
    return code_search.semantic_search(self.vectors_of(queries, True), self.vectors_of(corpus, True), top_k,
                                       precision, rescore, candidates, self.sentence_codes.kept_ranges(),
                                       num_lists, nprobe)

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

  def _encoded(self, texts, batch_size=None, show_progress_bar=None, truncate_dim=None, normalize_embeddings=False,
               model_normalize=True):
    """(calibrated float32 [n, D], returned float32 [n, D']) of a list of str: the calibrated vectors, and what
    `encode` returns of them (`SentenceCodes.vectors`: Normalize -> truncate -> normalize_embeddings)."""
    calibrated = self.calibrated_embedder.embed(texts, batch_size, show_progress_bar)
    return calibrated, self.sentence_codes.vectors(calibrated, truncate_dim, normalize_embeddings, model_normalize)

  def encode(self, inputs=None, prompt_name=None, prompt=None, batch_size=None, show_progress_bar=None,
             output_value="sentence_embedding", precision="float32", convert_to_numpy=True, convert_to_tensor=False,
             device=None, normalize_embeddings=False, truncate_dim=None, pool=None, chunk_size=None, ranges=None,
             calibration_embeddings=None, **kwargs):
    """Sentence vectors in input order, as sentence-transformers' `SentenceTransformer.encode` (docs/api.md).

    Args:
      inputs: str, list of str or numpy string array; bytes are UTF-8 text (`text_inputs`) (sentence-transformers
        6's name; its earlier `sentences=` is taken too, as 6 takes it).
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
      raise ValueError(f"pool, chunk_size: {st_habits.MULTI_PROCESS}")
    st_layouts.check_precision(precision)
    progress.check_show(show_progress_bar)
    if output_value not in OUTPUT_VALUES:
      raise ValueError(f"output_value {output_value!r} is not one of {OUTPUT_VALUES}")
    single = text_inputs.is_one(sentences)
    texts = text_inputs.sentence_list(sentences)
    prompt = self._prompt(prompt_name, prompt)
    if prompt:
      texts = [prompt + text for text in texts]
    truncate_dim = self.sentence_codes.cut(truncate_dim)
    with st_habits.device_scope(self.default_device if device is None else device):
      if output_value == "sentence_embedding":
        calibrated, x = self._encoded(texts, batch_size, show_progress_bar, truncate_dim, normalize_embeddings)
        x = self.sentence_codes.codes(calibrated, x, precision, truncate_dim, ranges, calibration_embeddings)
        out = tf.constant(x) if convert_to_tensor else x if convert_to_numpy else [tf.constant(v) for v in x]
      else:
        rows = self.calibrated_embedder.token_outputs(texts, batch_size)
        if output_value == "token_embeddings":
          out = [tokens for _, tokens in rows]
        else:
          x = self._encoded(texts, batch_size, False, truncate_dim, normalize_embeddings)[1]
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
    """int, tokens per sentence the model reads (including [CLS] and [SEP])."""
    return self.calibrated_embedder.max_seq_length

  def get_sentence_embedding_dimension(self):
    """int, the width of `encode`'s vectors: `dim`, or truncate_dim when smaller."""
    return min(self.dim, self.truncate_dim) if self.truncate_dim else self.dim

  def get_embedding_dimension(self):
    """sentence-transformers 6.2's name of get_sentence_embedding_dimension."""
    return self.get_sentence_embedding_dimension()

  @contextlib.contextmanager
  def truncate_sentence_embeddings(self, truncate_dim):
    """Within the `with` block, `encode` keeps `truncate_dim` dimensions, as `truncate_dim` does (None: all)."""
    before, self.truncate_dim = self.truncate_dim, truncate_dim
    try:
      yield
    finally:
      self.truncate_dim = before
