"""A SentenceEncoder's saved folder (SentenceEncoder.save / load): what it holds and what loading it may read,
and the fingerprint that ties a calibration to its model.

  <dir>/sentence_encoder.json   the model (its path or preset name), pooling, max_seq_length, the fingerprint,
                                the calibration's method, and the sentence-transformers settings (prompts,
                                default_prompt_name, truncate_dim, similarity_fn_name, normalize)
  <dir>/calibration/            the calibration (calibration.calibrator's folder), when there is one

The BERT weights are not copied: as BERT-whitening keeps its kernel and bias beside the model, the calibration is
kept with the name of the model it was fitted on, and `load` checks the fingerprint of the model it finds.

The fingerprint hashes what the vectors depend on: the encoder's weights (shapes, bytes), the model config,
the vocabulary file's bytes, do_lower_case, the pooling and max_seq_length (not the file format: the same weights
read from a TF1 checkpoint or an HF directory give the same vectors). A calibration is refused on vectors with
another fingerprint.

The folder is data (docs/security.md): `read_info` checks every key of the JSON file, `model_of` resolves the model
it names against the folder and refuses a SavedModel (a program) unless the caller opts in, and
`load_saved_calibration` restores the calibration strictly.
"""
import functools
import hashlib
import json
import os

import numpy as np

from bert_flow_tf import loaders
from bert_flow_tf.calibration import calibrator
from bert_flow_tf.calibration import fitted_flow
from bert_flow_tf.embedding import settings
from bert_flow_tf.loaders import presets
from bert_flow_tf.modeling import pooling as pooling_lib
from bert_flow_tf.utils import errors
from bert_flow_tf.utils import io_utils

INFO_FILE = "sentence_encoder.json"
CALIBRATION_DIR = "calibration"
OWN = (INFO_FILE, CALIBRATION_DIR)  # what `save` writes, its marker first (io_utils.atomic_dir)
FORMAT_VERSION = 1


def fingerprint(embedder):
  """16 hex digits naming what `embedder`'s vectors depend on (see the module notes)."""
  model = embedder.loaded
  h = hashlib.sha256()
  head = {"config": None if model.config is None else model.config.to_dict(),
          "do_lower_case": bool(model.do_lower_case), "pooling": embedder.pooling_spec.name,
          "max_seq_length": embedder.max_seq_length}
  h.update(json.dumps(head, sort_keys=True).encode("utf-8"))
  with open(model.vocab_file, "rb") as f:
    h.update(f.read())
  for variable in model.encoder.variables:  # in creation order; their names change with Keras' layer counters
    value = variable.numpy()
    h.update(f"{value.shape}:{value.dtype}".encode("utf-8"))
    h.update(np.ascontiguousarray(value).tobytes())
  return h.hexdigest()[:16]


def describe(model, pooling, max_seq_length, fingerprint_hex):
  """One line naming a model, pooling, max_seq_length and fingerprint."""
  return f"{model} (pooling {pooling}, max_seq_length {max_seq_length}, fingerprint {fingerprint_hex})"


def write(folder, embedder, fingerprint_hex, calibration, settings):
  """Writes sentence_encoder.json and calibration/ (when `calibration` is not None) into the new `folder`.

  Args:
    settings: dict, the sentence-transformers settings (the keys of ST_SETTINGS).
  """
  source = str(embedder.loaded.source)
  info = {"format_version": FORMAT_VERSION,
          "model": os.path.abspath(source) if os.path.exists(source) else source,  # a path, or a preset name
          "do_lower_case": bool(embedder.loaded.do_lower_case), "pooling": embedder.pooling_spec.name,
          "max_seq_length": embedder.max_seq_length, "fingerprint": fingerprint_hex,
          "calibration": None if calibration is None else calibration.method, **settings}
  with open(os.path.join(folder, INFO_FILE), "w", encoding="utf-8") as f:
    f.write(json.dumps(info, indent=2) + "\n")
  if calibration is not None:
    calibration.save(os.path.join(folder, CALIBRATION_DIR))


# sentence_encoder.json's keys and the types `load` accepts for them.
_INFO_TYPES = {"model": (str,), "do_lower_case": (bool,), "pooling": (str,), "max_seq_length": (int,),
               "fingerprint": (str,), "calibration": (str, type(None))}
# The sentence-transformers settings: optional keys (a folder saved without them loads with the defaults).
ST_SETTINGS = {"prompts": (dict, type(None)), "default_prompt_name": (str, type(None)),
               "truncate_dim": (int, type(None)), "similarity_fn_name": (str, type(None)), "normalize": (bool,)}


def read_info(path):
  """sentence_encoder.json of the folder `path`, checked: one line naming the file for anything wrong in it."""
  info_path = os.path.join(path, INFO_FILE)
  info = io_utils.read_json_object(info_path, f"no {INFO_FILE}: not a directory written by SentenceEncoder.save")
  if info.get("format_version") != FORMAT_VERSION:
    raise errors.UserError(f"format_version {str(info.get('format_version'))[:40]!r}, this version reads "
                           f"{FORMAT_VERSION}", info_path)
  for key, types in (*_INFO_TYPES.items(), *((k, t) for k, t in ST_SETTINGS.items() if k in info)):
    value = info.get(key)
    if key not in info or not isinstance(value, types) or (int in types and isinstance(value, bool)):
      allowed = " or ".join("null" if t is type(None) else t.__name__ for t in types)
      raise errors.UserError(f'"{key}" must be {allowed}, got {str(value)[:40]!r}', info_path)
  if info["max_seq_length"] < 2 or not info["model"]:
    raise errors.UserError('"max_seq_length" must be >= 2 and "model" not empty', info_path)
  if not all(isinstance(k, str) and isinstance(v, str) for k, v in (info.get("prompts") or {}).items()):
    raise errors.UserError('"prompts" must map names to str', info_path)
  try:
    pooling_lib.check_name(info["pooling"])
  except ValueError as e:
    raise errors.UserError(str(e), info_path) from e
  return info


def model_of(path, name, trust_saved_model):
  """The model that `load(path)` reads for sentence_encoder.json's "model" `name`: a preset (any spelling
  `from_pretrained` takes: its name or Hub id, any case) as it is, else a path resolved against the folder `path`.
  Raises errors.UserError for a SavedModel without the opt-in."""
  if presets.preset_name(name):
    return name
  model_dir = os.path.join(os.path.abspath(path), name)  # an absolute name stays as it is
  if loaders.detect_format(model_dir) == "tfhub" and not trust_saved_model:
    raise errors.UserError(f"names the SavedModel {model_dir}; a SavedModel is a program, and a saved folder never "
                           f"makes the library run one: pass model={model_dir!r} (or trust_saved_model=True) to "
                           "SentenceEncoder.load if you trust it", os.path.join(path, INFO_FILE))
  return model_dir


def load_saved_calibration(path, info):
  """The calibration in `path`/calibration/ (None when `info`, its read_info, names none). Raises errors.UserError
  when it is not the method sentence_encoder.json names."""
  if info["calibration"] is None:
    return None
  calibration = calibrator.load_calibration(os.path.join(path, CALIBRATION_DIR))
  if calibration.method != info["calibration"]:
    raise errors.UserError(f"{CALIBRATION_DIR}/ holds a {calibration.method!r} calibration, {INFO_FILE} names "
                           f"{info['calibration']!r}", path)
  return calibration


class EncoderFiles:
  """`save`, `load`, `load_calibration`, `load_flow`, `fingerprint` and `describe` of SentenceEncoder (its embedder,
  calibration and sentence-transformers settings)."""

  @functools.cached_property
  def fingerprint(self):
    """str, see the module notes; hashed on first use (save, load, describe), not when the encoder is made."""
    return fingerprint(self.embedder)

  def describe(self):
    """One line: the model, pooling, max_seq_length and fingerprint."""
    return describe(self.embedder.loaded.source, self.embedder.pooling_spec.name, self.embedder.max_seq_length,
                    self.fingerprint)

  def save(self, path, overwrite=False):
    """Writes the encoder's description, settings and calibration to the directory `path`, atomically.

    An existing `path` is replaced only when it is empty or an earlier `save` wrote it (its sentence_encoder.json
    and calibration/, nothing else); any other folder only with `overwrite=True`; the working directory, its
    parents, the home directory and / never (docs/security.md).

    Args:
      path: str, the directory.
      overwrite: bool, replace a non-empty folder that `save` did not write.

    Returns:
      str, path.

    Raises:
      errors.UserError: `path` may not be replaced (one line saying why and how to go on).
    """
    settings = {key: getattr(self, key) for key in ST_SETTINGS}
    with io_utils.atomic_dir(path, own=OWN, overwrite=overwrite) as tmp:
      write(tmp, self.embedder, self.fingerprint, self.calibration, settings)
    return path

  @classmethod
  def load(cls, path, model=None, batch_size=settings.BATCH_SENTENCES, cache_dir=None, trust_saved_model=False):
    """Restores what `save(path)` wrote: the model it names (or `model`), pooling, max_seq_length, settings and
    calibration.

    The folder's files are data: a model it names in TF1-checkpoint or HF safetensors format, or a preset, is
    loaded; a SavedModel (TF-Hub format) is a program, and is loaded only when the caller names it (`model=`) or
    opts in with `trust_saved_model=True` (docs/security.md). A relative model path is resolved against `path`.

    Args:
      path: str, a directory written by `save`.
      model: None (the model path or preset the file names), another path, or a loaders.LoadedModel; it must be
        the model the calibration was fitted on (same fingerprint).
      batch_size, cache_dir: as `from_pretrained`.
      trust_saved_model: bool, load (and so run) a SavedModel that the folder's sentence_encoder.json names.

    Returns:
      SentenceEncoder.

    Raises:
      errors.UserError: a missing, broken or unreadable file, or a SavedModel named without the opt-in (one line
        naming the file); ValueError: the model found is not the one saved (one line naming both).
    """
    info = read_info(path)
    named_by_folder = model is None
    try:
      if named_by_folder:
        model = model_of(path, info["model"], trust_saved_model)
      encoder = cls.from_pretrained(
          model, pooling=info["pooling"], max_seq_length=info["max_seq_length"], batch_size=batch_size,
          cache_dir=cache_dir, prompts=info.get("prompts"), default_prompt_name=info.get("default_prompt_name"),
          truncate_dim=info.get("truncate_dim"), similarity_fn_name=info.get("similarity_fn_name"),
          **({} if isinstance(model, loaders.LoadedModel) else {"do_lower_case": info["do_lower_case"]}))
    except errors.UserError:
      raise
    except ValueError as e:  # the saved settings do not fit the model (e.g. max_seq_length > its positions)
      raise errors.UserError(str(e), os.path.join(path, INFO_FILE)) from e
    except FileNotFoundError as e:
      if not named_by_folder:
        raise
      raise errors.UserError(f"names a model that is not there: {e.strerror or e} ({e.filename})",
                             os.path.join(path, INFO_FILE)) from e
    encoder.normalize = info.get("normalize", encoder.normalize)
    return encoder.load_calibration(path)

  def load_calibration(self, path):
    """Sets the calibration saved in `path` (by `save`), after checking it was fitted on this encoder's vectors.

    Returns:
      self.

    Raises:
      ValueError: it was fitted on another model, pooling or max_seq_length (one line naming both); errors.UserError:
        its calibration/ is missing, broken, or not the method sentence_encoder.json names.
    """
    info = read_info(path)
    if info["fingerprint"] != self.fingerprint:
      fitted = describe(info["model"], info["pooling"], info["max_seq_length"], info["fingerprint"])
      raise ValueError(f"{path} was saved from {fitted}, not from this encoder's {self.describe()}")
    self._set_calibration(load_saved_calibration(path, info))
    return self

  def load_flow(self, flow_dir):
    """Sets a flow fitted by run_flow.py (exp/<name>/flows/<fit>-<dataset>) or `flow_fitting.fit_flow`, after
    checking its flow.json: fitted on vectors of this width, pooling and max_seq_length.

    Returns:
      self.

    Raises:
      ValueError: naming each setting that differs, with this encoder's value and the flow's; errors.UserError:
        a missing, broken or corrupt file of the flow (naming it).
    """
    info = fitted_flow.read_info(flow_dir)  # a missing or broken flow.json: errors.UserError naming it
    wrong = fitted_flow.mismatch(info, dim=self.embedder.dim, provenance={
        "sentence_embedding_type": self.embedder.pooling_spec.name, "max_seq_length": self.embedder.max_seq_length})
    if wrong:  # a sound flow fitted on other vectors: a ValueError about the pairing
      raise ValueError(wrong)
    self._set_calibration(calibrator.load_calibration(flow_dir, flow_info=info))
    return self
