"""Supervised siamese fine-tuning on NLI / STS pairs (the paper's "BERT-NLI" setting), optionally with a joint flow.

  config.py    SiameseConfig: every setting of a run, checked when built
  data.py      sentence pairs -> word-piece arrays -> packed features -> tf.data batches
  model.py     SiameseModel (shared BERT + pooling + optional Glow, NLI classifier) and the supervised loss
  trainer.py   Trainer: optimizers, checkpoints, the distributed train step, inference and metrics
  runner.py    run(): train, export the encoder, evaluate, predict; the files it writes

BERT's optimizer and schedule are `glow.create_optimizer`; the step count is `data.order.num_train_steps`.
"""
from bert_flow_tf.siamese.config import SiameseConfig
from bert_flow_tf.siamese.model import SiameseModel
from bert_flow_tf.siamese.model import supervised_loss
from bert_flow_tf.siamese.runner import export_encoder
from bert_flow_tf.siamese.runner import run
from bert_flow_tf.siamese.trainer import Trainer

__all__ = ["SiameseConfig", "SiameseModel", "Trainer", "export_encoder", "run", "supervised_loss"]
