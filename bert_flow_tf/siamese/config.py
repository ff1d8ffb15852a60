"""SiameseConfig: everything one siamese run needs, checked when it is built."""
import dataclasses

from bert_flow_tf.siamese import data as siamese_data


@dataclasses.dataclass(frozen=True)
class SiameseConfig:
  """Everything one `run` needs (run_siamese.py builds it from flags).

  Attributes:
    task_name: str. A task of `bert_flow_tf.data.load_task` ("allnli", "snli", "sts-b", ...).
    data_dir: str. The data root (as /work/shared/data).
    output_dir: str. Checkpoints, export and results go here.
    model: str or None. A model directory (TF1, HF or TF-Hub) or preset name; None with `bert_config_file`.
    bert_config_file, vocab_file, init_checkpoint: str or None. The original's TF1 flags (all three, or none).
    do_lower_case: bool or None. None reads it from the model files.
    train_splits: tuple of str from siamese_data.SPLITS, the task's splits to train on (("dev", "test") for
      SNLI here).
    sentence_embedding_type: str. A pooling name of `bert_flow_tf.modeling.pooling` ("avg" = "last-avg").
    max_seq_length: int. Tokens per sentence with [CLS] and [SEP].
    do_train, do_eval, do_predict, predict_pool: bool.
    train_batch_size, eval_batch_size, predict_batch_size: int. Global batch sizes (pairs).
    learning_rate: float. BERT's peak learning rate.
    num_train_epochs: float.
    warmup_proportion: float in [0, 1]. Share of the steps with linear warmup.
    seed: int. Data order, label dropping, [MASK] positions and fresh weights.
    save_checkpoints_steps, keep_checkpoint_max, log_every_step: int.
    flow, flow_loss: bool. A Glow on the pooled vectors; train it on its own NLL with its own optimizer.
    flow_learning_rate: float.
    flow_model_config: str. A glow/configs name or JSON path.
    num_examples: int. -1 all labelled, 0 none, N the first N (after a seeded shuffle).
    dupe_factor: int >= 1.
    l2_penalty: float. > 0 enables the penalty.
    low_dim: int. > 0 averages the D dims down to low_dim chunks (D must be a multiple).
    tpu: str or None. See `distribute.make_strategy`.
    num_gpus: int.
    use_mixed_precision, use_xla, static_shapes: bool. Static shapes pad every batch to max_seq_length
      (forced on TPU); otherwise each batch is cut to its longest sentence. Mixed precision builds the encoder
      under a mixed policy (the flow and the losses stay float32).
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
  sentence_embedding_type: str = "avg"
  max_seq_length: int = 64
  do_train: bool = True
  do_eval: bool = False
  do_predict: bool = False
  predict_pool: bool = False
  train_batch_size: int = 16
  eval_batch_size: int = 64
  predict_batch_size: int = 64
  learning_rate: float = 2e-5
  num_train_epochs: float = 1.0
  warmup_proportion: float = 0.1
  seed: int = 1234
  save_checkpoints_steps: int = 1000
  keep_checkpoint_max: int = 3
  log_every_step: int = 10
  flow: bool = False
  flow_loss: bool = False
  flow_learning_rate: float = 1e-3
  flow_model_config: str = "config_l3_d3_w32"
  num_examples: int = -1
  dupe_factor: int = 1
  l2_penalty: float = 0.0
  low_dim: int = 0
  tpu: str = None
  num_gpus: int = 0
  use_mixed_precision: bool = False
  use_xla: bool = False
  static_shapes: bool = False

  def __post_init__(self):
    tf1 = (self.bert_config_file, self.vocab_file, self.init_checkpoint)
    if self.model is None and None in tf1:
      raise ValueError("give a model (directory or preset) or all of bert_config_file, vocab_file and "
                       f"init_checkpoint; got bert_config_file={tf1[0]!r} vocab_file={tf1[1]!r} "
                       f"init_checkpoint={tf1[2]!r}")
    if self.model is not None and self.bert_config_file is not None:
      raise ValueError(f"give either model ({self.model!r}) or bert_config_file ({self.bert_config_file!r})")
    bad = [s for s in self.train_splits if s not in siamese_data.SPLITS]
    if bad or not self.train_splits:
      raise ValueError(f"train_splits {self.train_splits!r}: each must be one of {siamese_data.SPLITS}")
    if not (self.do_train or self.do_eval or self.do_predict):
      raise ValueError("nothing to do: set at least one of do_train, do_eval, do_predict")
    for name in ("train_batch_size", "eval_batch_size", "predict_batch_size", "max_seq_length",
                 "save_checkpoints_steps", "keep_checkpoint_max", "log_every_step", "dupe_factor"):
      if getattr(self, name) < 1:
        raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
    if self.max_seq_length < 3:
      raise ValueError(f"max_seq_length must be >= 3 ([CLS], a piece, [SEP]), got {self.max_seq_length}")
    if not 0.0 <= self.warmup_proportion <= 1.0:
      raise ValueError(f"warmup_proportion must be in [0, 1], got {self.warmup_proportion}")
    if self.num_train_epochs <= 0:
      raise ValueError(f"num_train_epochs must be > 0, got {self.num_train_epochs}")
    if self.num_examples < -1:
      raise ValueError(f"num_examples must be -1 (all), 0 (none) or a count, got {self.num_examples}")
    if self.flow_loss and not self.flow:
      raise ValueError("flow_loss needs flow")
    if self.predict_pool and not self.do_predict:
      raise ValueError("predict_pool needs do_predict")
