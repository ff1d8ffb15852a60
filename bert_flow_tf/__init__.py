"""bert-flow-tf: BERT sentence embeddings and the BERT-flow calibration in TF2."""
import os

# Everything here is built on Keras 2 (tf_keras; hub.KerasLayer needs it). Saying so before TensorFlow is imported
# keeps `import tensorflow` from also importing Keras 3, which this project never uses (and matplotlib through it,
# when installed): about 1.5 s less start-up per process. A no-op when TensorFlow was imported first.
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
