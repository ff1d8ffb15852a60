"""A sentence-transformers model folder read as that model: where its BERT is, its pooling, length and settings.

A folder with `modules.json` is a sentence-transformers model. Its modules, in order, must be a
`models.Transformer` (the BERT: HF files at its path, `sentence_bert_config.json` with `max_seq_length`), a
`models.Pooling` (`<path>/config.json`) and optionally a `models.Normalize`. Their meaning here:

  pooling_mode_mean_tokens  -> "last-avg" (the masked mean of the last block, [CLS] and [SEP] included, as ours)
  pooling_mode_cls_token    -> "cls-raw" (the last block's [CLS] vector)
  Normalize                 -> unit-length vectors out of `encode`
  config_sentence_transformers.json: prompts, default_prompt_name, similarity_fn_name

Anything else (Dense, max or weighted pooling, several pooling modes at once, a pooling that leaves out the
prompt) is refused in one line naming the file, rather than read as something else.
"""
import dataclasses
import json
import os

from bert_flow_tf.loaders import presets
from bert_flow_tf.utils import errors

MODULES_FILE = "modules.json"
_TRANSFORMER = "sentence_transformers.models.Transformer"
_POOLING = "sentence_transformers.models.Pooling"
_NORMALIZE = "sentence_transformers.models.Normalize"
_POOLING_MODES = {"pooling_mode_mean_tokens": "last-avg", "pooling_mode_cls_token": "cls-raw"}


@dataclasses.dataclass(frozen=True)
class StSettings:
  """What a sentence-transformers folder says beyond its BERT's weights.

  Attributes:
    model_dir: str, the folder of the BERT's HF files (the Transformer module's path).
    pooling: str, our pooling name.
    max_seq_length: int or None.
    normalize: bool, the folder ends with a Normalize module.
    prompts: dict str -> str.
    default_prompt_name: str or None.
    similarity_fn_name: str or None.
  """
  model_dir: str
  pooling: str
  max_seq_length: object = None
  normalize: bool = False
  prompts: dict = dataclasses.field(default_factory=dict)
  default_prompt_name: object = None
  similarity_fn_name: object = None


def is_st_folder(path):
  """Whether `path` is a directory holding a sentence-transformers modules.json."""
  return isinstance(path, (str, os.PathLike)) and os.path.isfile(os.path.join(path, MODULES_FILE))


def settings_of(model):
  """StSettings of a preset name, Hub id or directory that is a sentence-transformers folder; None for anything else
  (another format, a loaders.LoadedModel, None)."""
  folder = presets.model_dir(model) if isinstance(model, (str, os.PathLike)) else None
  return read(folder) if folder is not None and is_st_folder(folder) else None


def _read_json(path):
  try:
    with open(path, encoding="utf-8") as f:
      return json.load(f)
  except json.JSONDecodeError as e:
    raise errors.UserError(f"not valid JSON ({e.msg} at line {e.lineno} column {e.colno})", path) from e


def read(folder):
  """StSettings of the sentence-transformers folder `folder` (see the module notes).

  Raises:
    UserError naming the file: a module this package cannot compute, or a file that is not valid JSON.
  """
  folder = os.fspath(folder)
  modules_file = os.path.join(folder, MODULES_FILE)
  modules = _read_json(modules_file)
  types = [m.get("type") for m in modules] if isinstance(modules, list) else None
  if not types or types[0] != _TRANSFORMER or any(t not in (_TRANSFORMER, _POOLING, _NORMALIZE) for t in types) \
      or types.count(_TRANSFORMER) != 1 or types.count(_POOLING) != 1 or _POOLING not in types[1:2] \
      or types[2:] not in ([], [_NORMALIZE]):
    raise errors.UserError(f"modules {types} are not supported: only Transformer, Pooling (mean or cls) and an "
                           "optional Normalize, in that order", modules_file)
  bert_dir = os.path.join(folder, modules[0].get("path", ""))
  pooling_file = os.path.join(folder, modules[1].get("path", ""), "config.json")
  pooling = _pooling(_read_json(pooling_file), pooling_file)
  bert_config = os.path.join(bert_dir, "sentence_bert_config.json")
  max_seq_length = _read_json(bert_config).get("max_seq_length") if os.path.isfile(bert_config) else None
  st_config = os.path.join(folder, "config_sentence_transformers.json")
  settings = _read_json(st_config) if os.path.isfile(st_config) else {}
  return StSettings(bert_dir, pooling, max_seq_length, types[-1] == _NORMALIZE, dict(settings.get("prompts") or {}),
                    settings.get("default_prompt_name"), settings.get("similarity_fn_name"))


def _pooling(config, path):
  """Our pooling name for a models.Pooling config.json, or UserError naming `path`."""
  on = sorted(key for key, value in config.items() if key.startswith("pooling_mode_") and value)
  if len(on) != 1 or on[0] not in _POOLING_MODES:
    raise errors.UserError(f"pooling {on or 'none'} is not supported: exactly one of "
                           f"{', '.join(_POOLING_MODES)} (our {', '.join(_POOLING_MODES.values())})", path)
  if config.get("include_prompt", True) is False:
    raise errors.UserError("include_prompt false (a pooling that leaves out the prompt) is not supported", path)
  return _POOLING_MODES[on[0]]
