"""The bound on each string before tokenizing: cut to what its first max_seq_length - 2 word pieces can come from,
so that tokenizer memory grows with the tokens read, not with the characters given, and every input gives the same
pieces up to max_seq_length, exactly (see `bound_text`).

  bound_text(sentences, ...)  in a graph: the text SavedModel's cut of each request string
  bound_list(sentences, ...)  a Python list cut a chunk at a time: what SentenceEncoder's tokenizer is given
"""
import tensorflow as tf

from bert_flow_tf.modeling import tokenizer as tokenizer_lib

# What tensorflow-text's FastBertTokenizer splits off as a word of its own besides CJK ideographs (which
# `tokenizer.normalize` already spaces): BERT's punctuation, Unicode P* and ASCII !-/ :-@ [-` {-~.
_PUNCTUATION = r"([!-/:-@\[-`{-~\p{P}])"
# One character more than tokenizer.MAX_BYTES_PER_WORD: a word that long is one [UNK] however long it is.
_WORD_CAP = tokenizer_lib.MAX_BYTES_PER_WORD + 1
# Characters `bound_list` cuts at a time: the regular expressions copy them a few times.
_CHUNK_CHARS = 2 ** 20


def bound_text(sentences, max_seq_length, do_lower_case):
  """Each sentence normalized and cut to what its first max_seq_length - 2 word pieces can come from: tf.string [B].

  Tokenizing a whole 1 MB string costs ~23 bytes of memory per byte; after this, the tokenizer's memory is bounded by
  the sentence count (the regular expressions here take a few copies of the input), with the same word pieces up to
  max_seq_length (the tokenizer normalizes again; normalizing is idempotent), and more than that exactly when the
  whole sentence has more (so a cut sentence still counts as cut). Why the cut cannot change the first
  P = max_seq_length - 2 pieces:
    1. after `tokenizer.normalize` the only whitespace is " ", CJK ideographs have spaces around them, and spaces
       put around each punctuation mark change no piece (the tokenizer splits them off anyway); then every maximal
       run of non-space characters is one word, and every word gives at least one piece;
    2. runs of spaces become one space (no piece comes from a space), and every word longer than _WORD_CAP
       characters is cut to _WORD_CAP characters: both before and after, it is over MAX_BYTES_PER_WORD bytes and
       gives exactly one [UNK];
    3. now each word and the space after it take at most _WORD_CAP + 1 characters, so the first
       (_WORD_CAP + 1) * (P + 1) characters hold the first P words whole (P pieces at least) and the space that
       ends the P-th. A word cut at the end comes after the first P pieces, and gives one when the sentence has
       more than P words.
  """
  text = tokenizer_lib.normalize(sentences, do_lower_case)
  text = tf.strings.regex_replace(text, _PUNCTUATION, r" \1 ")
  text = tf.strings.regex_replace(text, " +", " ")
  text = tf.strings.regex_replace(text, f"([^ ]{{{_WORD_CAP}}})[^ ]+", r"\1")
  return tf.strings.substr(text, 0, (_WORD_CAP + 1) * (max_seq_length - 1), unit="UTF8_CHAR")


def bound_list(sentences, max_seq_length, do_lower_case):
  """`bound_text` of a list of n str, then the first P + 1 = max_seq_length - 1 words of each: list of n bytes
  (UTF-8), for the tokenizer.

  `bound_text`'s words are the tokenizer's (step 1 there), each at least one piece: the first P + 1 hold the first P
  pieces, and a piece more when the sentence has more. So what the tokenizer reads grows with the pieces it keeps (a
  few characters a piece in normal text), not with the sentence. `bound_text` runs over a chunk of at most
  _CHUNK_CHARS characters (or one longer sentence) at a time: its copies are a few chunks.
  """
  words = max_seq_length - 1
  return [b" ".join(text.split(None, words)[:words]) for chunk in _chunks(sentences, _CHUNK_CHARS)
          for text in bound_text(tf.constant(chunk, tf.string), max_seq_length, do_lower_case).numpy().tolist()]


def _chunks(sentences, chars):
  """The sentences in consecutive lists of at most `chars` characters together (a longer sentence alone)."""
  chunk, size = [], 0
  for sentence in sentences:
    if chunk and size + len(sentence) > chars:
      yield chunk
      chunk, size = [], 0
    chunk.append(sentence)
    size += len(sentence)
  if chunk:
    yield chunk
