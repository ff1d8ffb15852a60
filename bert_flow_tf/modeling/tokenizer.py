"""In-graph BERT WordPiece tokenizer and single-sentence packer (tensorflow-text).

BERT-flow encodes each sentence of a pair on its own (siamese): `[CLS] pieces [SEP]`, segment ids all 0, cut to
`max_seq_length` (at most `max_seq_length - 2` word pieces) and right-padded with `[PAD]`.

The ids are exactly those of the Hugging Face `BertNormalizer` + `BertPreTokenizer` + `WordPiece` pipeline (a
model's `tokenizer.json`). tensorflow-text's own BERT normalizer differs from it: it case-folds (`ς` -> `σ`),
applies NFKD (`™` -> `tm`, `´` -> ` ́`) and keeps control characters as separators. So the normalization is done
here with plain string ops, and `FastBertTokenizer` only splits (whitespace, punctuation, CJK characters) and runs
WordPiece:

  1. clean: drop NUL, U+FFFD and control/format characters (categories Cc, Cf, Co; tab, LF, CR kept), turn
     every whitespace character into a space;
  2. put spaces around CJK ideographs;
  3. with `do_lower_case`: NFD, drop non-spacing marks (Mn, i.e. accents), then Unicode lower-case, one
     character at a time (capital sigma always becomes σ, never the final ς).

Dims: B = batch of sentences, S = sequence length.
"""
import pathlib

import tensorflow as tf
import tensorflow_text as tf_text

from bert_flow_tf.modeling import packing
from bert_flow_tf.utils import errors
from bert_flow_tf.utils import io_utils

CLS_TOKEN = "[CLS]"
SEP_TOKEN = "[SEP]"
PAD_TOKEN = "[PAD]"
UNK_TOKEN = "[UNK]"
MASK_TOKEN = "[MASK]"
REQUIRED_TOKENS = (CLS_TOKEN, SEP_TOKEN, PAD_TOKEN, UNK_TOKEN)

# Hugging Face WordPiece turns a word longer than 100 characters into [UNK]. tensorflow-text counts bytes; the two
# agree on ASCII words (see the module notes in `BertTokenizer`).
MAX_BYTES_PER_WORD = 100

# Characters the HF normalizer removes: Cc except \t \n \r, Cf, Co, and U+FFFD. (It keeps unassigned code points,
# U+0378 and U+FFFF among them, as we do; tests/modeling/tokenizer_hard_cases_test.py.)
_CONTROL_CHARS = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\p{Cf}\p{Co}\x{fffd}]"
# Rust's `char::is_whitespace` (the Unicode White_Space property) minus what `_CONTROL_CHARS` already removed.
_WHITESPACE_CHARS = r"[\t\n\r\p{Zs}\x{2028}\x{2029}]"
# The CJK Unified Ideograph blocks BERT splits into single characters.
_CJK_CHARS = (r"([\x{4e00}-\x{9fff}\x{3400}-\x{4dbf}\x{20000}-\x{2a6df}\x{2a700}-\x{2b73f}"
              r"\x{2b740}-\x{2b81f}\x{2b820}-\x{2ceaf}\x{f900}-\x{faff}\x{2f800}-\x{2fa1f}])")


def read_vocab(vocab_file):
  """Reads a BERT `vocab.txt` (one token per line; the line number is the id).

  Args:
    vocab_file: str or path-like, the vocabulary file.

  Returns:
    list of str, the tokens in id order.

  Raises:
    FileNotFoundError: the file does not exist.
    ValueError: one of [CLS], [SEP], [PAD], [UNK] is missing.
  """
  path = pathlib.Path(vocab_file)
  if not path.is_file():
    raise errors.missing_file("BERT vocab file not found", path)
  vocab = io_utils.read_lines(path)
  for token in REQUIRED_TOKENS:
    if token not in vocab:
      raise errors.UserError(f"the vocab has no {token} token; a BERT vocab needs all of "
                             f"{', '.join(REQUIRED_TOKENS)}", str(path))
  return vocab


def normalize(sentences, do_lower_case):
  """The Hugging Face `BertNormalizer` (clean text, CJK spacing, optional accent strip + lower-case) in TF ops.

  Args:
    sentences: tf.string Tensor of any shape, UTF-8.
    do_lower_case: bool. True: NFD, drop accents (Mn), lower-case. False: keep case and accents.

  Returns:
    tf.string Tensor of the same shape.
  """
  text = tf.strings.regex_replace(sentences, _CONTROL_CHARS, "")
  text = tf.strings.regex_replace(text, _WHITESPACE_CHARS, " ")
  text = tf.strings.regex_replace(text, _CJK_CHARS, r" \1 ")
  if do_lower_case:
    text = tf.strings.regex_replace(tf_text.normalize_utf8(text, "NFD"), r"\p{Mn}", "")
    # HF lower-cases char by char (always Σ -> σ); ICU would give the final form ς at the end of a word.
    text = tf.strings.regex_replace(text, "\u03a3", "\u03c3")
    text = tf.strings.lower(text, encoding="utf-8")
  return text


class BertTokenizer(tf.Module):
  """Strings -> BERT word-piece ids -> the encoder's three int32 inputs, all inside the TF graph.

  `tokenize` maps tf.string [B] to a RaggedTensor int32 [B, (pieces)] of word-piece ids without special tokens
  and without truncation. `pack` maps that to the dict `input_word_ids`, `input_mask`, `input_type_ids`, each int32
  [B, S]: `[CLS] pieces[:S - 2] [SEP]`, then `pad_id` (mask 0); type ids are all 0. `__call__` does both.

  The special-token ids (`cls_id`, `sep_id`, `pad_id`, `unk_id`, `mask_id`) are Python ints read from the vocab
  (101, 102, 0, 100, 103 for the uncased BERT vocab); `mask_id` is None for a vocab without [MASK].

  The WordPiece model (the vocab) is built into the graph as a constant, so a SavedModel holding this module
  needs no file at load time. The vocab file itself is also tracked as `vocab_file` (a `tf.saved_model.Asset`),
  so an export ships a copy in its `assets/`.

  Known difference from Hugging Face: HF gives [UNK] to words over 100 characters, this tokenizer to words over
  100 UTF-8 bytes (after normalization). They agree on ASCII; they differ only for non-ASCII words of 26 to 100
  characters. Unassigned code points are kept, as HF `tokenizers` 0.23 and the original do. The disagreements with
  HF and with the original's Python WordPiece on hard text are listed in docs/tokenizer.md.
  """

  def __init__(self, vocab_file, do_lower_case=True, max_seq_length=64, name=None):
    """Reads and checks the vocab and builds the WordPiece model.

    Args:
      vocab_file: str or path-like, BERT `vocab.txt` (one token per line).
      do_lower_case: bool, True for uncased models (NFD, strip accents, lower-case).
      max_seq_length: int >= 2, the default and largest packed length S (word pieces + [CLS] + [SEP]).
      name: optional module name.

    Raises:
      FileNotFoundError: `vocab_file` does not exist.
      ValueError: the vocab lacks [CLS], [SEP], [PAD] or [UNK]; `max_seq_length` < 2.
    """
    super().__init__(name=name)
    if int(max_seq_length) < 2:
      raise ValueError(f"max_seq_length must be >= 2 (room for [CLS] and [SEP]), got {max_seq_length}")
    vocab = read_vocab(vocab_file)
    token_to_id = {token: i for i, token in reversed(list(enumerate(vocab)))}
    self.do_lower_case = bool(do_lower_case)
    self.max_seq_length = int(max_seq_length)
    self.vocab_size = len(vocab)
    self.cls_id = token_to_id[CLS_TOKEN]
    self.sep_id = token_to_id[SEP_TOKEN]
    self.pad_id = token_to_id[PAD_TOKEN]
    self.unk_id = token_to_id[UNK_TOKEN]
    self.mask_id = token_to_id.get(MASK_TOKEN)
    self.vocab_file = tf.saved_model.Asset(str(vocab_file))
    self._wordpiece = tf_text.FastBertTokenizer(
        vocab=vocab, suffix_indicator="##", max_bytes_per_word=MAX_BYTES_PER_WORD, token_out_type=tf.int32,
        unknown_token=UNK_TOKEN, lower_case_nfd_strip_accents=False)

  # No AutoGraph: nothing here branches on a tensor, and converting tensorflow-text's Python cost ~1.4 s on each
  # process's first trace.
  @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
  def tokenize(self, sentences):
    """Word-piece ids of each sentence, no special tokens, not truncated.

    Args:
      sentences: tf.string [B], UTF-8.

    Returns:
      tf.RaggedTensor int32 [B, (pieces)].
    """
    return self._wordpiece.tokenize(normalize(sentences, self.do_lower_case))

  def tokenize_list(self, sentences, chunk_size=4096):
    """`tokenize` for a Python list of any length, run in chunks of `chunk_size` sentences.

    Returns:
      tf.RaggedTensor int32 [n, (pieces)].
    """
    sentences = list(sentences)
    parts = [self.tokenize(tf.constant(sentences[i:i + chunk_size], tf.string))
             for i in range(0, len(sentences), chunk_size)]
    return tf.concat(parts, axis=0) if parts else tf.RaggedTensor.from_row_lengths(
        tf.zeros([0], tf.int32), tf.zeros([0], tf.int64))

  def pack(self, token_ids, seq_length=None):
    """`[CLS] ids[:S - 2] [SEP]` per row, right-padded with `pad_id` to S.

    Args:
      token_ids: tf.RaggedTensor integer [B, (pieces)], as from `tokenize`.
      seq_length: S, a Python int or an int32 scalar Tensor with 2 <= S <= max_seq_length; default
        max_seq_length.

    Returns:
      dict of int32 [B, S]: `input_word_ids`, `input_mask` (1 on [CLS], pieces and [SEP], else 0),
      `input_type_ids` (all 0).

    Raises:
      ValueError: a static `seq_length` outside [2, max_seq_length].
    """
    seq_length = self._checked_seq_length(seq_length)
    pieces = tf.cast(token_ids, tf.int32)[:, :seq_length - 2]  # [B, (<= S - 2)]
    specials = tf.ones([pieces.nrows(), 1], tf.int32)
    ids = tf.concat([tf.RaggedTensor.from_tensor(specials * self.cls_id), pieces,
                     tf.RaggedTensor.from_tensor(specials * self.sep_id)], axis=1)  # [B, (<= S)]
    if isinstance(seq_length, int):
      shape = [None, seq_length]
    else:
      shape = tf.stack([ids.nrows(), tf.cast(seq_length, ids.row_splits.dtype)])
    word_ids = ids.to_tensor(default_value=self.pad_id, shape=shape)
    mask = tf.ones_like(ids).to_tensor(default_value=0, shape=shape)
    return packing.input_dict(word_ids, mask)

  def __call__(self, sentences, seq_length=None):
    """`pack(tokenize(sentences), seq_length)`: tf.string [B] (or a list of str) -> dict of three int32 [B, S]; a
    Python str is a batch of one, [1, S] (Hugging Face's tokenizer, as sentence-transformers users call it, returns
    its input_ids and attention_mask unpadded)."""
    if isinstance(sentences, str):
      sentences = [sentences]
    return self.pack(self.tokenize(sentences), seq_length)

  def _checked_seq_length(self, seq_length):
    """`seq_length` (default max_seq_length), checked against [2, max_seq_length] statically or in the graph."""
    if seq_length is None:
      return self.max_seq_length
    static = tf.get_static_value(seq_length)
    if static is not None:
      if not 2 <= int(static) <= self.max_seq_length:
        raise ValueError(f"seq_length must be in [2, max_seq_length={self.max_seq_length}], got {int(static)}")
      return int(static)
    seq_length = tf.convert_to_tensor(seq_length, tf.int32)
    with tf.control_dependencies([
        tf.debugging.assert_greater_equal(seq_length, 2, message="seq_length must be >= 2"),
        tf.debugging.assert_less_equal(seq_length, self.max_seq_length,
                                       message=f"seq_length must be <= max_seq_length={self.max_seq_length}")]):
      return tf.identity(seq_length)
