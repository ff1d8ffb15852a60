"""Siamese BERT fine-tuning (NLI or STS regression), optionally with a jointly trained flow: flags -> one run.

"BERT-NLI-flow" of the paper is this script on allnli, then run_flow.py on `<output_dir>/export/encoder`.

  python run_siamese.py --flagfile=flags/minilm_snli_siamese.cfg
  python run_siamese.py --flagfile=flags/bert_base_allnli_siamese.cfg

See bert_flow_tf/siamese/ for the objectives and the files written.
"""
import os

# TF's C++ start-up lines (CUDA probing on CPU machines, oneDNN notes) drown the progress; errors still raise.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags

FLAGS = flags.FLAGS

# model
flags.DEFINE_string("model_dir", None, "Model directory (TF1 google-research, HF safetensors or TF-Hub encoder) "
                    "or preset name, as run_flow.py's. Default: 'all-minilm-l6-v2' unless --bert_config_file.")
flags.DEFINE_string("bert_config_file", None, "TF1 bert_config.json (with --vocab_file and --init_checkpoint).")
flags.DEFINE_string("vocab_file", None, "WordPiece vocab; overrides the model directory's.")
flags.DEFINE_string("init_checkpoint", None, "TF1 checkpoint prefix, e.g. .../bert_model.ckpt.")
flags.DEFINE_bool("do_lower_case", None, "Lower-case input; default: what the model files say (else True).")
flags.DEFINE_integer("max_seq_length", 64, "Tokens per sentence including [CLS] and [SEP].")
flags.DEFINE_string("sentence_embedding_type", "avg",
                    "Pooling: avg (= last-avg), cls, last2avg, first-last-avg, avg-last-N, ... (bert_flow_tf.modeling.pooling).")

# task and data
flags.DEFINE_string("task_name", None, "allnli, snli, mnli, sts-b, sick-r, sts-12..sts-16, sts-12-16, qnli.")
flags.DEFINE_string("data_dir", None, "Data root holding SNLI/, MNLI/, stsbenchmark/, ... (as ../shared/data).")
flags.DEFINE_list("train_splits", ["train"], "The task's splits to train on, from train,dev,test. Here SNLI has "
                  "no train files: --task_name=snli --train_splits=dev,test trains on SNLI dev+test.")
flags.DEFINE_string("output_dir", None, "Checkpoints, export/encoder, eval and prediction files. A rerun with "
                    "the same output_dir resumes from its latest checkpoint.")

# training
flags.DEFINE_bool("do_train", False, "Fine-tune.")
flags.DEFINE_integer("train_batch_size", 16, "Global training batch (pairs).")
flags.DEFINE_float("learning_rate", 2e-5, "BERT's peak learning rate (AdamWeightDecay).")
flags.DEFINE_float("num_train_epochs", 1.0, "Epochs over the training pairs.")
flags.DEFINE_float("warmup_proportion", 0.1, "Share of steps with linear warmup; then linear decay to 0.")
flags.DEFINE_integer("seed", 1234, "Data order, label dropping, [MASK] positions, fresh weights.")
flags.DEFINE_integer("save_checkpoints_steps", 1000, "Checkpoint every this many steps.")
flags.DEFINE_integer("keep_checkpoint_max", 3, "Checkpoints kept.")
flags.DEFINE_integer("log_every_step", 10, "Log the losses every this many steps.")

# eval and predict
flags.DEFINE_bool("do_eval", False, "Dev split: loss, Pearson/Spearman x100 of the cosine, accuracy for NLI.")
flags.DEFINE_bool("do_predict", False, "Test split: one cosine per pair in test_results.tsv.")
flags.DEFINE_bool("predict_pool", False, "With --do_predict: write the pair embeddings to test_pooled.jsonl.")
flags.DEFINE_integer("eval_batch_size", 64, "Global eval batch (pairs).")
flags.DEFINE_integer("predict_batch_size", 64, "Global predict batch (pairs).")

# flow
flags.DEFINE_bool("flow", False, "Put a Glow on the pooled embeddings (u, v become its outputs).")
flags.DEFINE_bool("flow_loss", False, "Train the flow on its NLL with its own optimizer (needs --flow).")
flags.DEFINE_float("flow_learning_rate", 1e-3, "The flow optimizer's constant learning rate.")
flags.DEFINE_string("flow_model_config", "config_l3_d3_w32", "glow/configs name or JSON path.")

# unsupervised / semi-supervised / shape
flags.DEFINE_integer("num_examples", -1, "-1: all pairs labelled; 0: no supervised loss; N: only N labelled.")
flags.DEFINE_integer("dupe_factor", 1, "Training copies per pair; copies 2.. get one random [MASK] piece.")
flags.DEFINE_float("l2_penalty", 0.0, "> 0: add l2_penalty * (|u| + |v|) to each pair's loss.")
flags.DEFINE_integer("low_dim", 0, "> 0: average the embedding down to low_dim dims (equal chunks).")

# distribution
flags.DEFINE_string("tpu", None, "Use a TPU: its name/address for TPUClusterResolver ('' on Colab, 'local' on a "
                    "TPU VM). Unset: no TPU.")
flags.DEFINE_integer("num_gpus", 0, "GPUs (MirroredStrategy for > 1); 0: the default strategy.")
flags.DEFINE_bool("use_mixed_precision", False, "bfloat16 on TPU, float16 with loss scaling elsewhere (the "
                  "flow and the losses stay float32).")
flags.DEFINE_bool("use_xla", False, "jit_compile the forward/backward pass.")
flags.DEFINE_bool("static_shapes", False, "Pad every batch to max_seq_length (always on with --tpu).")


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  from bert_flow_tf.utils import logs  # after flag parsing: TF is slow to import
  from bert_flow_tf import siamese
  logs.quiet_tensorflow()
  model = FLAGS.model_dir
  if model is None and FLAGS.bert_config_file is None:
    model = "all-minilm-l6-v2"
  config = siamese.SiameseConfig(
      task_name=FLAGS.task_name, data_dir=FLAGS.data_dir, output_dir=FLAGS.output_dir, model=model,
      bert_config_file=FLAGS.bert_config_file, vocab_file=FLAGS.vocab_file, init_checkpoint=FLAGS.init_checkpoint,
      do_lower_case=FLAGS.do_lower_case, train_splits=tuple(FLAGS.train_splits),
      sentence_embedding_type=FLAGS.sentence_embedding_type, max_seq_length=FLAGS.max_seq_length,
      do_train=FLAGS.do_train, do_eval=FLAGS.do_eval, do_predict=FLAGS.do_predict,
      predict_pool=FLAGS.predict_pool, train_batch_size=FLAGS.train_batch_size,
      eval_batch_size=FLAGS.eval_batch_size, predict_batch_size=FLAGS.predict_batch_size,
      learning_rate=FLAGS.learning_rate, num_train_epochs=FLAGS.num_train_epochs,
      warmup_proportion=FLAGS.warmup_proportion, seed=FLAGS.seed,
      save_checkpoints_steps=FLAGS.save_checkpoints_steps, keep_checkpoint_max=FLAGS.keep_checkpoint_max,
      log_every_step=FLAGS.log_every_step, flow=FLAGS.flow, flow_loss=FLAGS.flow_loss,
      flow_learning_rate=FLAGS.flow_learning_rate, flow_model_config=FLAGS.flow_model_config,
      num_examples=FLAGS.num_examples, dupe_factor=FLAGS.dupe_factor, l2_penalty=FLAGS.l2_penalty,
      low_dim=FLAGS.low_dim, tpu=FLAGS.tpu, num_gpus=FLAGS.num_gpus,
      use_mixed_precision=FLAGS.use_mixed_precision, use_xla=FLAGS.use_xla, static_shapes=FLAGS.static_shapes)
  siamese.run(config)


if __name__ == "__main__":
  flags.mark_flags_as_required(["task_name", "data_dir", "output_dir"])
  app.run(main)
