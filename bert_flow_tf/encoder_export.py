"""SentenceEncoder.export's files, from its two parts given explicitly (run_flow.py's --export_dir exports through
it too):

  <export_dir>/text/<version>, ids/<version>, export_info.json   always: serving.export.export_models, with the
                                                                  quantized outputs asked (graph_quantizer)
  <export_dir>/search/<version>          with a corpus and search="float32": serving.search_model
  <export_dir>/binary_search/<version>   with a corpus and search="binary": quantization.binary_search_model
  <export_dir>/litert/                   litert=True: serving.litert

written whole (serving.export_folder): in a hidden folder beside export_dir, export_info.json (with every file's
SHA-256) last, then renamed onto export_dir.

The calibration is in every graph (a flow, or a baseline as graph_calibration.Affine: `graph_calibration.in_graph`);
the sentence codes give the model's Normalize, the truncation order, the int8 ranges and the default truncate_dim,
recorded in export_info.json and cut into the binary search and LiteRT models as `encode` cuts.

Legend: D = the calibrated width, D' = the kept dimensions.
"""
import os

from bert_flow_tf.quantization import binary_search_model
from bert_flow_tf.quantization import graph_quantizer
from bert_flow_tf.quantization import hamming_search
from bert_flow_tf.quantization import truncation
from bert_flow_tf.serving import export as export_lib
from bert_flow_tf.serving import export_folder
from bert_flow_tf.serving import graph_calibration
from bert_flow_tf.serving import litert as litert_lib
from bert_flow_tf.serving import search_model
from bert_flow_tf.utils import io_utils


def export(calibrated_embedder, sentence_codes, export_dir, version=1, overwrite=False, corpus=None,
           search="float32", truncate_dim=None, precisions=(), litert=False, num_lists=0):
  """Writes the files of the module notes.

  Args:
    calibrated_embedder: calibrated_embedder.CalibratedEmbedder (its embedder, calibration, dim D and embed).
    sentence_codes: quantization.sentence_codes.SentenceCodes of its vectors.
    export_dir: str.
    version: int >= 1, TF Serving's version directory.
    overwrite: bool, replace an existing export whole (a folder holding anything else is refused:
      serving/export_folder.py).
    corpus: None, a list of str, or the path of a UTF-8 file with one sentence per line.
    search: "float32" or "binary" (hamming_search.SEARCH_PRECISIONS), the corpus's search model.
    truncate_dim: int in 1..D or None: the binary search's width (None: all D) and the LiteRT files' (None: the
      codes' default).
    precisions: quantization precisions ("int8", "binary", ...) the text model also returns, one output each.
    litert: bool, also litert/model.tflite and model_int8.tflite: `encode`'s vectors.
    num_lists: int, the binary search's inverted-file lists (0: the exact scan; docs/quantization.md).

  Returns:
    dict: "text", "ids", "search" or "binary_search" (with a corpus) (SavedModel directories), "info", "litert".

  Raises:
    ValueError: an empty corpus, an unknown search or precision, truncate_dim out of 1..D or given with nothing
      to cut (no binary search corpus, no LiteRT files).
    errors.UserError: export_dir may not be replaced.
  """
  hamming_search.check_search_precision(search)
  if truncate_dim is not None:
    truncation.check(truncate_dim, calibrated_embedder.dim)
    if not litert and (corpus is None or search != "binary"):
      raise ValueError("truncate_dim cuts the binary search's corpus (corpus= with search='binary') and the LiteRT "
                       "files (litert=True); the text model returns every dimension, which "
                       "ExportedEncoder.encode(truncate_dim=) cuts as encode does")
  if isinstance(corpus, (str, os.PathLike)):
    corpus = io_utils.read_lines(os.fspath(corpus))
  embedder, codes = calibrated_embedder.embedder, sentence_codes
  in_graph = graph_calibration.in_graph(calibrated_embedder.calibration)
  export_lib.check_models(embedder, in_graph, version)
  quantizer = None
  if precisions:
    quantizer = graph_quantizer.GraphQuantizer(precisions, codes.int8_ranges, calibrated_embedder.dim)

  def write_parts(folder):
    info, paths = export_lib.write_models(embedder, in_graph, folder, version, quantizer, codes.truncation_order,
                                          codes.int8_ranges, codes.normalize)
    if corpus is not None and search == "binary":
      paths[binary_search_model.KIND] = binary_search_model.export_sentences(
          embedder, in_graph, calibrated_embedder.embed, list(corpus), codes.int8_ranges,
          codes.kept_indices(calibrated_embedder.dim, truncate_dim), folder, version, num_lists=num_lists)
    elif corpus is not None:
      sentences = list(corpus)
      paths["search"] = search_model.export_search_model(embedder, in_graph, calibrated_embedder.embed(sentences),
                                                         sentences, folder, version=version)
    if litert:
      cut = codes.cut(truncate_dim)
      dims = codes.kept_indices(calibrated_embedder.dim, cut) if cut else None
      paths["litert"] = litert_lib.export_litert(embedder, in_graph, folder, codes.normalize, dims)
    return info, paths

  return export_folder.write(export_dir, overwrite, write_parts)
