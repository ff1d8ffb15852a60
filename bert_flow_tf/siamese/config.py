"""SiameseConfig: everything one siamese run needs, checked when it is built."""
import dataclasses

import glow
from bert_flow_tf.data import tasks
from bert_flow_tf.embedding import settings
from bert_flow_tf.modeling import pooling
from bert_flow_tf.utils import checks

SPLITS = ("train", "dev", "test")  # the splits of a task that train_splits may name


def _checked(check, default):
  return dataclasses.field(default=default, metadata=checks.checked(check))


def _fraction(name, value):
  """A check: a number in [0, 1]."""
  checks.non_negative_number(name, value)
  if value > 1:
    checks.refuse(name, "a number in [0, 1]", value)
  return value


@dataclasses.dataclass(frozen=True)
class SiameseConfig:
  """Everything one `run` needs (run_siamese.py builds it from flags).

  Attributes:
    task_name: str. A task of `bert_flow_tf.data.TASKS`: allnli, snli, mnli, sts-b, sick-r, sts-12..sts-16,
      sts-12-16, qnli.
    data_dir: str. Data root holding SNLI/, MNLI/, stsbenchmark/, ... (docs/experiments.md: Data).
    output_dir: str. Checkpoints, export/encoder, eval and prediction files. A rerun with the same output_dir
      resumes from its latest checkpoint.
    model: str or None. A model directory (TF1, HF or TF-Hub) or preset name; None with `bert_config_file`.
    bert_config_file: str or None. TF1 bert_config.json (with vocab_file and init_checkpoint).
    vocab_file: str or None. WordPiece vocab; overrides the model directory's.
    init_checkpoint: str or None. TF1 checkpoint prefix, e.g. .../bert_model.ckpt.
    do_lower_case: bool or None. Lower-case input; None: what the model files say (else True).
    train_splits: tuple of str. The task's splits to train on, from train,dev,test. Here SNLI has no train
      files: task_name=snli with train_splits=dev,test trains on SNLI dev+test.
    sentence_embedding_type: str. Pooling: last-avg (the original's avg), cls, last2avg, first-last-avg, ...
      (bert_flow_tf.modeling.pooling).
    max_seq_length: int. Tokens per sentence including [CLS] and [SEP].
    do_train: bool. Fine-tune.
    do_eval: bool. Dev split: loss, Pearson/Spearman x100 of the cosine, accuracy for NLI.
    do_predict: bool. Test split: one cosine per pair in test_results.tsv.
    predict_pool: bool. With do_predict: write the pair embeddings to test_pooled.jsonl.
    train_batch_size: int. Global training batch (pairs).
    eval_batch_size: int. Global eval batch (pairs).
    predict_batch_size: int. Global predict batch (pairs).
    learning_rate: float >= 0. BERT's peak learning rate (AdamWeightDecay); 0 keeps BERT as it is.
    num_train_epochs: float. Epochs over the training pairs.
    warmup_proportion: float in [0, 1]. Share of steps with linear warmup; then linear decay to 0.
    seed: int. Data order, label dropping, [MASK] positions, fresh weights.
    save_checkpoints_steps: int. Checkpoint every this many steps.
    keep_checkpoint_max: int. Checkpoints kept.
    log_every_step: int. Log the losses every this many steps.
    flow: bool. Put a Glow on the pooled embeddings (u, v become its outputs); flag --use_flow.
    flow_loss: bool. Train the flow on its NLL with its own optimizer (needs flow).
    flow_learning_rate: float >= 0. The flow optimizer's constant learning rate; 0 keeps the flow as it is.
    flow_model_config: str. A glow/configs name or JSON path (default glow.DEFAULT_CONFIG).
    num_examples: int. -1: all pairs labelled; 0: no supervised loss; N: only N labelled (after a seeded
      shuffle).
    dupe_factor: int >= 1. Training copies per pair; copies 2.. get one random [MASK] piece.
    l2_penalty: float. > 0: add l2_penalty * (|u| + |v|) to each pair's loss.
    low_dim: int. > 0: average the D dims down to low_dim equal chunks (D must be a multiple).
    tpu: str or None. Use a TPU: its name/address for TPUClusterResolver ('' on Colab, 'local' on a TPU VM);
      None: no TPU (see `distribute.make_strategy`).
    num_gpus: int. GPUs (MirroredStrategy for > 1); 0: the default strategy.
    use_mixed_precision: bool. bfloat16 on TPU, float16 with loss scaling elsewhere; the encoder is built under
      the mixed policy (the flow and the losses stay float32).
    use_xla: bool. jit_compile the forward/backward pass.
    static_shapes: bool. Pad every batch to max_seq_length (forced on TPU and with use_xla:
      `distribute.needs_static_shapes`); otherwise each batch is cut to its longest sentence.
  """
  task_name: str
  data_dir: str
  output_dir: str
  model: str = None
  bert_config_file: str = None
  vocab_file: str = None
  init_checkpoint: str = None
  do_lower_case: bool = None
  train_splits: tuple = ("train",)
  sentence_embedding_type: str = _checked(lambda _, name: pooling.check_name(name), settings.POOLING)
  max_seq_length: int = _checked(settings.check_max_seq_length, settings.MAX_SEQ_LENGTH)
  do_train: bool = True
  do_eval: bool = False
  do_predict: bool = False
  predict_pool: bool = False
  train_batch_size: int = _checked(checks.positive_int, 16)
  eval_batch_size: int = _checked(checks.positive_int, 64)
  predict_batch_size: int = _checked(checks.positive_int, 64)
  learning_rate: float = _checked(checks.non_negative_number, 2e-5)
  num_train_epochs: float = _checked(checks.positive_number, 1.0)
  warmup_proportion: float = _checked(_fraction, 0.1)
  seed: int = _checked(checks.non_negative_int, 1234)
  save_checkpoints_steps: int = _checked(checks.positive_int, 1000)
  keep_checkpoint_max: int = _checked(checks.positive_int, 3)
  log_every_step: int = _checked(checks.positive_int, 10)
  flow: bool = False
  flow_loss: bool = False
  flow_learning_rate: float = _checked(checks.non_negative_number, 1e-3)
  flow_model_config: str = glow.DEFAULT_CONFIG
  num_examples: int = _checked(checks.int_at_least(-1), -1)
  dupe_factor: int = _checked(checks.positive_int, 1)
  l2_penalty: float = _checked(checks.non_negative_number, 0.0)
  low_dim: int = _checked(checks.non_negative_int, 0)
  tpu: str = None
  num_gpus: int = _checked(checks.non_negative_int, 0)
  use_mixed_precision: bool = False
  use_xla: bool = False
  static_shapes: bool = False

  def __post_init__(self):
    tasks.task_key(self.task_name)
    tf1 = (self.bert_config_file, self.vocab_file, self.init_checkpoint)
    if self.model is None and None in tf1:
      raise ValueError("give a model (directory or preset) or all of bert_config_file, vocab_file and "
                       f"init_checkpoint; got bert_config_file={tf1[0]!r} vocab_file={tf1[1]!r} "
                       f"init_checkpoint={tf1[2]!r}")
    if self.model is not None and self.bert_config_file is not None:
      raise ValueError(f"give either model ({self.model!r}) or bert_config_file ({self.bert_config_file!r})")
    bad = [s for s in self.train_splits if s not in SPLITS]
    if bad or not self.train_splits:
      raise ValueError(f"train_splits {self.train_splits!r}: each must be one of {SPLITS}")
    if not (self.do_train or self.do_eval or self.do_predict):
      raise ValueError("nothing to do: set at least one of do_train, do_eval, do_predict")
    checks.check_fields(self)  # each field's range (its metadata; its flag checks the same while parsed)
    if self.flow_loss and not self.flow:
      raise ValueError("flow_loss needs flow")
    if self.predict_pool and not self.do_predict:
      raise ValueError("predict_pool needs do_predict")
