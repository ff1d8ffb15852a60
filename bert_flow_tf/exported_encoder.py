"""ExportedEncoder: `encode`, `similarity`, `semantic_search` and `search` from an export's SavedModels alone.

  enc = ExportedEncoder("export/")          # what SentenceEncoder.export or run_flow.py --export_dir wrote
  enc.encode(["A man plays a guitar."])     # np.float32 [1, D], through text/<version>'s serving_default
                                            # (sentence-transformers' encode arguments: st_api, docs/api.md)
  enc.search(["a guitar player"], k=3)      # through search/<version> (an export with a corpus)
  enc.search(["a guitar player"], k=3, precision="binary")   # through binary_search/<version>

No model code runs: the vectors come from the SavedModels' signatures (tokenizer, BERT, pooling and flow are in
their graphs), so an export needs this package only for these few lines, and tensorflow-text for its ops.

A SavedModel is a program: `ExportedEncoder(export_dir)` loads and runs the graphs in export_dir because the caller
named that folder. Load only exports you trust, as you would run only code you trust (docs/security.md). Before it
loads one, it checks that the export is complete and unchanged (serving/export_folder.py): export_info.json, the
export's last file, and every file it lists, with its SHA-256 (the LiteRT files too).

Legend: n = sentences, D = embedding width, k = results per query.
"""
import os

import numpy as np
import tensorflow as tf

from bert_flow_tf import search
from bert_flow_tf import st_api
from bert_flow_tf import text_inputs
from bert_flow_tf.embedding import settings
from bert_flow_tf.quantization import binary_search_model
from bert_flow_tf.quantization import hamming_search
from bert_flow_tf.quantization import int8_ranges
from bert_flow_tf.quantization import ivf_index
from bert_flow_tf.quantization import sentence_codes
from bert_flow_tf.quantization import truncation
from bert_flow_tf.serving import export_folder
from bert_flow_tf.utils import errors
from bert_flow_tf.utils import saved_models


def load_text_model(path):
  """Loads a text SavedModel (`saved_models.load`: a damaged one ends in one line naming its file); imports
  tensorflow_text first so its ops are registered."""
  import tensorflow_text  # noqa: F401  pylint: disable=unused-import,import-outside-toplevel
  return saved_models.load(path)


def encode_with_saved_model(model, sentences, batch_size=settings.BATCH_SENTENCES):
  """Embeds sentences through a text SavedModel's serving_default, in input order.

  Args:
    model: a loaded text SavedModel (see `load_text_model`) or its directory.
    sentences: list of str.
    batch_size: int. Sentences per call; batches are formed by character length to limit padding.

  Returns:
    np.float32 [n, D].
  """
  if isinstance(model, (str, os.PathLike)):
    model = load_text_model(os.fspath(model))
  serve = model.signatures["serving_default"]
  sentences = list(sentences)
  order = np.argsort([len(s) for s in sentences], kind="stable")
  parts = []
  for start in range(0, len(order), batch_size):
    batch = tf.constant([sentences[i] for i in order[start:start + batch_size]], tf.string)
    parts.append(serve(sentences=batch)["embeddings"].numpy())
  if not parts:
    width = serve.structured_outputs["embeddings"].shape[-1]
    return np.zeros([0, width], np.float32)
  out = np.empty([len(sentences), parts[0].shape[1]], np.float32)
  out[order] = np.concatenate(parts)
  return out


def _graph_count(count):
  """A checked count (a Python int >= 1: k, candidates, nprobe) as the int32 scalar the search graphs take. They use
  min(count, M) (M: corpus rows, or lists for nprobe, both below 2**31), so a larger count is cut to 2**31 - 1, the
  same answer, never wrapped around to a small or negative int32."""
  return tf.constant(min(count, np.iinfo(np.int32).max), tf.int32)


def latest_version(export_dir, kind="text"):
  """The highest numeric version under export_dir/<kind>/ (TF Serving's choice). Returns int."""
  folder = os.path.join(export_dir, kind)
  versions = sorted(int(name) for name in (os.listdir(folder) if os.path.isdir(folder) else []) if name.isdigit())
  if not versions:
    raise FileNotFoundError(f"no <version> directory under {folder}: not an export (SentenceEncoder.export, "
                            "run_flow.py --export_dir)")
  return versions[-1]


class SavedModelEmbedder:
  """An export's `calibrated_embedder` (st_api): sentences -> the calibrated vectors its text SavedModel returns.

  Args:
    text_model: the loaded text SavedModel.
    dim: int D, its width; max_seq_length: int (export_info.json's).
    batch_size: int, sentences per call unless a call names one (read and set).
  """

  def __init__(self, text_model, dim, max_seq_length, batch_size):
    self.text_model, self.dim, self.max_seq_length = text_model, dim, max_seq_length
    self.batch_size = settings.check_batch_sentences("batch_size", batch_size)

  def embed(self, texts, batch_size=None, show_progress_bar=None):
    """np.float32 [n, D] of a list of n str through the text model (no progress line)."""
    del show_progress_bar  # unused
    return encode_with_saved_model(self.text_model, texts, settings.batch_for(batch_size, self.batch_size))

  def token_outputs(self, texts, batch_size=None):
    raise ValueError("an export serves sentence vectors only: output_value must be 'sentence_embedding'")


class ExportedEncoder(st_api.StApi):
  """An export loaded for encoding and search.

  Args:
    export_dir: str, the directory SentenceEncoder.export (or run_flow.py --export_dir) wrote; its SavedModels are
      loaded and run (a trusted folder: see the module notes).
    version: int or None (the latest).
    batch_size: int, sentences per call of the text model unless `encode` is given one.

  Raises:
    errors.UserError (one line naming the folder or the file): an incomplete export (no export_info.json, or a file
    it lists missing), a file changed since the export (another SHA-256), or a bad export_info.json.

  Attributes:
    calibrated_embedder (a SavedModelEmbedder), sentence_codes: its parts (st_api.StApi).
    info: dict, export_info.json (model, pooling, max_seq_length, flow, dim).
    truncation_order: int32 [D] or None, the dimensions `truncate_dim` keeps first (the calibration's, recorded
      in export_info.json; `quantization.truncation`).
    int8_ranges: float32 [2, D] or None, the calibration's int8 ranges (recorded there): `encode`'s codes are the
      encoder's, and the text model's `embeddings_int8` (`sentence_codes`).
    normalize: bool, the model ends with a Normalize (recorded there): `encode` returns unit-length vectors as
      SentenceEncoder.encode does; the text model returns the calibrated vectors.
    text_model: the loaded text SavedModel.
    search_model: the loaded search SavedModel, or None when the export has no corpus.
    binary_search_model: the loaded binary search SavedModel (quantization.binary_search_model), or None.
  """

  def __init__(self, export_dir, version=None, batch_size=settings.BATCH_SENTENCES):
    self.info = export_folder.read_info(export_dir)
    info_path = os.path.join(export_dir, export_folder.INFO_FILE)
    if not isinstance(self.info.get("dim"), int) or isinstance(self.info.get("dim"), bool) or self.info["dim"] < 1:
      raise errors.UserError(f"'dim' must be an int >= 1, got {self.info.get('dim')!r}", info_path)
    dim, order, ranges = self.info["dim"], self.info.get("truncation_order"), self.info.get("int8_ranges")
    codes = sentence_codes.SentenceCodes(
        self.info.get("normalize", False) is True, None,
        None if order is None else truncation.checked(order, dim, info_path),
        None if ranges is None else int8_ranges.checked(ranges, info_path, dim))
    export_folder.verify(export_dir, self.info)  # complete and unchanged: before any graph is loaded
    self.version = latest_version(export_dir) if version is None else version
    if not export_folder.holds(self.info, f"text/{self.version}"):
      raise errors.UserError(f"no text/{self.version} in this export (its {export_folder.INFO_FILE} lists none)",
                             export_dir)
    self.text_model = load_text_model(os.path.join(export_dir, "text", str(self.version)))
    super().__init__(SavedModelEmbedder(self.text_model, dim, self.info.get("max_seq_length"), batch_size), codes)
    self.search_model, self.binary_search_model = (
        saved_models.load(os.path.join(export_dir, part)) if export_folder.holds(self.info, part) else None
        for part in (f"search/{self.version}", f"{binary_search_model.KIND}/{self.version}"))

  @property
  def max_seq_length(self):
    return self.calibrated_embedder.max_seq_length

  @property
  def search_precisions(self):
    """tuple of str, the search models the export holds: "float32" (search/) before "binary" (binary_search/)."""
    return tuple(p for p, model in (("float32", self.search_model), ("binary", self.binary_search_model)) if model)

  def search(self, queries, k=10, precision=None, candidates=None, nprobe=None):
    """The export's corpus searched in its graph: top-k by cosine (precision "float32", search/<version>), or by
    Hamming distance with int8 rescoring of `candidates` ("binary", binary_search/<version>).

    Args:
      queries: str or list of n str (bytes: UTF-8 text, `text_inputs`).
      k: int >= 1, of any size: min(k, corpus size) hits.
      precision: "float32", "binary", or None: the search model the export has (float32 when it has both).
      candidates: int >= k or None (`hamming_search.candidates_for`), the Hamming-nearest rescored (binary).
      nprobe: int >= 1, the lists of an inverted-file index probed (binary, its "search_probe" signature); None:
        the export's default.

    Returns:
      list of n lists of {"corpus_id": int, "score": float, "sentence": str}, best first.
    """
    k = search.check_top_k(k, "k")
    held = self.search_precisions
    if not held:
      raise ValueError("this export has no corpus to search: export it with SentenceEncoder.export(..., corpus=...)")
    precision = held[0] if precision is None else hamming_search.check_search_precision(precision)
    if precision not in held:
      raise ValueError(f"this export's corpus is searched in {held[0]} only: pass precision={held[0]!r}, or export "
                       f"it with search={precision!r}")
    model = self.search_model if precision == "float32" else self.binary_search_model
    queries = text_inputs.sentence_list(queries)
    inputs = {"queries": tf.constant(queries, tf.string), "k": _graph_count(k)}
    signature = "serving_default"
    if precision == "binary":
      inputs["candidates"] = _graph_count(hamming_search.candidates_for(k, candidates))
    if nprobe is not None:
      if precision != "binary" or "search_probe" not in model.signatures:
        raise ValueError("nprobe needs a binary search export with an inverted-file index (num_lists >= 1); this "
                         f"{precision} search scans every vector")
      inputs["nprobe"] = _graph_count(ivf_index.check_nprobe(nprobe))
      signature = "search_probe"
    out = model.signatures[signature](**inputs)
    indices, scores, sentences = (out[name].numpy() for name in ("indices", "scores", "sentences"))
    return [[{"corpus_id": int(i), "score": float(s), "sentence": t.decode("utf-8")}
             for i, s, t in zip(*row)] for row in zip(indices, scores, sentences)]

