"""Quantization and quantized search: a sentence's codes (int8, uint8, binary, ubinary; truncated) and the search
over a corpus held as codes, in numpy and in a SavedModel's graph (docs/quantization.md).

  st_layouts           sentence-transformers' layouts: quantize_embeddings, PRECISIONS, min_max
  int8_ranges          the int8 ranges a calibration fits on its output (the gaussian rule) and saves beside it
  truncation           which dimensions truncate_dim keeps: the first, a flow's turned to its principal axes
  sentence_codes       the one rule of a sentence's vector and codes, whichever door; SentenceCodes, its settings
                       that both encoders hold
  corpus_codes         a corpus held as sign words and int8 codes (CorpusCodes), and the codes read back
  sign_rotation        ITQ: the rotation a corpus's sign bits are taken after, fitted on its codes
  hamming_search       the exact Hamming scan with int8 rescoring; every binary search's checks and candidates
  ivf_index            the inverted-file index over the same codes
  code_search          semantic_search over vectors at a precision (fp32, or binary with int8 rescoring)
  graph_ops            the graph ops both binary indexes share (sign bits into words, Hamming, int8 rescoring)
  graph_quantizer      the text model's quantized outputs in its graph (GraphQuantizer)
  ivf_probe            the inverted-file index in the graph: the nearest lists alone scanned
  binary_search_model  the binary_search SavedModel: a corpus as codes, Hamming then int8 rescoring in the graph

`quantize_embeddings` is bound here (imported on first use, as `bert_flow_tf.quantize_embeddings`); importing the
package loads none of the modules (the graph ones load TensorFlow).
"""
from bert_flow_tf.utils import lazy

# Public name -> its module (a module name: that module), imported on first use.
_PUBLIC = {"quantize_embeddings": "bert_flow_tf.quantization.st_layouts",
           "binary_search_model": "bert_flow_tf.quantization.binary_search_model",
           "code_search": "bert_flow_tf.quantization.code_search",
           "hamming_search": "bert_flow_tf.quantization.hamming_search",
           "ivf_index": "bert_flow_tf.quantization.ivf_index",
           "sentence_codes": "bert_flow_tf.quantization.sentence_codes",
           "st_layouts": "bert_flow_tf.quantization.st_layouts"}
__all__ = sorted(_PUBLIC)
__getattr__ = lazy.names(__name__, _PUBLIC)
