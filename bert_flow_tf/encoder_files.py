"""What SentenceEncoder.save writes and load reads back, and the fingerprint that ties a calibration to its model.

`save(dir)` writes, atomically (a hidden sibling renamed into place):
  <dir>/sentence_encoder.json   the model (its path or preset name), pooling, max_seq_length, the fingerprint,
                                and the sentence-transformers settings (prompts, default_prompt_name, truncate_dim,
                                similarity_fn_name, normalize)
  <dir>/calibration/            the calibration (see calibration.calibrator), when there is one
The BERT weights are not copied: as BERT-whitening keeps its kernel and bias beside the model, the calibration is
kept with the name of the model it was fitted on, and `load` checks the fingerprint of the model it finds.

The fingerprint hashes what the vectors depend on: the encoder's weights (shapes, bytes), the model config,
the vocabulary file's bytes, do_lower_case, the pooling and max_seq_length (not the file format: the same weights
read from a TF1 checkpoint or an HF directory give the same vectors). A calibration is refused on vectors with
another fingerprint.

Legend: D = the embedding width.
"""
import functools
import hashlib
import json
import os

import numpy as np

from bert_flow_tf import loaders
from bert_flow_tf.calibration import calibrator
from bert_flow_tf.calibration import fitted_flow
from bert_flow_tf.utils import errors
from bert_flow_tf.utils import io_utils

INFO_FILE = "sentence_encoder.json"
CALIBRATION_DIR = "calibration"
FORMAT_VERSION = 1


def fingerprint(embedder):
  """16 hex digits naming what `embedder`'s vectors depend on (see the module notes)."""
  model = embedder.loaded
  h = hashlib.sha256()
  head = {"config": None if model.config is None else model.config.to_dict(),
          "do_lower_case": bool(model.do_lower_case), "pooling": embedder.pooling.name,
          "max_seq_length": embedder.max_seq_length}
  h.update(json.dumps(head, sort_keys=True).encode("utf-8"))
  with open(model.vocab_file, "rb") as f:
    h.update(f.read())
  for variable in model.encoder.variables:  # in creation order; their names change with Keras' layer counters
    value = variable.numpy()
    h.update(f"{value.shape}:{value.dtype}".encode("utf-8"))
    h.update(np.ascontiguousarray(value).tobytes())
  return h.hexdigest()[:16]


def _describe(model, pooling, max_seq_length, fingerprint_hex):
  return f"{model} (pooling {pooling}, max_seq_length {max_seq_length}, fingerprint {fingerprint_hex})"


def _read_info(path):
  info_path = os.path.join(path, INFO_FILE)
  if not os.path.isfile(info_path):
    raise FileNotFoundError(f"no {INFO_FILE} in {path}: not a directory written by SentenceEncoder.save")
  try:
    with open(info_path, encoding="utf-8") as f:
      info = json.load(f)
  except (json.JSONDecodeError, UnicodeDecodeError) as e:
    raise errors.UserError(f"not a JSON object written by SentenceEncoder.save ({e})", info_path) from e
  if not isinstance(info, dict):
    raise errors.UserError("not a JSON object written by SentenceEncoder.save", info_path)
  if info.get("format_version") != FORMAT_VERSION:
    raise ValueError(f"{info_path}: format_version {info.get('format_version')!r}, this version reads "
                     f"{FORMAT_VERSION}")
  return info


class EncoderFiles:
  """`save`, `load`, `load_calibration`, `load_flow`, `fingerprint` and `describe` of SentenceEncoder (its embedder,
  calibration and sentence-transformers settings)."""

  @functools.cached_property
  def fingerprint(self):
    """str, see the module notes; hashed on first use (save, load, describe), not when the encoder is made."""
    return fingerprint(self.embedder)

  def describe(self):
    """One line: the model, pooling, max_seq_length and fingerprint."""
    return _describe(self.embedder.loaded.source, self.embedder.pooling.name, self.embedder.max_seq_length,
                     self.fingerprint)

  def save(self, path):
    """Writes the encoder's description and calibration to the directory `path` (replaced if it exists).

    Returns:
      str, path.
    """
    source = str(self.embedder.loaded.source)
    info = {"format_version": FORMAT_VERSION,
            "model": os.path.abspath(source) if os.path.exists(source) else source,  # a path, or a preset name
            "do_lower_case": bool(self.embedder.loaded.do_lower_case), "pooling": self.embedder.pooling.name,
            "max_seq_length": self.embedder.max_seq_length, "fingerprint": self.fingerprint,
            "calibration": None if self.calibration is None else self.calibration.method,
            "prompts": self.prompts, "default_prompt_name": self.default_prompt_name,
            "truncate_dim": self.truncate_dim, "similarity_fn_name": self.similarity_fn_name,
            "normalize": self.normalize}
    with io_utils.atomic_dir(path) as tmp:
      with open(os.path.join(tmp, INFO_FILE), "w", encoding="utf-8") as f:
        f.write(json.dumps(info, indent=2) + "\n")
      if self.calibration is not None:
        self.calibration.save(os.path.join(tmp, CALIBRATION_DIR))
    return path

  @classmethod
  def load(cls, path, model=None, batch_size=64, cache_dir=None):
    """Restores what `save(path)` wrote: the model it names (or `model`), pooling, max_seq_length, calibration.

    Args:
      path: str, a directory written by `save`.
      model: None (the model path or preset the file names), another path, or a loaders.LoadedModel; it must be
        the model the calibration was fitted on (same fingerprint).
      batch_size, cache_dir: as `from_pretrained`.

    Returns:
      SentenceEncoder.

    Raises:
      ValueError: the model found is not the one saved (one line naming both).
    """
    info = _read_info(path)
    if model is None:
      model = info["model"]
    encoder = cls.from_pretrained(
        model, pooling=info["pooling"], max_seq_length=info["max_seq_length"], batch_size=batch_size,
        cache_dir=cache_dir, prompts=info.get("prompts"), default_prompt_name=info.get("default_prompt_name"),
        truncate_dim=info.get("truncate_dim"), similarity_fn_name=info.get("similarity_fn_name"),
        **({} if isinstance(model, loaders.LoadedModel) else {"do_lower_case": info["do_lower_case"]}))
    encoder.normalize = info.get("normalize", encoder.normalize)
    return encoder.load_calibration(path)

  def load_calibration(self, path):
    """Sets the calibration saved in `path` (by `save`), after checking it was fitted on this encoder's vectors.

    Returns:
      self.

    Raises:
      ValueError: it was fitted on another model, pooling or max_seq_length (one line naming both).
    """
    info = _read_info(path)
    if info["fingerprint"] != self.fingerprint:
      fitted = _describe(info["model"], info["pooling"], info["max_seq_length"], info["fingerprint"])
      raise ValueError(f"{path} was saved from {fitted}, not from this encoder's {self.describe()}")
    self._set_calibration(None if info["calibration"] is None else
                          calibrator.load(os.path.join(path, CALIBRATION_DIR)))
    return self

  def load_flow(self, flow_dir):
    """Sets a flow fitted by run_flow.py (exp/<name>/flows/<fit>-<dataset>) or `flow_fitting.fit_flow`, after
    checking its flow.json: fitted on vectors of this width, pooling and max_seq_length.

    Returns:
      self.

    Raises:
      ValueError: naming each setting that differs, with this encoder's value and the flow's.
    """
    fitted_flow.check(flow_dir, dim=self.embedder.dim, provenance={
        "sentence_embedding_type": self.embedder.pooling.name, "max_seq_length": self.embedder.max_seq_length})
    self._set_calibration(calibrator.load(flow_dir))
    return self
