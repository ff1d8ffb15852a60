"""The text SavedModel's input bound: each request string cut, before tokenizing, to what its first
max_seq_length - 2 word pieces can come from, so that a request's tokenizer memory is bounded by its sentence
count and normal input gives the same pieces, exactly (see `bound_text`).
"""
import tensorflow as tf

from bert_flow_tf.modeling import tokenizer as tokenizer_lib

# What tensorflow-text's FastBertTokenizer splits off as a word of its own besides CJK ideographs (which
# `tokenizer.normalize` already spaces): BERT's punctuation, Unicode P* and ASCII !-/ :-@ [-` {-~.
_PUNCTUATION = r"([!-/:-@\[-`{-~\p{P}])"
# One character more than tokenizer.MAX_BYTES_PER_WORD: a word that long is one [UNK] however long it is.
_WORD_CAP = tokenizer_lib.MAX_BYTES_PER_WORD + 1


def bound_text(sentences, max_seq_length, do_lower_case):
  """Each sentence normalized and cut to what its first max_seq_length - 2 word pieces can come from: tf.string [B].

  Tokenizing a whole 1 MB string costs ~23 bytes of memory per byte; after this, the tokenizer's memory is bounded by
  the sentence count (the regular expressions here take a few copies of the input), with the same word pieces up to
  max_seq_length (the tokenizer normalizes again; normalizing is idempotent). Why the cut cannot change the first
  P = max_seq_length - 2 pieces:
    1. after `tokenizer.normalize` the only whitespace is " ", CJK ideographs have spaces around them, and spaces
       put around each punctuation mark change no piece (the tokenizer splits them off anyway); then every maximal
       run of non-space characters is one word, and every word gives at least one piece;
    2. runs of spaces become one space (no piece comes from a space), and every word longer than _WORD_CAP
       characters is cut to _WORD_CAP characters: both before and after, it is over MAX_BYTES_PER_WORD bytes and
       gives exactly one [UNK];
    3. now each word and the space after it take at most _WORD_CAP + 1 characters, so the first
       (_WORD_CAP + 1) * (P + 1) characters hold the first P words whole (P pieces at least) and the space that
       ends the P-th. A word cut at the end comes after the first P pieces.
  """
  text = tokenizer_lib.normalize(sentences, do_lower_case)
  text = tf.strings.regex_replace(text, _PUNCTUATION, r" \1 ")
  text = tf.strings.regex_replace(text, " +", " ")
  text = tf.strings.regex_replace(text, f"([^ ]{{{_WORD_CAP}}})[^ ]+", r"\1")
  return tf.strings.substr(text, 0, (_WORD_CAP + 1) * (max_seq_length - 1), unit="UTF8_CHAR")
