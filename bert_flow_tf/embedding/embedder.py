"""QuantityEncoder: strings -> per-sentence pooling quantities (tokenizer -> BertEncoder) on any tf.distribute
strategy; SentenceEmbedder: a QuantityEncoder with a pooling, for the in-graph users (export, siamese pairs).

The input pipeline (`pipeline.py`, tf.data on the host) tokenizes and packs length-bucketed batches; the replica
function only runs the encoder on int32 ids and reduces its outputs to per-sentence quantities (token means of
chosen layers, [CLS] vectors, the pooler; see `pooling.quantities`). A forward pass stops after the deepest block
any requested quantity needs, so `emb-avg` runs no transformer block.

`encode_quantities` is the one way sentences run through BERT; sentence vectors come from
`store.EmbeddingStore.vectors` (cache_dir None: in memory), which asks it for what it does not hold yet and combines
the quantities into the pooling. That is what `SentenceEncoder.encode`, run_flow.py and the benches run. The
pooling is a value beside the quantity encoder (`pooling.PoolingSpec`): the store and Beam hold a QuantityEncoder and
name the pooling, or only the quantities, on each call.

Legend: B = batch size, S = padded length, H = hidden size, D = embedding width, n = sentences.
"""
import numpy as np
import tensorflow as tf
from absl import logging

from bert_flow_tf.embedding import pipeline
from bert_flow_tf.embedding import settings
from bert_flow_tf.embedding import store_files
from bert_flow_tf.modeling import packing
from bert_flow_tf.modeling import pooling as pooling_lib
from bert_flow_tf.modeling import pooling_ops
from bert_flow_tf.modeling.bert_encoder import BertEncoder
from bert_flow_tf.modeling.tokenizer import BertTokenizer
from bert_flow_tf.serving import text_bound
from bert_flow_tf.utils import distribute


class QuantityEncoder(tf.Module):
  """Runs sentences through a loaded BERT to the per-sentence quantities poolings are made of.

  Each sentence is packed alone as `[CLS] pieces [SEP]`, truncated to max_seq_length. An empty or
  whitespace-only sentence has no pieces: its quantities are those of `[CLS] [SEP]`. Encoding runs without
  dropout and is deterministic. The tokenizer reads each sentence cut by `bounded` (the same pieces up to
  max_seq_length), so its memory grows with the tokens read, not with the sentences' characters.

  Args:
    model: bert_flow_tf.loaders.LoadedModel.
    max_seq_length: int, tokens per sentence including [CLS] and [SEP] (settings.MAX_SEQ_LENGTH, the original's).
    strategy: tf.distribute.Strategy or None (the default strategy: one device).
    static_shapes: bool, every batch [batch_size, one of packing.static_lengths()] (TPU, XLA).
    use_xla: bool, compile the replica function with XLA (implies static_shapes).
    tokenizer: the BertTokenizer of another encoder of the same model and max_seq_length to share (its vocabulary
      is then not read again), or None to make one.
  """

  def __init__(self, model, max_seq_length=settings.MAX_SEQ_LENGTH, strategy=None, static_shapes=False,
               use_xla=False, tokenizer=None):
    super().__init__()
    settings.check_max_seq_length("max_seq_length", max_seq_length,
                                  model.config.max_position_embeddings if model.config is not None else None)
    self.loaded = model
    self.encoder = model.encoder
    self.max_seq_length = max_seq_length
    self.strategy = strategy or tf.distribute.get_strategy()
    self.use_xla = bool(use_xla)
    self.static_shapes = distribute.needs_static_shapes(self.strategy, static_shapes, use_xla)
    self.tokenizer = tokenizer or BertTokenizer(model.vocab_file, model.do_lower_case, max_seq_length)
    self._steps = {}
    self._pipelines = {}  # batch_size -> pipeline.InputPipeline
    self._cut_reported = set()  # the keys (store_files.sentence_keys) of the sentences `warn_cut` counted

  def bounded(self, sentences):
    """Each of a list of n str cut to what its first max_seq_length - 2 word pieces come from, and a piece more when
    it has more (`text_bound.bound_list`): list of n bytes, what the tokenizer reads of them."""
    return text_bound.bound_list(sentences, self.max_seq_length, self.tokenizer.do_lower_case)

  def replica_function(self, names):
    """The per-replica function for quantity `names`: a batch dict (pipeline.py) -> (dict name -> float32
    [B, H], example_id int64 [B], valid bool [B]). Int tensors only: no string op runs in it."""
    names = tuple(sorted(names))
    num_blocks = pooling_lib.deepest_layer(names, self.loaded.num_layers)
    kwargs = {"num_blocks": num_blocks} if isinstance(self.encoder, BertEncoder) else {}

    def replica_fn(batch):
      inputs = {name: batch[name] for name in packing.INPUT_NAMES}
      outputs = self.encoder(inputs, training=False, **kwargs)
      values = pooling_ops.compute_quantities(names, outputs, batch["input_mask"])
      return {k: tf.cast(v, tf.float32) for k, v in values.items()}, batch["example_id"], batch["valid"]

    return tf.function(replica_fn, jit_compile=self.use_xla, autograph=False)

  def _distributed_step(self, names, element_spec, single_batch=False):
    key = (tuple(sorted(names)), self.static_shapes, single_batch)
    if key not in self._steps:
      replica_fn = self.replica_function(names)
      step = lambda batch: self.strategy.run(replica_fn, args=(batch,))
      # Dynamic shapes: one trace for every [B, S]. Static shapes: one trace per padded length, each with fully
      # static shapes (what XLA and TPUs compile).
      signature = None if self.static_shapes else [element_spec]
      self._steps[key] = tf.function(step, input_signature=signature, autograph=False)
    return self._steps[key]

  def encode_quantities(self, sentences, names, batch_size=settings.BATCH_SENTENCES, progress=None):
    """Per-sentence quantities in input order.

    Args:
      sentences: list of str.
      names: iterable of quantity names (`pooling.quantities`), e.g. ("mean-1", "mean-6").
      batch_size: int, the global batch (split across the strategy's replicas).
      progress: a utils.progress.Progress to update, or None.

    Returns:
      dict name -> np.float32 [n, H].
    """
    names = tuple(sorted(set(names)))
    sentences = list(sentences)
    out = {name: np.zeros([len(sentences), self.loaded.hidden_size], np.float32) for name in names}
    if not sentences:
      return out
    if batch_size not in self._pipelines:
      self._pipelines[batch_size] = pipeline.InputPipeline(self.tokenizer, batch_size, self.static_shapes)
    inputs = self._pipelines[batch_size]
    texts = self.bounded(sentences)
    if len(sentences) <= batch_size and self.strategy.num_replicas_in_sync == 1:
      batches = [inputs.single_batch(texts)]           # one batch: no tf.data start-up (single-sentence calls)
      step = self._distributed_step(names, inputs.element_spec, single_batch=True)
    else:
      batches = self.strategy.experimental_distribute_dataset(inputs.dataset(texts))
      step = self._distributed_step(names, batches.element_spec)
    seen = np.zeros(len(sentences), bool)
    truncated = 0
    local = self.strategy.experimental_local_results
    for batch in batches:
      values, example_id, valid = step(batch)
      truncated += sum(int(np.sum(v.numpy())) for v in local(batch["truncated"]))
      valid = np.concatenate([v.numpy() for v in local(valid)])
      rows = np.concatenate([v.numpy() for v in local(example_id)])[valid]
      for name in names:
        out[name][rows] = np.concatenate([v.numpy() for v in local(values[name])])[valid]
      seen[rows] = True
      if progress:
        progress.update(len(rows))
    if not seen.all():
      raise RuntimeError(f"the input pipeline lost {int((~seen).sum())} of {len(sentences)} sentences")
    if truncated:
      logging.info("%d of %d sentences are longer than max_seq_length=%d tokens and were truncated",
                   truncated, len(sentences), self.max_seq_length)
    return out

  def warn_cut(self, sentences):
    """Warns "k of n sentences were cut to max_seq_length tokens" when `sentences` (list of n str) holds one with
    more word pieces than max_seq_length - 2 that no earlier call of this encoder counted: once per encoder, however
    many times fit, encode and search see the same sentences."""
    lengths = self.tokenizer.tokenize_list(self.bounded(sentences)).row_lengths().numpy() if sentences else []
    cut = set(store_files.sentence_keys([s for s, n in zip(sentences, lengths) if n > self.max_seq_length - 2]))
    if cut - self._cut_reported:
      logging.warning("%s of %s sentences were cut to %d tokens (max_seq_length)", f"{len(cut):,}",
                      f"{len(sentences):,}", self.max_seq_length)
      self._cut_reported |= cut

  def token_outputs(self, sentences, batch_size=settings.BATCH_SENTENCES):
    """The last block's token vectors of each sentence, with its packed inputs, in input order.

    Args:
      sentences: list of n str.
      batch_size: int, sentences per batch (each packed to its longest).

    Returns:
      list of n (dict packing.INPUT_NAMES -> int32 [S_i], float32 [S_i, H]), S_i the sentence's tokens with
      [CLS] and [SEP].
    """
    out, texts = [], self.bounded(sentences)
    for start in range(0, len(texts), batch_size):
      pieces = self.tokenizer.tokenize(tf.constant(texts[start:start + batch_size], tf.string))
      inputs = packing.pack_to_longest(self.tokenizer, pieces)                    # int32 [B, S]
      tokens = self.encoder(inputs, training=False)["encoder_outputs"][-1]       # [B, S, H]
      lengths = tf.reduce_sum(inputs["input_mask"], axis=1).numpy()
      for i, length in enumerate(lengths):
        out.append(({name: inputs[name][i, :length] for name in packing.INPUT_NAMES},
                    tf.cast(tokens[i, :length], tf.float32)))
    return out


class SentenceEmbedder(QuantityEncoder):
  """A QuantityEncoder with a named pooling, for the code that pools inside a graph (`embed_inputs`): the
  servable export and the siamese pair sources.

  Args:
    model, max_seq_length, strategy, static_shapes, use_xla, tokenizer: as QuantityEncoder.
    pooling: str, a name from bert_flow_tf.modeling.pooling (original names accepted).

  Attributes:
    pooling_spec: pooling.PoolingSpec, the name resolved for this model; dim: int D, its width.
  """

  def __init__(self, model, pooling=settings.POOLING, max_seq_length=settings.MAX_SEQ_LENGTH,
               strategy=None, static_shapes=False, use_xla=False, tokenizer=None):
    super().__init__(model, max_seq_length, strategy, static_shapes, use_xla, tokenizer)
    self.pooling_spec = pooling_lib.resolve(pooling, model.num_layers)
    self.dim = self.pooling_spec.output_dim(model.hidden_size)

  def embed_inputs(self, inputs, training=False):
    """Packed inputs (dict of int32 [B, S]) -> float32 [B, D] for this pooling. Dropout runs only when training."""
    outputs = self.encoder(inputs, training=training)
    return pooling_ops.pool(self.pooling_spec, outputs, inputs["input_mask"])
