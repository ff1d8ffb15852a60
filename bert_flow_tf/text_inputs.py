"""What the calls take as sentences: a str, a list, tuple or other iterable of str, or a numpy string array.

  texts_of(value)       the sentences a value holds, or None when it holds vectors (similarity, semantic_search)
  sentence_list(value)  the sentences `encode` and `encode_raw` take, checked: one line for anything not text
"""
import collections.abc

import numpy as np


def texts_of(value):
  """A str, list/tuple of str or numpy string array -> list of str (an empty list or tuple: no sentences);
  anything else -> None (vectors)."""
  if isinstance(value, str):
    return [value]
  if isinstance(value, np.ndarray) and value.dtype.kind in "US":
    return [str(v) for v in value.reshape(-1)]
  if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
    return [str(v) for v in value]
  return None


def sentence_list(value):
  """`texts_of`'s sentences, or those of any other iterable of str, as a list of str.

  Raises:
    ValueError: in one line, naming the first item that is not a str, or the type of a value that holds no
      sentences (a number, a dict).
  """
  texts = texts_of(value)
  if texts is None:
    if isinstance(value, dict) or not isinstance(value, collections.abc.Iterable):
      raise ValueError(f"sentences must be a str or a list of str, got {type(value).__name__}")
    texts = list(value)
  for i, text in enumerate(texts):
    if not isinstance(text, str):
      raise ValueError(f"sentences must be str; item {i} is {type(text).__name__}: {text!r}")
  return texts
