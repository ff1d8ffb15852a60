"""Supervised siamese fine-tuning on NLI / STS pairs (the paper's "BERT-NLI" setting), optionally with a joint flow.

  config.py    SiameseConfig: every setting of a run, checked when built
  data.py      sentence pairs -> word-piece arrays -> packed features -> tf.data batches
  model.py     SiameseModel (shared BERT + pooling + optional Glow, NLI classifier) and the supervised loss
  trainer.py   Trainer: optimizers, checkpoints, the distributed train step, inference and metrics
  runner.py    run(): train, export the encoder, evaluate, predict; the files it writes

BERT's optimizer and schedule are `glow.create_optimizer`; the step count is `data.order.num_train_steps`. The
names below are imported on first use (PEP 562): all but config load TensorFlow, and run_siamese.py reads its flags
(SiameseConfig's fields) without it.
"""
from bert_flow_tf.utils import lazy

# Public name -> its module.
_PUBLIC = {"SiameseConfig": "bert_flow_tf.siamese.config", "SiameseModel": "bert_flow_tf.siamese.model",
           "supervised_loss": "bert_flow_tf.siamese.model", "export_encoder": "bert_flow_tf.siamese.runner",
           "run": "bert_flow_tf.siamese.runner", "Trainer": "bert_flow_tf.siamese.trainer"}
__all__ = sorted(_PUBLIC)
__getattr__ = lazy.names(__name__, _PUBLIC)
