"""Tests for bert_flow_tf.modeling.tokenizer: exact pieces on a tiny vocab, HF parity on STS-B, SavedModel export."""
import numpy as np
import pytest
import tensorflow as tf

from bert_flow_tf.modeling import packing
from bert_flow_tf.modeling import tokenizer as tokenizer_lib

TINY_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "runn", "##ing", ",", "!",
              "cafe", "the", "Café", "Σ"]
PAD, UNK, CLS, SEP, MASK, UN, AFF, ABLE, RUNN, ING, COMMA, BANG, CAFE, THE, CAFE_CASED = range(15)


@pytest.fixture
def vocab_file(tmp_path):
  path = tmp_path / "vocab.txt"
  path.write_text("".join(token + "\n" for token in TINY_VOCAB), encoding="utf-8")
  return path


def _ids(ragged):
  return ragged.to_list()


def test_special_ids_and_size(vocab_file):
  tok = tokenizer_lib.BertTokenizer(vocab_file)
  assert (tok.cls_id, tok.sep_id, tok.pad_id, tok.unk_id, tok.mask_id) == (CLS, SEP, PAD, UNK, MASK)
  assert tok.vocab_size == len(TINY_VOCAB)
  assert tok.max_seq_length == 64


def test_tokenize_lower_case_strips_accents_and_splits_pieces(vocab_file):
  tok = tokenizer_lib.BertTokenizer(vocab_file)
  ids = tok.tokenize(tf.constant(["UNaffable, CAFÉ runnING!", "the xyz", "", "the你好"]))
  assert ids.dtype == tf.int32
  assert _ids(ids) == [[UN, AFF, ABLE, COMMA, CAFE, RUNN, ING, BANG], [THE, UNK], [], [THE, UNK, UNK]]


def test_tokenize_cleans_control_and_format_chars(vocab_file):
  tok = tokenizer_lib.BertTokenizer(vocab_file)
  # NUL and the zero-width space (Cf) are dropped (the word stays whole); tab and no-break space separate words.
  ids = tok.tokenize(tf.constant(["un\x00aff\u200bable\tthe\u00a0the"]))
  assert _ids(ids) == [[UN, AFF, ABLE, THE, THE]]


def test_tokenize_cased_keeps_case_and_accents(vocab_file):
  tok = tokenizer_lib.BertTokenizer(vocab_file, do_lower_case=False)
  ids = tok.tokenize(tf.constant(["Café cafe The the Σ"]))
  assert _ids(ids) == [[CAFE_CASED, CAFE, UNK, THE, len(TINY_VOCAB) - 1]]


def test_pack_truncates_pads_and_masks(vocab_file):
  tok = tokenizer_lib.BertTokenizer(vocab_file, max_seq_length=8)
  inputs = tok(tf.constant(["unaffable, runnING!", "the xyz", ""]), seq_length=6)
  np.testing.assert_array_equal(inputs["input_word_ids"], [[CLS, UN, AFF, ABLE, COMMA, SEP],
                                                           [CLS, THE, UNK, SEP, PAD, PAD],
                                                           [CLS, SEP, PAD, PAD, PAD, PAD]])
  np.testing.assert_array_equal(inputs["input_mask"], [[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0], [1, 1, 0, 0, 0, 0]])
  np.testing.assert_array_equal(inputs["input_type_ids"], np.zeros([3, 6]))
  assert all(t.dtype == tf.int32 and t.shape == (3, 6) for t in inputs.values())


def test_pack_default_length_and_tensor_length_in_graph(vocab_file):
  tok = tokenizer_lib.BertTokenizer(vocab_file, max_seq_length=8)
  ids = tok.tokenize(tf.constant(["unaffable, runnING!", "the"]))
  default = tok.pack(ids)
  assert default["input_word_ids"].shape == (2, 8)
  np.testing.assert_array_equal(default["input_word_ids"][0], [CLS, UN, AFF, ABLE, COMMA, RUNN, ING, SEP])

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string), tf.TensorSpec([], tf.int32)])
  def packed(sentences, seq_length):
    return tok(sentences, seq_length)

  from_tensor = packed(tf.constant(["unaffable, runnING!", "the"]), tf.constant(5))
  from_int = tok.pack(ids, 5)
  for key in from_int:
    np.testing.assert_array_equal(from_tensor[key], from_int[key])
  np.testing.assert_array_equal(from_int["input_word_ids"], [[CLS, UN, AFF, ABLE, SEP], [CLS, THE, SEP, PAD, PAD]])
  with pytest.raises(tf.errors.InvalidArgumentError, match="max_seq_length=8"):
    packed(tf.constant(["the"]), tf.constant(9))


@pytest.mark.parametrize("seq_length", [1, 9])
def test_pack_rejects_static_length_out_of_range(vocab_file, seq_length):
  tok = tokenizer_lib.BertTokenizer(vocab_file, max_seq_length=8)
  with pytest.raises(ValueError, match=f"got {seq_length}"):
    tok.pack(tok.tokenize(tf.constant(["the"])), seq_length)


def test_missing_vocab_file_is_named(tmp_path):
  with pytest.raises(FileNotFoundError, match="nowhere.txt"):
    tokenizer_lib.BertTokenizer(tmp_path / "nowhere.txt")


def test_vocab_without_special_token_is_named(tmp_path):
  path = tmp_path / "nosep.txt"
  path.write_text("\n".join(t for t in TINY_VOCAB if t != "[SEP]") + "\n", encoding="utf-8")
  with pytest.raises(ValueError, match=r"nosep\.txt.*\[SEP\]"):
    tokenizer_lib.BertTokenizer(path)


def test_max_seq_length_below_two(vocab_file):
  with pytest.raises(ValueError, match="max_seq_length must be >= 2"):
    tokenizer_lib.BertTokenizer(vocab_file, max_seq_length=1)


def test_saved_model_works_without_vocab_file(vocab_file, tmp_path):
  import tensorflow_text  # noqa: F401  (registers the ops the reloaded graph needs)

  module = tf.Module()
  module.tokenizer = tokenizer_lib.BertTokenizer(vocab_file, max_seq_length=8)

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
  def encode(sentences):
    return module.tokenizer(sentences)

  module.encode = encode
  sentences = tf.constant(["UNaffable, CAFÉ runnING!", "the xyz"])
  expected = module.encode(sentences)
  export_dir = tmp_path / "export"
  tf.saved_model.save(module, str(export_dir))
  vocab_file.unlink()

  loaded = tf.saved_model.load(str(export_dir))
  got = loaded.encode(sentences)
  for key in expected:
    np.testing.assert_array_equal(got[key], expected[key])
  np.testing.assert_array_equal(loaded.tokenizer.tokenize(sentences).to_list()[1], [THE, UNK])
  shipped = loaded.tokenizer.vocab_file.asset_path.numpy().decode()
  assert shipped.startswith(str(export_dir))
  assert open(shipped, encoding="utf-8").read().split("\n")[:-1] == TINY_VOCAB


def _stsb_sentences(data_dir):
  """Every sentence (columns 5 and 6) of STS-B train/dev/test, read with a plain tab split."""
  sentences = []
  for split in ("train", "dev", "test"):
    with open(data_dir / "stsbenchmark" / f"sts-{split}.csv", encoding="utf-8") as f:
      for line in f:
        fields = line.rstrip("\n").split("\t")
        sentences += [fields[5], fields[6]]
  return sentences


@pytest.fixture(scope="module")
def minilm_reference(minilm_dir):
  """(our tokenizer, HF `tokenizers` reference with truncation and padding off) for all-MiniLM-L6-v2."""
  import tokenizers
  reference = tokenizers.Tokenizer.from_file(str(minilm_dir / "tokenizer.json"))
  reference.no_truncation()
  reference.no_padding()
  return tokenizer_lib.BertTokenizer(minilm_dir / "vocab.txt"), reference


def test_matches_hf_reference_on_all_stsb_sentences(minilm_reference, data_dir):
  tok, reference = minilm_reference
  sentences = _stsb_sentences(data_dir)
  assert len(sentences) == 2 * (5749 + 1500 + 1379)
  expected = [encoding.ids for encoding in reference.encode_batch(sentences)]
  pieces = tok.tokenize(tf.constant(sentences)).to_list()
  got = [[tok.cls_id] + row + [tok.sep_id] for row in pieces]
  mismatches = [s for s, e, g in zip(sentences, expected, got) if e != g]
  print(f"compared {len(sentences)} STS-B sentences, {len(mismatches)} mismatches")
  assert not mismatches, mismatches[:5]
  assert max(len(row) for row in pieces) > 62  # the truncation below is exercised

  packed = tok(tf.constant(sentences))
  truncated = [e[:-1][:63] + [tok.sep_id] for e in expected]
  want = np.zeros([len(sentences), 64], np.int32)
  for i, row in enumerate(truncated):
    want[i, :len(row)] = row
  np.testing.assert_array_equal(packed["input_word_ids"], want)
  np.testing.assert_array_equal(packed["input_mask"], want != 0)


def test_matches_hf_reference_on_unicode_edge_cases(minilm_reference):
  tok, reference = minilm_reference
  sentences = ["ΚΎΡΙΟΣ ΣΑΣ κύριος", "I´m Tuesday´s", "Stallone™s naïve Ångström ﬁ ½", "a\x12b\u200bc\x00d\x85e",
               "tab\tnew\nline\u2028x\u3000y", "漢字かな交じり文", "İstanbul ÉCOLE", "", "a" * 101]
  got = tok.tokenize(tf.constant(sentences)).to_list()
  for sentence, row in zip(sentences, got):
    assert row == reference.encode(sentence).ids[1:-1], repr(sentence)


@pytest.mark.parametrize("n", [0, 4095, 4096, 4097, 8193])
def test_tokenize_list_across_its_4096_sentence_chunks(vocab_file, n):
  """Each sentence keeps its own pieces, in order, on both sides of every chunk boundary."""
  tok = tokenizer_lib.BertTokenizer(vocab_file)
  cycle = [("unaffable", [UN, AFF, ABLE]), ("the", [THE]), ("", []), ("running !", [RUNN, ING, BANG]),
           ("cafe, the", [CAFE, COMMA, THE])]   # 5 does not divide 4096: the boundaries fall mid-cycle
  rows = [cycle[i % len(cycle)] for i in range(n)]
  got = tok.tokenize_list([text for text, _ in rows])
  assert got.shape[0] == n and _ids(got) == [ids for _, ids in rows]


def test_static_lengths():
  assert packing.static_lengths(64) == (16, 32, 48, 64)
  assert packing.static_lengths(40) == (16, 32, 40)
  assert packing.static_lengths(8) == (8,)


def test_pack_to_longest_pads_to_the_longest_row_or_its_static_length(vocab_file):
  tok = tokenizer_lib.BertTokenizer(vocab_file, max_seq_length=20)
  pieces = tok.tokenize(tf.constant(["unaffable", "the"]))
  packed = packing.pack_to_longest(tok, pieces)
  assert tuple(packed) == packing.INPUT_NAMES
  np.testing.assert_array_equal(packed["input_word_ids"], [[CLS, UN, AFF, ABLE, SEP], [CLS, THE, SEP, PAD, PAD]])
  np.testing.assert_array_equal(packed["input_mask"], [[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
  static = packing.pack_to_longest(tok, pieces, static_shapes=True)
  assert static["input_word_ids"].shape == (2, 16)
  np.testing.assert_array_equal(static["input_word_ids"][:, :5], packed["input_word_ids"])
  long = packing.pack_to_longest(tok, tok.tokenize(tf.constant(["the " * 30])), static_shapes=True)
  assert long["input_word_ids"].shape == (1, 20)                         # capped at max_seq_length, its last length
  empty = packing.pack_to_longest(tok, tok.tokenize(tf.constant([], tf.string)))
  assert empty["input_word_ids"].shape == (0, 2)
