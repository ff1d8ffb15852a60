"""Supervised siamese fine-tuning on NLI / STS pairs (the paper's "BERT-NLI" setting), optionally with a joint flow.

  data.py      tokenize, pack, batch order and tf.data batches of sentence pairs
  trainer.py   config, model + loss, trainer, run
"""
from bert_flow_tf.siamese.trainer import SiameseConfig
from bert_flow_tf.siamese.trainer import Trainer
from bert_flow_tf.siamese.trainer import num_train_steps
from bert_flow_tf.siamese.trainer import run
from bert_flow_tf.siamese.trainer import supervised_loss
