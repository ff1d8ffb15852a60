"""The Python API: from sentences to a calibrated, exported embedding model in five lines (README: Python API).

  import bert_flow_tf
  enc = bert_flow_tf.load_encoder("all-minilm-l6-v2", pooling="first-last-avg")
  flow = bert_flow_tf.fit_flow(enc.encode(sentences), config="config_l2_d3_w32")
  z = flow.transform(enc.encode(["A man plays a guitar.", "A man is playing music."]))
  bert_flow_tf.export_model(enc, flow, "export/")

Thin wrappers, nothing new: `loaders.load_model`, `embedding.SentenceEmbedder` behind an `EmbeddingStore`,
`calibration.fit_flow` (the target setting's schedule by default) and `export.export_models`.

Legend: n = sentences, D = embedding width.
"""
import os
import tempfile

import numpy as np
from absl import logging

import glow
from bert_flow_tf import evaluation
from bert_flow_tf import export
from bert_flow_tf import loaders
from bert_flow_tf.calibration import fit_flow as fit_flow_lib
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from bert_flow_tf.embedding.store import EmbeddingStore

isotropy = evaluation.isotropy


class Encoder:
  """A BERT and a pooling: sentences -> vectors. Made by `load_encoder`.

  Attributes:
    embedder: the SentenceEmbedder (model, tokenizer, pooling, max_seq_length) that exports use.
    store: the EmbeddingStore it encodes through: each distinct sentence is run through BERT once, and its
      vectors are kept (in memory, or under `cache_dir`) for the life of the Encoder.
  """

  def __init__(self, embedder, cache_dir=None, batch_size=64):
    self.embedder = embedder
    self.store = EmbeddingStore(embedder, root=cache_dir, batch_size=batch_size)

  @property
  def dim(self):
    """int, D."""
    return self.embedder.dim

  def encode(self, sentences, show_progress=True):
    """Sentence vectors in input order, without dropout. sentences: iterable of str. Returns np.float32 [n, D]."""
    return self.store.vectors(list(sentences), self.embedder.pooling, show_progress)


def load_encoder(model="all-minilm-l6-v2", pooling="last-avg", max_seq_length=64, cache_dir=None, batch_size=64,
                 **load_kwargs):
  """Loads a BERT for encoding sentences.

  Args:
    model: str, a model directory (TF1 checkpoint, HF safetensors or TF-Hub encoder; README: Models) or a preset
      name ("all-minilm-l6-v2"); or a loaders.LoadedModel already loaded.
    pooling: str, a pooling name (README: Poolings), e.g. "last-avg", "first-last-avg", "cls".
    max_seq_length: int, tokens per sentence including [CLS] and [SEP].
    cache_dir: str or None, keep the vectors on disk there (the embedding store of run_flow.py); None: memory.
    batch_size: int, sentences per encoding batch.
    **load_kwargs: passed to loaders.load_model (do_lower_case, vocab_file, ...).

  Returns:
    Encoder.
  """
  if isinstance(model, loaders.LoadedModel):
    if load_kwargs:
      raise ValueError(f"load options {sorted(load_kwargs)} given with an already loaded model")
    loaded = model
  else:
    loaded = loaders.load_model(model, **load_kwargs)
  return Encoder(SentenceEmbedder(loaded, pooling, max_seq_length), cache_dir=cache_dir, batch_size=batch_size)


class Flow:
  """A fitted BERT-flow: vectors -> calibrated vectors (the Glow's latent z, same width D).

  Attributes:
    glow: the glow.Glow.
    summary: dict from calibration.fit_flow (steps, losses in bits/dim, seconds), or None when loaded.
    isotropy: dict (evaluation.isotropy) of the vectors it was fitted on, measured before fitting, or None.
  """

  def __init__(self, flow, summary=None, isotropy_before=None):
    self.glow = flow
    self.summary = summary
    self.isotropy = isotropy_before

  @classmethod
  def load(cls, flow_dir):
    """The flow that `fit_flow(..., flow_dir=flow_dir)` or run_flow.py (exp/<name>/flows/<fit>-<dataset>) wrote."""
    return cls(fit_flow_lib.load_fitted_flow(flow_dir))

  @property
  def dim(self):
    return self.glow.dim

  def transform(self, vectors):
    """float [n, D] -> np.float32 [n, D], without dropout."""
    return fit_flow_lib.transform(self.glow, np.asarray(vectors, np.float32))


def fit_flow(vectors_or_sentences, config=glow.DEFAULT_CONFIG, encoder=None, flow_dir=None, learning_rate=1e-3,
             num_train_epochs=1.0, batch_size=32, seed=1234, init="original"):
  """Fits a flow by maximum likelihood on sentence vectors, with the paper's target-setting schedule by default.

  As run_flow.py with a sentences file: consecutive rows form the pairs of the original's pair loss (rows 0 and 1,
  2 and 3, ...; an odd last row is paired with the first), `batch_size` pairs per step, so each vector is seen
  once per epoch. The isotropy of the vectors is logged first, with a caution when they are already close to
  isotropic (a flow may then lower similarity quality).

  Args:
    vectors_or_sentences: float array [N, D]; or a list of N str, encoded with `encoder`.
    config: str, a Glow config name (glow/configs/: "config_l3_d3_w32", the original's default,
      "config_l2_d3_w32", ...) or a JSON path.
    encoder: Encoder, needed for sentences.
    flow_dir: str or None. Checkpoints and flow.json go there (a rerun resumes or reuses it; `Flow.load` reads
      it); None fits in a temporary directory that is deleted afterwards.
    learning_rate, num_train_epochs, batch_size, seed, init: calibration.fit_flow.FlowFitConfig's (the target
      setting: 1e-3, 1 epoch, 32 pairs).

  Returns:
    Flow.
  """
  if isinstance(vectors_or_sentences, (list, tuple)) and vectors_or_sentences \
      and isinstance(vectors_or_sentences[0], str):
    if encoder is None:
      raise ValueError("fit_flow got sentences: pass encoder=... (or the vectors of enc.encode(sentences))")
    x = encoder.encode(vectors_or_sentences)
  else:
    x = np.asarray(vectors_or_sentences, np.float32)
  if x.ndim != 2 or len(x) < 2:
    raise ValueError(f"fit_flow needs sentence vectors [N >= 2, D] or a list of sentences, got shape {x.shape}")
  iso, line, near = evaluation.describe_isotropy(x, "the flow's fit vectors")
  (logging.warning if near else logging.info)("%s", line)
  a, b = x[0::2], x[1::2]
  if len(a) > len(b):
    b = np.concatenate([b, x[:1]])
  fit_config = fit_flow_lib.FlowFitConfig(flow_model_config=config, init=init, learning_rate=learning_rate,
                                          num_train_epochs=num_train_epochs, batch_size=batch_size, seed=seed)
  pairs = fit_flow_lib.CachedPairs(a, b)
  if flow_dir is not None:
    if os.path.isfile(os.path.join(flow_dir, fit_flow_lib.FLOW_INFO)):
      info = fit_flow_lib.check_fitted_flow(flow_dir, dim=x.shape[1], fit=fit_config)
      if info.get("complete"):
        logging.info("the flow in %s is already fitted with these settings; reusing it", flow_dir)
        return Flow(fit_flow_lib.load_fitted_flow(flow_dir), info, iso)
    flow, summary = fit_flow_lib.fit_flow(pairs, fit_config, flow_dir)
    return Flow(flow, summary, iso)
  with tempfile.TemporaryDirectory(prefix="bert-flow-") as tmp:
    flow, summary = fit_flow_lib.fit_flow(pairs, fit_config, tmp)
  return Flow(flow, summary, iso)


def export_model(encoder, flow, export_dir, version=1, overwrite=True):
  """Writes the servable SavedModels (README: Encoding and serving): export_dir/text/<version> (strings in),
  export_dir/ids/<version> (token ids in) and export_dir/export_info.json.

  Args:
    encoder: Encoder.
    flow: Flow, or None for the uncalibrated vectors.
    export_dir: str.
    version: int >= 1, TF Serving's version directory.
    overwrite: bool, replace an existing version (as run_flow.py --export_dir does).

  Returns:
    dict: "text", "ids" (the SavedModel directories) and "info" (the JSON file).
  """
  return export.export_models(encoder.embedder, None if flow is None else flow.glow, export_dir, version=version,
                              overwrite=overwrite)


def similarity(a, b):
  """Cosine similarity of vectors: a, b [D] -> float; a, b [n, D] -> np.float64 [n] (row by row)."""
  a, b = np.asarray(a), np.asarray(b)
  if a.ndim == 1 and b.ndim == 1:
    return float(evaluation.cosine(a[None], b[None])[0])
  return evaluation.cosine(a, b)
