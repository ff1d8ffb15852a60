"""What the calls take as sentences: a str or UTF-8 bytes, a list, tuple or other iterable of them, or a numpy
string array (str_ or bytes_). Bytes are text in UTF-8, as TensorFlow's tf.string and sentence-transformers' users
take them: decoded, never their repr.

  is_one(value)         one sentence (str or bytes): `encode` returns one vector for it
  texts_of(value)       the sentences a value holds, or None when it holds vectors (similarity, semantic_search)
  sentence_list(value)  the sentences `encode` and `encode_raw` take, checked: one line for anything not text
"""
import collections.abc

import numpy as np


def is_one(value):
  """Whether `value` is one sentence: a str or bytes (numpy's str_ and bytes_ scalars too)."""
  return isinstance(value, (str, bytes))


def _text(value, i):
  """Item i of the sentences as a str: a str, or bytes decoded as UTF-8.

  Raises:
    ValueError: in one line, naming item i: bytes that are not UTF-8, or anything that is not text.
  """
  if isinstance(value, str):
    return str(value)
  if isinstance(value, bytes):
    try:
      return value.decode("utf-8")
    except UnicodeDecodeError as e:
      raise ValueError(f"sentences must be UTF-8 text; item {i} is not ({e.reason} at byte {e.start}): "
                       f"{value[max(0, e.start - 20):e.start + 20]!r}") from None
  raise ValueError(f"sentences must be str; item {i} is {type(value).__name__}: {value!r}")


def texts_of(value):
  """A str or bytes, a list/tuple of them or a numpy array of them (str_, bytes_, or objects that are all text)
  -> list of str (an empty list or tuple: no sentences); anything else -> None (vectors)."""
  if is_one(value):
    return [_text(value, 0)]
  if isinstance(value, np.ndarray) and value.dtype.kind in "USO":
    value = value.reshape(-1).tolist()
  if isinstance(value, (list, tuple)) and all(is_one(v) for v in value):
    return [_text(v, i) for i, v in enumerate(value)]
  return None


def sentence_list(value):
  """`texts_of`'s sentences, or those of any other iterable of str or bytes, as a list of str.

  Raises:
    ValueError: in one line, naming the first item that is not text (or not UTF-8), or the type of a value that
      holds no sentences (a number, a dict).
  """
  texts = texts_of(value)
  if texts is None:
    if isinstance(value, dict) or not isinstance(value, collections.abc.Iterable):
      raise ValueError(f"sentences must be a str or a list of str, got {type(value).__name__}")
    texts = [_text(v, i) for i, v in enumerate(value)]
  return texts
