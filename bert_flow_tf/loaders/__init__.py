"""Loads a BERT encoder and its vocabulary from a local directory, detecting the format.

  loading.py          load_model (a directory, preset or the three TF1 files), detect_format, check_vocab_size
  loaded_model.py     LoadedModel: the encoder, its sizes, vocabulary and casing
  names.py            the one table: our variable names <-> TF1 checkpoint names <-> HF safetensors keys
  tf1_checkpoint.py   google-research TF1 checkpoints (read and write)
  tf1_flow.py         the Glow of an original BERT-flow checkpoint (`bert/flow/...`) -> glow.Glow
  safetensors.py      HF-format directories with model.safetensors (read and write)
  tfhub.py            TF-Hub encoder SavedModels (read and write)
  presets.py          named models shipped in installed packages (all-minilm-l6-v2, its Hub id) -> their directories
  st_folder.py        a sentence-transformers folder (modules.json): its BERT's folder, pooling, length, settings

The package's names are imported on first use (PEP 562): they load TensorFlow, and `presets` (what the commands'
--model_dir help and checks read) does not.
"""
from bert_flow_tf.utils import lazy

# Public name -> its module (a module name: that module), imported on first use; names is the table the format
# modules (each also writes its format) share.
_PUBLIC = {"LoadedModel": "bert_flow_tf.loaders.loaded_model", "check_vocab_size": "bert_flow_tf.loaders.loading",
           "detect_format": "bert_flow_tf.loaders.loading", "load_model": "bert_flow_tf.loaders.loading",
           "load_tf1_files": "bert_flow_tf.loaders.loading", "presets": "bert_flow_tf.loaders.presets",
           "safetensors": "bert_flow_tf.loaders.safetensors", "st_folder": "bert_flow_tf.loaders.st_folder",
           "tf1_checkpoint": "bert_flow_tf.loaders.tf1_checkpoint", "tf1_flow": "bert_flow_tf.loaders.tf1_flow",
           "tfhub": "bert_flow_tf.loaders.tfhub"}
__all__ = sorted(_PUBLIC)
__getattr__ = lazy.names(__name__, _PUBLIC)
