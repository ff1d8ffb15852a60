"""Test-only reference: the WordPiece tokenizer of google-research/bert's `tokenization.py` (which the original
BERT-flow ships unchanged), ported to compare our in-graph tokenizer with. Never imported by the package.

What it does, in its order (this order is the point of keeping it):
  1. clean: drop NUL, U+FFFD and characters of category Cc or Cf (tab, LF, CR kept); turn tab, LF, CR and Zs
     into spaces. Private-use (Co) and unassigned (Cn) characters are kept.
  2. put spaces around CJK ideographs; split on whitespace (Python's `str.split`).
  3. per word, with do_lower_case: Python's `str.lower()` on the whole word (context-aware: a capital sigma at a
     word's end becomes the final ς), THEN NFD and drop non-spacing marks (Mn).
  4. split off punctuation (ASCII symbol ranges and every Unicode P* character) as one-character words.
  5. WordPiece, greedy longest match first with "##" continuations; a word that cannot be covered, or longer
     than 200 characters (Hugging Face and we use 100), is one [UNK].
"""
import unicodedata

MAX_CHARS_PER_WORD = 200


def _is_cjk(cp):
  return any(lo <= cp <= hi for lo, hi in (
      (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
      (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F)))


def _is_punctuation(char):
  cp = ord(char)
  return 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126 or (
      unicodedata.category(char).startswith("P"))


def _clean(text):
  out = []
  for char in text:
    if char in "\t\n\r" or unicodedata.category(char) == "Zs":
      out.append(" ")
    elif char not in "\x00\ufffd" and unicodedata.category(char) not in ("Cc", "Cf"):
      out.append(char)
  return "".join(out)


def _split_punctuation(word):
  pieces, current = [], ""
  for char in word:
    if _is_punctuation(char):
      pieces += [current, char] if current else [char]
      current = ""
    else:
      current += char
  return pieces + ([current] if current else [])


def basic_tokenize(text, do_lower_case):
  """Text -> words, as google's BasicTokenizer."""
  text = "".join(f" {c} " if _is_cjk(ord(c)) else c for c in _clean(text))
  words = []
  for word in text.split():
    if do_lower_case:
      word = "".join(c for c in unicodedata.normalize("NFD", word.lower()) if unicodedata.category(c) != "Mn")
    words += _split_punctuation(word)
  return words


def wordpiece(word, vocab, unk="[UNK]"):
  """One word -> its pieces (greedy longest match first), or [unk]."""
  if len(word) > MAX_CHARS_PER_WORD:
    return [unk]
  pieces, start = [], 0
  while start < len(word):
    end = len(word)
    while end > start and (("##" if start else "") + word[start:end]) not in vocab:
      end -= 1
    if end == start:
      return [unk]
    pieces.append(("##" if start else "") + word[start:end])
    start = end
  return pieces


def tokenize_ids(text, vocab, do_lower_case):
  """Text -> word-piece ids without [CLS]/[SEP] (vocab: token -> id)."""
  return [vocab[p] for word in basic_tokenize(text, do_lower_case) for p in wordpiece(word, vocab)]
