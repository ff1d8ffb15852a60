"""bert-flow-tf: BERT sentence embeddings and the BERT-flow calibration in TF2.

The Python API (bert_flow_tf/api.py, README: Python API): load_encoder, Encoder, fit_flow, Flow, export_model,
similarity, isotropy.

Everything here is built on Keras 2, imported by name (`import tf_keras`); importing the package leaves the
caller's `tf.keras` alone. The commands (bert_flow_tf/cli/, bert_flow_tf/encode.py) own their process and set
TF_USE_LEGACY_KERAS=1 before TensorFlow loads, so that it skips importing Keras 3 (about 1.5 s of start-up).
"""
__all__ = ["load_encoder", "Encoder", "fit_flow", "Flow", "export_model", "similarity", "isotropy"]


def __getattr__(name):
  # The API loads TensorFlow; importing it on first use keeps `import bert_flow_tf.data` (numpy only) light.
  if name in __all__:
    from bert_flow_tf import api  # pylint: disable=import-outside-toplevel
    return getattr(api, name)
  raise AttributeError(f"module 'bert_flow_tf' has no attribute {name!r}")
