"""A SentenceEncoder's saved folder (SentenceEncoder.save / load): what it holds and what loading it may read,
and the fingerprint that ties a calibration to its model.

  <dir>/sentence_encoder.json   the model (its path or preset name), pooling, max_seq_length, the fingerprint,
                                the calibration's method, the sentence-transformers settings (prompts,
                                default_prompt_name, truncate_dim, similarity_fn_name, normalize), and the
                                files and folders `save` wrote beside it ("files": what a later save may replace)
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

Every function takes and returns plain values (an embedder, a calibration, a dict of settings): SentenceEncoder's
save, load, load_calibration and load_flow call them with its parts.
"""
import contextlib
import hashlib
import json
import os

import numpy as np

from bert_flow_tf import loaders
from bert_flow_tf.calibration import calibrator
from bert_flow_tf.calibration import fitted_flow
from bert_flow_tf.loaders import presets
from bert_flow_tf.modeling import pooling as pooling_lib
from bert_flow_tf.utils import errors
from bert_flow_tf.utils import io_utils

INFO_FILE = "sentence_encoder.json"
CALIBRATION_DIR = "calibration"
OWN = (INFO_FILE, CALIBRATION_DIR)  # what `save` writes, its marker first (io_utils.atomic_dir)
FILES = "files"  # sentence_encoder.json's list of the paths `save` wrote under the folder (io_utils.relative_paths)
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
  """Writes calibration/ (when `calibration` is not None), then sentence_encoder.json listing it, into the new
  `folder`.

  Args:
    settings: dict, the sentence-transformers settings (the keys of ST_SETTINGS).
  """
  if calibration is not None:
    calibration.save(os.path.join(folder, CALIBRATION_DIR))
  source = str(embedder.loaded.source)
  info = {"format_version": FORMAT_VERSION,
          "model": os.path.abspath(source) if os.path.exists(source) else source,  # a path, or a preset name
          "do_lower_case": bool(embedder.loaded.do_lower_case), "pooling": embedder.pooling_spec.name,
          "max_seq_length": embedder.max_seq_length, "fingerprint": fingerprint_hex,
          "calibration": None if calibration is None else calibration.method, **settings,
          FILES: io_utils.relative_paths(folder)}
  with open(os.path.join(folder, INFO_FILE), "w", encoding="utf-8") as f:
    f.write(json.dumps(info, indent=2) + "\n")


def written(path):
  """What the `save` that wrote the folder `path` wrote there: its sentence_encoder.json and the paths that lists
  (io_utils.relative_paths' form); nothing when that file is missing, does not read or lists none."""
  try:
    listed = io_utils.read_json_object(os.path.join(path, INFO_FILE), "no info file").get(FILES)
  except (OSError, ValueError):  # errors.UserError is a ValueError
    return ()
  if not isinstance(listed, list) or not all(isinstance(p, str) for p in listed):
    return ()
  return (INFO_FILE, *listed)


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
  calibration = calibrator.load_calibration(os.path.join(path, CALIBRATION_DIR), method=info["calibration"])
  if calibration.method != info["calibration"]:
    raise errors.UserError(f"{CALIBRATION_DIR}/ holds a {calibration.method!r} calibration, {INFO_FILE} names "
                           f"{info['calibration']!r}", path)
  return calibration


def save(path, embedder, fingerprint_hex, calibration, settings, overwrite=False):
  """Writes an encoder's description, settings and calibration to the directory `path`, atomically (`write`).

  An existing `path` is replaced only when it is empty or an earlier `save` wrote it (every file and folder in it,
  at any depth, is one its sentence_encoder.json lists); any other folder only with `overwrite=True`; a symbolic
  link, the working directory, its parents, the home directory and / never (docs/security.md).

  Args:
    path: str, the directory.
    embedder, fingerprint_hex, calibration, settings: as `write`.
    overwrite: bool, replace a non-empty folder that `save` did not write.

  Returns:
    str, path.

  Raises:
    errors.UserError: `path` may not be replaced (one line saying why and how to go on).
  """
  with io_utils.atomic_dir(path, own=OWN, overwrite=overwrite, written=written) as tmp:
    write(tmp, embedder, fingerprint_hex, calibration, settings)
  return path


# The constructor's keywords that a saved folder sets (with do_lower_case, a load option), in its signature's order.
SETTINGS = ("prompts", "default_prompt_name", "truncate_dim", "similarity_fn_name", "normalize", "pooling",
            "max_seq_length")


def is_saved(model):
  """Whether `model` (anything SentenceEncoder takes) is the path of a folder `save` wrote (it holds INFO_FILE)."""
  return isinstance(model, (str, os.PathLike)) and os.path.isfile(os.path.join(model, INFO_FILE))


def saved_model_and_settings(path, model=None, trust_saved_model=False):
  """What SentenceEncoder makes the encoder of the folder `path` (`save` wrote it) from: (model, settings).

  Args:
    path: str, the folder.
    model: None (the model its sentence_encoder.json names: `model_of`), or another path or loaders.LoadedModel.
    trust_saved_model: bool, see `model_of`.

  Returns:
    (the model, dict of SentenceEncoder's keywords: pooling, max_seq_length, the sentence-transformers settings
    and do_lower_case, this one unless `model` is a loaders.LoadedModel, whose own it is).
  """
  info = read_info(path)
  if model is None:
    model = model_of(path, info["model"], trust_saved_model)
  settings = {key: info[key] for key in ST_SETTINGS if key in info}
  settings.update(pooling=info["pooling"], max_seq_length=info["max_seq_length"])
  if not isinstance(model, loaders.LoadedModel):
    settings["do_lower_case"] = info["do_lower_case"]
  return model, settings


def constructor_arguments(path, given):
  """SentenceEncoder(path) of a folder `save` wrote, as `load(path)` reads it: (the model it names, the
  constructor's keywords: the folder's settings (`saved_model_and_settings`) with those in `given`, a dict of
  keywords, that are not None in their place)."""
  with loading_errors(path, named_by_folder=True):
    model, settings = saved_model_and_settings(path)
  return model, {**settings, **{key: value for key, value in given.items() if value is not None}}


@contextlib.contextmanager
def loading_errors(path, named_by_folder):
  """Within it, making the encoder that the folder `path` describes: a ValueError (saved settings that do not fit
  the model, e.g. max_seq_length past its positions) and, for a model the folder names, a FileNotFoundError become
  errors.UserError naming its sentence_encoder.json."""
  info_path = os.path.join(path, INFO_FILE)
  try:
    yield
  except errors.UserError:
    raise
  except ValueError as e:
    raise errors.UserError(str(e), info_path) from e
  except FileNotFoundError as e:
    if not named_by_folder:
      raise
    raise errors.UserError(f"names a model that is not there: {e.strerror or e} ({e.filename})", info_path) from e


def saved_calibration(path, fingerprint_hex, described):
  """The calibration `save(path)` wrote (None for none), after checking it was fitted on the vectors of the
  encoder whose fingerprint is `fingerprint_hex` (`described`: its one-line `describe`).

  Raises:
    ValueError: it was fitted on another model, pooling or max_seq_length (one line naming both); errors.UserError:
      its calibration/ is missing, broken, or not the method sentence_encoder.json names.
  """
  info = read_info(path)
  if info["fingerprint"] != fingerprint_hex:
    fitted = describe(info["model"], info["pooling"], info["max_seq_length"], info["fingerprint"])
    raise ValueError(f"{path} was saved from {fitted}, not from this encoder's {described}")
  return load_saved_calibration(path, info)


def fitted_flow_calibration(flow_dir, embedder):
  """The flow fitted by run_flow.py (exp/<name>/flows/<fit>-<dataset>) or `flow_fitting.fit_flow` in `flow_dir`,
  after checking its flow.json: fitted on vectors of `embedder`'s width, pooling and max_seq_length.

  Raises:
    ValueError: naming each setting that differs, with the embedder's value and the flow's; errors.UserError:
      a missing, broken or corrupt file of the flow (naming it).
  """
  info = fitted_flow.read_info(flow_dir)  # a missing or broken flow.json: errors.UserError naming it
  wrong = fitted_flow.mismatch(info, dim=embedder.dim, provenance={
      "sentence_embedding_type": embedder.pooling_spec.name, "max_seq_length": embedder.max_seq_length})
  if wrong:  # a sound flow fitted on other vectors: a ValueError about the pairing
    raise ValueError(wrong)
  return calibrator.load_calibration(flow_dir, flow_info=info)
