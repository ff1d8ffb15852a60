"""A whole siamese run: train, export the encoder, evaluate, predict, and write the results.

Files under `output_dir`:
  checkpoints/ckpt-<step>      tf.train.CheckpointManager (model, both optimizers, step).
  export/encoder/              the fine-tuned encoder in HF format (config.json, tokenizer_config.json,
                               vocab.txt, model.safetensors), read by `loaders.load_model` and so by run_flow.py;
                               a TF-Hub SavedModel instead when the encoder came from TF-Hub.
  eval_results.json/.txt       `do_eval`: dev split metrics.
  test_results.tsv             `do_predict`: one cosine per test pair.
  test_pooled.jsonl            `do_predict` with `predict_pool`: {"embedding_a": [...], "embedding_b": [...]}.
"""
import json
import os

from absl import logging

from bert_flow_tf import data as data_lib
from bert_flow_tf.data import order as order_lib
from bert_flow_tf.loaders import safetensors as hf_loader
from bert_flow_tf.loaders import tfhub
from bert_flow_tf.modeling.bert_encoder import BertEncoder
from bert_flow_tf.siamese import data as siamese_data
from bert_flow_tf.siamese.trainer import Trainer
from bert_flow_tf.utils import distribute
from bert_flow_tf.utils import io_utils


def export_encoder(loaded, out_dir):
  """Writes the (fine-tuned) encoder where `loaders.load_model(out_dir)` reads it: HF format for a BertEncoder,
  a TF-Hub SavedModel for a TF-Hub encoder. Returns out_dir."""
  if isinstance(loaded.encoder, BertEncoder):
    hf_loader.save_hf_encoder(loaded.encoder, loaded.config, out_dir, loaded.vocab_file, loaded.do_lower_case)
  else:
    tfhub.save_hub_encoder(loaded.encoder, out_dir, loaded.vocab_file, loaded.do_lower_case)
  return out_dir


def run(config, strategy=None, stop_at_step=None):
  """Trains, evaluates and predicts as `config` says; writes the files listed in the module notes.

  Args:
    config: SiameseConfig.
    strategy: tf.distribute.Strategy or None (None: `distribute.make_strategy(config.tpu, config.num_gpus)`).
    stop_at_step: int or None. Stop training at this step (a simulated interruption; rerun to resume).

  Returns:
    dict: "train" (see Trainer.train), "eval" (see Trainer.evaluate), "export_dir", "predictions" (path).
  """
  strategy = strategy or distribute.make_strategy(config.tpu, config.num_gpus)
  task = data_lib.load_task(config.task_name, config.data_dir)
  train_sets = siamese_data.split_sets(task, config.train_splits) if config.do_train else []
  steps = order_lib.num_train_steps(sum(len(ps) for ps in train_sets), config.train_batch_size,
                                    config.num_train_epochs)
  if config.do_train and steps < 1:
    raise ValueError(f"{sum(len(ps) for ps in train_sets)} training pairs make no step of batch "
                     f"{config.train_batch_size}")
  os.makedirs(config.output_dir, exist_ok=True)
  trainer = Trainer(config, task, strategy, steps)
  result = {}
  if config.do_train:
    result["train"] = trainer.train(train_sets, stop_at_step)
    if int(trainer.step.numpy()) < steps:
      logging.info("stopped at step %d of %d; rerun to resume", int(trainer.step.numpy()), steps)
      return result
    result["export_dir"] = export_encoder(trainer.loaded, os.path.join(config.output_dir, "export", "encoder"))
    logging.info("fine-tuned encoder written to %s", result["export_dir"])
  if config.do_eval:
    metrics = trainer.evaluate(siamese_data.split_sets(task, ["dev"]))
    result["eval"] = metrics
    io_utils.write_text(os.path.join(config.output_dir, "eval_results.json"),
                        json.dumps(metrics, indent=2, sort_keys=True) + "\n")
    io_utils.write_text(os.path.join(config.output_dir, "eval_results.txt"),
                        "".join(f"{k} = {v}\n" for k, v in sorted(metrics.items())))
    logging.info("eval: %s", metrics)
  if config.do_predict:
    test_sets = siamese_data.split_sets(task, ["test"])
    if config.predict_pool:
      emb_a, emb_b = trainer.predict(test_sets, pool=True)
      path = os.path.join(config.output_dir, "test_pooled.jsonl")
      text = "".join(json.dumps({"embedding_a": [round(float(x), 6) for x in a],
                                 "embedding_b": [round(float(x), 6) for x in b]}) + "\n"
                     for a, b in zip(emb_a, emb_b))
    else:
      path = os.path.join(config.output_dir, "test_results.tsv")
      text = "".join(f"{float(c):.6f}\n" for c in trainer.predict(test_sets, pool=False))
    io_utils.write_text(path, text)
    result["predictions"] = path
  return result
