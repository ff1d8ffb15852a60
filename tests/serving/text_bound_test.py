"""serving.text_bound: the text SavedModel cuts each string before tokenizing, with the same first word pieces, and
a request's tokenizer memory no longer grows with its strings' length."""
import os
import random
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

from bert_flow_tf.data import sts
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from bert_flow_tf.modeling import tokenizer as tokenizer_lib
from bert_flow_tf import exported_encoder
from bert_flow_tf.serving import export
from bert_flow_tf.serving import op_audit
from bert_flow_tf.serving import text_bound
from tests.embedding.engine_vectors import engine_vectors
from tests.embedding.tiny_model import tiny_model

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Pieces that stress the bound: whitespace and control runs (no piece), words just under, at and over the 100-byte
# [UNK] limit, accents (stripped when lower-casing), CJK, symbols inside words, punctuation, unassigned code points.
HARD = [" ", "   ", "\t", "\n", "\u3000", "\u200b", "\x00", "\x7f", "a", "the", "guitar", "##", ",", ".", "!",
        "©", "\u0301", "é", "É", "中", "文", "$", "`", "\u1fef", "İ", "Σ", "ß", "-", "x" * 99, "y" * 100, "z" * 101,
        "w" * 150, "é" * 51, "ü" * 60, "\U0001F600", "\u0378", "ǅ", "ﬁ", "\uff01", "１"]


def _pieces(tokenizer, sentences):
  return tokenizer.tokenize(tf.constant(sentences)).to_list()


@pytest.fixture(scope="module", name="vocab")
def fixture_vocab(minilm_dir):
  return str(minilm_dir / "vocab.txt")


@pytest.mark.parametrize("do_lower_case", [True, False])
@pytest.mark.parametrize("max_seq_length", [3, 16, 64])
def test_random_hard_strings_keep_their_first_pieces(vocab, do_lower_case, max_seq_length):
  tokenizer = tokenizer_lib.BertTokenizer(vocab, do_lower_case=do_lower_case, max_seq_length=max_seq_length)
  rng = random.Random(max_seq_length + do_lower_case)
  sentences = ["".join(rng.choice(HARD) * rng.choice([1, 1, 1, 2, 50])
                       for _ in range(rng.randrange(1, 30 * max_seq_length))) for _ in range(100)]
  p = max_seq_length - 2
  full = _pieces(tokenizer, sentences)
  for cut in (text_bound.bound_text(tf.constant(sentences), max_seq_length, do_lower_case),  # the SavedModel's
              text_bound.bound_list(sentences, max_seq_length, do_lower_case)):               # SentenceEncoder's
    cut = _pieces(tokenizer, cut)
    assert [f[:p] for f in full] == [c[:p] for c in cut]
    assert [len(f) > p for f in full] == [len(c) > p for c in cut]  # a sentence cut to p pieces still shows it
    assert sum(len(c) < len(f) for c, f in zip(cut, full)) > 33  # the cut did cut, in a third of them at least


def test_a_list_is_cut_by_chunks_to_its_first_words(monkeypatch):
  sentences = [" ".join(["A man plays the guitar."] * 400), "", "the dog", "x" * 300 + " y"] * 3
  want = [" ".join(("a man plays the guitar .".split() * 400)[:11]), "", "the dog", "x" * 101 + " y"]
  assert text_bound.bound_list(sentences, 12, True) == [w.encode() for w in want] * 3  # 11 words: 10 pieces + 1
  monkeypatch.setattr(text_bound, "_CHUNK_CHARS", 50)  # each sentence alone, or two short ones together
  assert text_bound.bound_list(sentences, 12, True) == [w.encode() for w in want] * 3
  assert text_bound.bound_list([], 12, True) == []


def test_sts_b_sentences_give_the_same_pieces(vocab, data_dir):
  tokenizer = tokenizer_lib.BertTokenizer(vocab, max_seq_length=64)
  _, dev, test = sts.load_stsb(str(data_dir))
  sentences = list(dev.sentences_a + dev.sentences_b + test.sentences_a + test.sentences_b)
  cut = tokenizer.tokenize(text_bound.bound_text(tf.constant(sentences), 64, True)).to_list()
  assert cut == _pieces(tokenizer, sentences)  # normal sentences: every piece, not only the first 62


@pytest.mark.slow
def test_the_text_saved_model_gives_the_same_vectors_and_a_long_string_its_prefix_vector(tmp_path):
  embedder = SentenceEmbedder(tiny_model(tmp_path / "model"), "last-avg", 16)
  paths = export.export_models(embedder, None, str(tmp_path / "export"))
  audit = op_audit.audit_saved_model(paths["text"])
  assert audit.servable(), audit.problems  # the cut's ops are TF Serving's core ops
  model = exported_encoder.load_text_model(paths["text"])
  sentences = ["a man plays the guitar .", "the dog runs !", "a a a a a a a a a a a a a a a a a a a a a"]
  np.testing.assert_allclose(exported_encoder.encode_with_saved_model(model, sentences), engine_vectors(embedder, sentences),
                             atol=1e-5)
  long = "a man plays the guitar . " * 40000  # 1 MB
  vectors = exported_encoder.encode_with_saved_model(model, [long, long[:4000]])
  np.testing.assert_array_equal(vectors[0], vectors[1])


_MEASURE = textwrap.dedent("""
    import re, sys
    import tensorflow as tf
    from bert_flow_tf.modeling import tokenizer as tokenizer_lib
    from bert_flow_tf.serving import text_bound
    def peak_mb():  # this process's peak RSS (VmHWM; getrusage's ru_maxrss keeps the parent's across exec)
      return int(re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read()).group(1)) // 1024
    tokenizer = tokenizer_lib.BertTokenizer(sys.argv[1], max_seq_length=64)
    bounded = sys.argv[2] == "bounded"
    def pieces(batch):
      return tokenizer.tokenize(text_bound.bound_text(batch, 64, True) if bounded else batch)
    pieces(tf.constant(["warm up", "the graphs"]))
    batch = tf.constant(["a man plays the guitar , the crowd cheers ! " * 24000] * 8)  # 8 strings of 1 MB
    before = peak_mb()
    pieces(batch)
    print(peak_mb() - before)
""")



@pytest.mark.slow
def test_eight_strings_of_one_megabyte_cost_the_tokenizer_little_memory(vocab):
  def growth_mb(mode):
    out = subprocess.run([sys.executable, "-c", _MEASURE, vocab, mode], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="3"), check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    return int(out.stdout.split()[-1])
  unbounded, bounded = growth_mb("whole"), growth_mb("bounded")
  assert unbounded > 120 and bounded < 60, (unbounded, bounded)  # 8 MB in: ~180 MB tokenized whole, ~30 MB cut
