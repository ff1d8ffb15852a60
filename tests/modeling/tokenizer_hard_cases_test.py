"""Our in-graph tokenizer on hard text against two references: Hugging Face `tokenizers` (BertNormalizer +
BertPreTokenizer + WordPiece) and google-research/bert's Python WordPiece, which the original BERT-flow used
(tests/modeling/reference_wordpiece.py, a test-only port). Vocab: all-MiniLM-L6-v2's (bert-base-uncased's).

The places where the references disagree, or where we follow neither, are listed below and in
docs/tokenizer.md; any other disagreement fails the test.
"""
import pytest
import tensorflow as tf

from bert_flow_tf.modeling import tokenizer as tokenizer_lib
from tests.modeling import reference_wordpiece

CASES = {
    "turkish dotted I": "İstanbul'da IŞIK ılık",
    "german sharp s": "Straße STRASSE ẞ groß",
    "greek final sigma": "ΟΔΥΣΣΕΥΣ ΚΎΡΙΟΣ λόγος",
    "ligatures": "ﬁnancial ﬂow œuvre Æsop ĳ",
    "combining marks": "cafe\u0301 n\u0303o a\u0308\u0304 \u0301alone",
    "zero-width and format": "zero\u200bwidth join\u200der non\u200cjoiner word\u2060joiner \ufeffbom soft\u00adhyphen",
    "control": "a\x07b\x0bc\x0cd\x1ce\x85f\x7fg \x00h \ufffdi",
    "separators": "one\u2028two\u2029three\u3000four\u00a0five\u1680six\tseven\r\neight",
    "private use": "x\ue000y \U000f0000z",
    "unassigned": "x\u0378y x\uffffy",
    "cjk": "漢字かな交じり文 한국어 日本語テキスト",
    "emoji": "I ❤️ NY 😀 👨\u200d👩\u200d👧 👍🏽 🇫🇷",
    "arabic": "مَرْحَبًا بِالعالم العربية",
    "devanagari": "नमस्ते दुनिया हिन्दी",
    "full-width": "ＡＢＣ１２３！？ ｔｅｓｔ，ｏｋ",
    "symbols": "€100 $5 ©2020 ™ ° ± × ½ ¼ ² µ Å K",
    "ascii word of 100": "c" * 100,
    "ascii word of 150": "a" * 150,
    "ascii word of 250": "b" * 250,
    "greek word of 60": "α" * 60,
}
# (case, do_lower_case) where the original's Python WordPiece gives other ids than HF (we follow HF):
ORIGINAL_DIFFERS = {
    ("greek final sigma", True),   # str.lower() of a whole word makes a final capital sigma ς; HF: always σ
    ("private use", True), ("private use", False),  # the original drops only Cc and Cf; HF also Co
    ("ascii word of 150", True), ("ascii word of 150", False),  # the original's word limit is 200 chars, HF's 100
}
# (case, do_lower_case) where we give other ids than HF (and than the original): [UNK] for a word over 100 UTF-8
# bytes, which HF and the original split into pieces up to 100 (200) characters.
OURS_DIFFER = {("greek word of 60", True), ("greek word of 60", False)}


@pytest.fixture(scope="module")
def references(minilm_dir):
  """vocab (token -> id) and the HF tokenizers, uncased (the model's tokenizer.json) and cased (same vocab)."""
  import tokenizers
  from tokenizers import models, normalizers, pre_tokenizers
  vocab = {t: i for i, t in enumerate(tokenizer_lib.read_vocab(minilm_dir / "vocab.txt"))}
  uncased = tokenizers.Tokenizer.from_file(str(minilm_dir / "tokenizer.json"))
  cased = tokenizers.Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
  cased.normalizer = normalizers.BertNormalizer(lowercase=False, strip_accents=None)
  cased.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
  for hf in (uncased, cased):
    hf.no_truncation()
    hf.no_padding()
  return vocab, {True: uncased, False: cased}


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_hard_cases_against_hf_and_the_original(references, minilm_dir, do_lower_case):
  vocab, hf = references
  ours = tokenizer_lib.BertTokenizer(minilm_dir / "vocab.txt", do_lower_case=do_lower_case)
  got = dict(zip(CASES, ours.tokenize(tf.constant(list(CASES.values()))).to_list()))
  want = {name: hf[do_lower_case].encode(text, add_special_tokens=False).ids for name, text in CASES.items()}
  original = {name: reference_wordpiece.tokenize_ids(text, vocab, do_lower_case) for name, text in CASES.items()}
  assert {n for n in CASES if original[n] != want[n]} == {n for n, lower in ORIGINAL_DIFFERS if lower == do_lower_case}
  assert {n for n in CASES if got[n] != want[n]} == {n for n, lower in OURS_DIFFER if lower == do_lower_case}
  unk = vocab["[UNK]"]
  assert got["greek word of 60"] == [unk] and len(want["greek word of 60"]) > 1
  assert got["ascii word of 100"] != [unk] and got["ascii word of 150"] == [unk] == original["ascii word of 250"]
  if do_lower_case:
    assert "ς" in reference_wordpiece.basic_tokenize(CASES["greek final sigma"], True)[0]


def test_reference_port_pieces_on_a_tiny_vocab():
  """The port itself, on google's own tokenization_test.py example plus the order that matters here."""
  vocab = {t: i for i, t in enumerate(["[UNK]", "un", "##want", "##ed", "runn", "##ing", ",", "ς", "σ"])}
  assert reference_wordpiece.tokenize_ids("UNwant\u00E9d,running", vocab, True) == [1, 2, 3, 6, 4, 5]
  assert reference_wordpiece.basic_tokenize(" \tHeLLo!how  \n Are yoU?  ", False) == [
      "HeLLo", "!", "how", "Are", "yoU", "?"]
  assert reference_wordpiece.basic_tokenize("Σ ΑΣ", True) == ["σ", "ας"]  # final form only after a letter
