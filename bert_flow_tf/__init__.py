"""bert-flow-tf: BERT sentence embeddings and the BERT-flow calibration in TF2.

The Python API (README: Python API):
  SentenceEncoder   a BERT, a pooling and an optional calibration: from_pretrained, encode, fit, similarity,
                    semantic_search, save/load, export (bert_flow_tf/sentence_encoder.py)
  ExportedEncoder   the same encode, similarity and search from an export's SavedModels alone
                    (bert_flow_tf/exported_encoder.py)
  cos_sim, semantic_search   on vectors (bert_flow_tf/search.py); isotropy (bert_flow_tf/evaluation/isotropy.py)
  quantize_embeddings        int8 / uint8 / binary / ubinary in sentence-transformers' layouts
                             (quantization/st_layouts.py)
  util                       sentence-transformers' util helpers: cos_sim, semantic_search, quantize_embeddings,
                             paraphrase_mining, community_detection (util.py)

Everything here is built on Keras 2, imported by name (`import tf_keras`); importing the package leaves the
caller's `tf.keras` alone. The commands (bert_flow_tf/cli/) own their process and set
TF_USE_LEGACY_KERAS=1 before TensorFlow loads, so that it skips importing Keras 3 (about 1.5 s of start-up).
"""
from bert_flow_tf.utils import lazy

# Public name -> its module. Imported on first use: they load TensorFlow, and `import bert_flow_tf.data` (numpy
# only) stays light.
_PUBLIC = {"SentenceEncoder": "bert_flow_tf.sentence_encoder", "ExportedEncoder": "bert_flow_tf.exported_encoder",
           "cos_sim": "bert_flow_tf.search", "semantic_search": "bert_flow_tf.search",
           "isotropy": "bert_flow_tf.evaluation.isotropy", "quantize_embeddings": "bert_flow_tf.quantization",
           "util": "bert_flow_tf.util"}
__all__ = sorted(_PUBLIC)
__getattr__ = lazy.names(__name__, _PUBLIC)
