"""A SentenceEncoder's saved folder (SentenceEncoder.save / load): what it holds and what loading it may read.

  <dir>/sentence_encoder.json   the model (its path or preset name), pooling, max_seq_length, the fingerprint,
                                the calibration's method
  <dir>/calibration/            the calibration (calibration.calibrator's folder), when there is one

The folder is data (docs/security.md): `read_info` checks every key of the JSON file, `model_of` resolves the model
it names against the folder and refuses a SavedModel (a program) unless the caller opts in, and `load_calibration`
restores the calibration strictly.
"""
import json
import os

from bert_flow_tf import loaders
from bert_flow_tf.calibration import calibrator
from bert_flow_tf.loaders import presets
from bert_flow_tf.modeling import pooling as pooling_lib
from bert_flow_tf.utils import errors
from bert_flow_tf.utils import io_utils

INFO_FILE = "sentence_encoder.json"
CALIBRATION_DIR = "calibration"
OWN = (INFO_FILE, CALIBRATION_DIR)  # what `save` writes, its marker first (io_utils.atomic_dir)
FORMAT_VERSION = 1


def write(folder, embedder, fingerprint, calibration):
  """Writes sentence_encoder.json and calibration/ (when `calibration` is not None) into the new `folder`."""
  source = str(embedder.loaded.source)
  info = {"format_version": FORMAT_VERSION,
          "model": os.path.abspath(source) if os.path.exists(source) else source,  # a path, or a preset name
          "do_lower_case": bool(embedder.loaded.do_lower_case), "pooling": embedder.pooling.name,
          "max_seq_length": embedder.max_seq_length, "fingerprint": fingerprint,
          "calibration": None if calibration is None else calibration.method}
  with open(os.path.join(folder, INFO_FILE), "w", encoding="utf-8") as f:
    f.write(json.dumps(info, indent=2) + "\n")
  if calibration is not None:
    calibration.save(os.path.join(folder, CALIBRATION_DIR))


# sentence_encoder.json's keys and the types `load` accepts for them.
_INFO_TYPES = {"model": (str,), "do_lower_case": (bool,), "pooling": (str,), "max_seq_length": (int,),
               "fingerprint": (str,), "calibration": (str, type(None))}


def read_info(path):
  """sentence_encoder.json of the folder `path`, checked: one line naming the file for anything wrong in it."""
  info_path = os.path.join(path, INFO_FILE)
  info = io_utils.read_json_object(info_path, f"no {INFO_FILE}: not a directory written by SentenceEncoder.save")
  if info.get("format_version") != FORMAT_VERSION:
    raise errors.UserError(f"format_version {str(info.get('format_version'))[:40]!r}, this version reads "
                           f"{FORMAT_VERSION}", info_path)
  for key, types in _INFO_TYPES.items():
    value = info.get(key)
    if key not in info or not isinstance(value, types) or (types == (int,) and isinstance(value, bool)):
      allowed = " or ".join("null" if t is type(None) else t.__name__ for t in types)
      raise errors.UserError(f'"{key}" must be {allowed}, got {str(value)[:40]!r}', info_path)
  if info["max_seq_length"] < 2 or not info["model"]:
    raise errors.UserError('"max_seq_length" must be >= 2 and "model" not empty', info_path)
  try:
    pooling_lib.check_name(info["pooling"])
  except ValueError as e:
    raise errors.UserError(str(e), info_path) from e
  return info


def model_of(path, name, trust_saved_model):
  """The model that `load(path)` reads for sentence_encoder.json's "model" `name`: a preset name as it is, else a
  path resolved against the folder `path`. Raises errors.UserError for a SavedModel without the opt-in."""
  if name in presets.PRESETS:
    return name
  model_dir = os.path.join(os.path.abspath(path), name)  # an absolute name stays as it is
  if loaders.detect_format(model_dir) == "tfhub" and not trust_saved_model:
    raise errors.UserError(f"names the SavedModel {model_dir}; a SavedModel is a program, and a saved folder never "
                           f"makes the library run one: pass model={model_dir!r} (or trust_saved_model=True) to "
                           "SentenceEncoder.load if you trust it", os.path.join(path, INFO_FILE))
  return model_dir


def load_calibration(path, info):
  """The calibration in `path`/calibration/ (None when `info`, its read_info, names none). Raises errors.UserError
  when it is not the method sentence_encoder.json names."""
  if info["calibration"] is None:
    return None
  calibration = calibrator.load(os.path.join(path, CALIBRATION_DIR))
  if calibration.method != info["calibration"]:
    raise errors.UserError(f"{CALIBRATION_DIR}/ holds a {calibration.method!r} calibration, {INFO_FILE} names "
                           f"{info['calibration']!r}", path)
  return calibration
