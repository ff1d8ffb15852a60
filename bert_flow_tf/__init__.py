"""bert-flow-tf: BERT sentence embeddings and the BERT-flow calibration in TF2.

The Python API (bert_flow_tf/api.py, README: Python API): load_encoder, Encoder, fit_flow, Flow, export_model,
similarity, isotropy.
"""
import os

# Everything here is built on Keras 2 (tf_keras; hub.KerasLayer needs it). Saying so before TensorFlow is imported
# keeps `import tensorflow` from also importing Keras 3, which this project never uses (and matplotlib through it,
# when installed): about 1.5 s less start-up per process. A no-op when TensorFlow was imported first.
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

__all__ = ["load_encoder", "Encoder", "fit_flow", "Flow", "export_model", "similarity", "isotropy"]


def __getattr__(name):
  # The API loads TensorFlow; importing it on first use keeps `import bert_flow_tf.data` (numpy only) light.
  if name in __all__:
    from bert_flow_tf import api  # pylint: disable=import-outside-toplevel
    return getattr(api, name)
  raise AttributeError(f"module 'bert_flow_tf' has no attribute {name!r}")
