"""sentence-transformers' calls on SentenceEncoder (bert_flow_tf/st_api.py), on the tiny random BERT (D = 16)."""
import re
import logging
import sys

import numpy as np
import pytest
import tensorflow as tf

import bert_flow_tf
from bert_flow_tf.modeling import packing
from bert_flow_tf.quantization import st_layouts
from tests import tiny_runs
from tests.embedding.tiny_model import SENTENCES

SentenceEncoder = bert_flow_tf.SentenceEncoder
PROMPTS = {"query": "the dog ", "document": "a man "}


@pytest.fixture(scope="module", name="tiny_dir")
def fixture_tiny_dir(tmp_path_factory):
  return tiny_runs.tiny_model_dir(tmp_path_factory.mktemp("st_api"))


@pytest.fixture(scope="module", name="enc")
def fixture_enc(tiny_dir):
  return SentenceEncoder.from_pretrained(tiny_dir, pooling="last-avg", max_seq_length=16, prompts=PROMPTS)


def test_output_types_and_shapes_as_sentence_transformers(enc):
  want = enc.encode(SENTENCES[:4])
  assert isinstance(want, np.ndarray) and want.shape == (4, 16) and want.dtype == np.float32
  one = enc.encode(SENTENCES[0])
  assert one.shape == (16,)
  np.testing.assert_array_equal(one, want[0])
  tensor = enc.encode(SENTENCES[:4], convert_to_tensor=True, convert_to_numpy=True)  # convert_to_tensor wins
  assert isinstance(tensor, tf.Tensor) and tensor.shape == (4, 16) and tensor.dtype == tf.float32
  np.testing.assert_array_equal(tensor.numpy(), want)
  listed = enc.encode(SENTENCES[:4], convert_to_numpy=False)
  assert isinstance(listed, list) and len(listed) == 4 and all(isinstance(v, tf.Tensor) for v in listed)
  np.testing.assert_array_equal(np.stack([v.numpy() for v in listed]), want)
  np.testing.assert_array_equal(enc.encode(np.array(SENTENCES[:4])), want)  # a numpy string array
  assert enc.encode(SENTENCES[:2], task="query").shape == (2, 16)  # task: accepted, no Router here


def test_precision_truncate_dim_and_normalize_in_sentence_transformers_order(enc):
  x = enc.encode(SENTENCES)
  for precision in st_layouts.PRECISIONS:
    got = enc.encode(SENTENCES, precision=precision)
    np.testing.assert_array_equal(got, st_layouts.quantize_embeddings(x, precision))
  assert enc.encode(SENTENCES, precision="binary").shape == (len(SENTENCES), 2)
  assert enc.encode(SENTENCES[0], precision="ubinary").dtype == np.uint8
  np.testing.assert_array_equal(enc.encode(SENTENCES, truncate_dim=4), x[:, :4])
  unit = enc.encode(SENTENCES, truncate_dim=4, normalize_embeddings=True)  # normalized after the cut
  np.testing.assert_allclose(unit, x[:, :4] / np.linalg.norm(x[:, :4], axis=1, keepdims=True), atol=1e-6)
  with enc.truncate_sentence_embeddings(8):
    assert enc.get_sentence_embedding_dimension() == 8 and enc.encode(SENTENCES[0]).shape == (8,)
  assert enc.truncate_dim is None and enc.get_sentence_embedding_dimension() == 16


def test_truncate_dim_cuts_the_calibrated_vectors(tiny_dir):
  enc = SentenceEncoder.from_pretrained(tiny_dir, pooling="last-avg", max_seq_length=16, truncate_dim=3)
  enc.fit(SENTENCES, method="whitening")
  whitened = enc.calibration.transform(enc.encode_raw(SENTENCES))
  np.testing.assert_allclose(enc.encode(SENTENCES), whitened[:, :3], atol=1e-6)
  assert enc.get_sentence_embedding_dimension() == 3 and enc.dim == 16


def test_prompts_are_put_before_the_sentence(enc, tiny_dir):
  base = enc.encode(["the dog runs", "a man runs", "a man dog"])
  np.testing.assert_array_equal(enc.encode("runs", prompt_name="query"), base[0])
  np.testing.assert_array_equal(enc.encode_query("runs"), base[0])
  np.testing.assert_array_equal(enc.encode_document("runs"), base[1])
  np.testing.assert_array_equal(enc.encode("dog", prompt="a man ", prompt_name="query"), base[2])  # prompt wins
  with pytest.raises(ValueError, match=r"prompt_name 'passage' is not among the prompts \['document', 'query'\]"):
    enc.encode("runs", prompt_name="passage")
  by_default = SentenceEncoder.from_pretrained(tiny_dir, pooling="last-avg", max_seq_length=16, prompts=PROMPTS,
                                               default_prompt_name="document")
  np.testing.assert_allclose(by_default.encode("runs"), base[1], atol=1e-6)  # another batch: float noise
  with pytest.raises(ValueError, match="default_prompt_name 'x' is not among the prompts"):
    SentenceEncoder.from_pretrained(tiny_dir, max_seq_length=16, prompts=PROMPTS, default_prompt_name="x")


def test_token_embeddings_and_all_outputs(enc):
  tokens = enc.encode(["a man", "the dog runs ."], output_value="token_embeddings")
  assert [tuple(t.shape) for t in tokens] == [(4, 16), (6, 16)]  # pieces + [CLS] + [SEP]
  np.testing.assert_allclose(tf.reduce_mean(tokens[1], 0).numpy(), enc.encode("the dog runs ."), atol=1e-5)
  every = enc.encode(["a man"], output_value=None)
  assert sorted(every[0]) == sorted(packing.INPUT_NAMES + ("sentence_embedding", "token_embeddings"))
  assert every[0]["input_word_ids"].numpy().tolist() == [2, 5, 6, 3]


def test_refusals_are_one_line(enc):
  cases = [(dict(precision="int4"), "precision 'int4' is not supported"),
           (dict(output_value="cls"), "output_value 'cls' is not one of"),
           (dict(device="tpu:3"), "device 'tpu:3' is not a device name"),
           (dict(device="cuda:7"), r"device 'cuda:7' \(/GPU:7\) is not on this machine, which has /CPU:0"),
           (dict(device=["cpu", "cpu"]), "multi-process encoding over a list of devices is not supported"),
           (dict(pool={}), "multi-process encoding"),
           (dict(show_progress_bar="yes"), "show_progress_bar must be True, False or None"),
           (dict(batch_sizes=3), r"encode got keyword arguments it does not use: \['batch_sizes'\]"),
           (dict(batch_size=0), "batch_size must be an integer >= 1, got 0"),
           (dict(batch_size=2.5), "batch_size must be an integer >= 1, got 2.5")]
  for kwargs, message in cases:
    with pytest.raises(ValueError, match=message) as refused:
      enc.encode(["a man"], **kwargs)
    assert "\n" not in str(refused.value)
  for inputs, message in ((5, "sentences must be a str or a list of str, got int"),
                          ({"text": "a man"}, "sentences must be a str or a list of str, got dict"),
                          (["a man", None], "sentences must be str; item 1 is NoneType: None")):
    for call in (enc.encode, enc.encode_raw, enc.tokenize):
      with pytest.raises(ValueError, match=message):
        call(inputs)
  assert enc.encode(s for s in ["a man", "a dog"]).shape == (2, 16)  # any iterable of str
  with pytest.raises(ValueError, match="batch_size must be an integer >= 1, got -1"):
    enc.batch_size = -1
  np.testing.assert_array_equal(enc.encode(["a man"], device="cpu"), enc.encode(["a man"], device="/CPU:0"))
  for top_k in (0, -1, 2.5, True):
    with pytest.raises(ValueError, match=f"top_k must be an int >= 1, got {top_k!r}"):
      enc.semantic_search("a man", ["a dog"], top_k=top_k)


def test_a_torch_models_calls_are_refused_in_one_line_saying_what_to_use(enc):
  calls = [(enc.half, (), ValueError, r"^half\(\) casts torch weights to float16; .*encode\(precision='int8'"),
           (enc.bfloat16, (), ValueError, r"^bfloat16\(\) casts torch weights; .*encode\(precision='int8'"),
           (enc.push_to_hub, ("me/model",), ValueError, r"^push_to_hub: nothing is uploaded .*save\(dir\)"),
           (enc.start_multi_process_pool, (), ValueError, "^start_multi_process_pool: multi-process encoding is not "
                                                          r"supported: encode uses every CPU core .*Beam pipeline"),
           (enc.encode_multi_process, (["a man"], None), ValueError, "^encode_multi_process: multi-process"),
           (SentenceEncoder.stop_multi_process_pool, ({},), ValueError, "^stop_multi_process_pool: multi-process"),
           (lambda: enc[0], (), TypeError, r"^model\[0\]: a sentence-transformers model is a list of torch modules"),
           (len, (enc,), TypeError, r"^len\(model\): .*its settings are attributes \(max_seq_length")]
  for call, args, error, message in calls:
    with pytest.raises(error, match=message) as refused:
      call(*args)
    assert "\n" not in str(refused.value)
  assert enc and enc.encode("a man").shape == (16,)  # an encoder is never empty, and still encodes


def test_bytes_are_utf8_text_on_every_door(enc):
  texts = ["a man plays the guitar .", "the dog runs"]
  raw = [t.encode("utf-8") for t in texts]
  want = enc.encode(texts)
  for given in (raw, np.array(raw), np.array(texts), [raw[0], texts[1]], np.array(raw, dtype=object)):
    np.testing.assert_array_equal(enc.encode(given), want)  # the text, not "b'a man ...'"
    np.testing.assert_array_equal(enc.encode_raw(given), enc.encode_raw(texts))
    np.testing.assert_array_equal(enc.similarity(given, texts), enc.similarity(texts, texts))
    assert enc.semantic_search(given, texts, top_k=1) == enc.semantic_search(texts, texts, top_k=1)
    for name, value in enc.tokenize(given).items():
      np.testing.assert_array_equal(value, enc.tokenize(texts)[name])
  np.testing.assert_array_equal(enc.encode(raw[0]), want[0])  # one bytes, one sentence: a [D] vector
  np.testing.assert_array_equal(enc.similarity_pairwise(np.array(raw), texts), [1.0, 1.0])
  for given in ([b"a man", b"the \xe9 dog"], np.array([b"a man", b"the \xe9 dog"])):
    for call in (enc.encode, enc.encode_raw, enc.tokenize, lambda x: enc.similarity(x, texts)):
      with pytest.raises(ValueError, match=r"^sentences must be UTF-8 text; item 1 is not \(invalid continuation "
                                           r"byte at byte 4\): b'the \\xe9 dog'$"):
        call(given)


def test_a_long_sentence_is_read_as_its_cut_and_not_kept(enc):
  long = " ".join(["a man plays the guitar ."] * 400)  # 10,000 characters, 2,400 pieces: the first 14 are read
  cut = enc.embedder.bounded([long])[0].decode()
  assert cut == " ".join(long.split()[:15])  # max_seq_length 16: 14 pieces and the one that says it was cut
  refs = sys.getrefcount(long)
  np.testing.assert_array_equal(enc.encode(long), enc.encode(cut))
  np.testing.assert_array_equal(enc.encode(long, output_value="token_embeddings"),
                                enc.encode(cut, output_value="token_embeddings"))
  assert sys.getrefcount(long) == refs  # nothing holds the sentence: the cut count keeps its hash, the store its key


def test_similarity_functions_accept_sentences_vectors_and_numpy_strings(enc):
  a = np.array([[1.0, 0.0], [3.0, 4.0]], np.float32)
  b = np.array([[0.0, 2.0]], np.float32)
  assert enc.similarity_fn_name == "cosine"
  np.testing.assert_allclose(enc.similarity(a, b), [[0.0], [0.8]], atol=1e-7)
  expected = {"dot": [[0.0], [8.0]], "euclidean": [[-np.sqrt(5)], [-np.sqrt(13)]], "manhattan": [[-3.0], [-5.0]]}
  pairwise = {"dot": [0.0, 8.0], "euclidean": [-np.sqrt(5), -np.sqrt(13)], "manhattan": [-3.0, -5.0]}
  for name, want in expected.items():
    enc.similarity_fn_name = name
    np.testing.assert_allclose(enc.similarity(a, b), want, rtol=1e-6)
    np.testing.assert_allclose(enc.similarity_pairwise(a, np.concatenate([b, b])), pairwise[name], rtol=1e-6)
  enc.similarity_fn_name = None
  assert enc.similarity_fn_name == "cosine"
  with pytest.raises(ValueError, match="similarity_fn_name 'l2' is not supported; use one of cosine, dot"):
    enc.similarity_fn_name = "l2"
  texts = np.array(["a man", "the dog runs ."])
  vectors = enc.encode(list(texts))
  np.testing.assert_allclose(enc.similarity(texts, texts), enc.similarity(vectors, vectors), atol=1e-6)
  np.testing.assert_allclose(enc.similarity_pairwise(texts, texts), [1.0, 1.0], atol=1e-6)
  assert enc.semantic_search(texts, texts, top_k=1)[1][0]["corpus_id"] == 1
  # An empty list is no sentences: no hits, no scores.
  for precision in ("float32", "binary"):
    assert enc.semantic_search(texts, [], precision=precision) == [[], []], precision
  assert enc.similarity(texts, []).shape == (2, 0)
  with enc.truncate_sentence_embeddings(4):  # sentences are scored as `encode` gives them: truncated here
    np.testing.assert_allclose(enc.similarity(texts, texts), enc.similarity(vectors[:, :4], vectors[:, :4]),
                               atol=1e-6)


def test_max_seq_length_is_read_set_and_cuts_are_counted(tiny_dir, caplog):
  enc = SentenceEncoder.from_pretrained(tiny_dir, pooling="last-avg")
  assert enc.max_seq_length == 64  # the model's own: its max_position_embeddings
  long = "the man . " * 8                   # 24 pieces
  full = enc.encode(long)
  enc.max_seq_length = 16
  assert enc.max_seq_length == enc.get_max_seq_length() == 16 and enc.embedder.tokenizer.max_seq_length == 16
  with caplog.at_level(logging.WARNING):
    cut = enc.encode(SENTENCES)[5]
  assert "1 of 23 sentences were cut to 16 tokens" in caplog.text
  assert np.abs(cut - full).max() > 1e-3
  caplog.clear()
  with caplog.at_level(logging.WARNING):  # once per object: the same sentences again say nothing, a new one does
    enc.encode(SENTENCES[3:])
    enc.semantic_search(SENTENCES[0], SENTENCES, top_k=1)
    assert "were cut" not in caplog.text
    enc.encode(["a " * 20, long])
  assert caplog.text.count("were cut") == 1 and "2 of 2 sentences were cut to 16 tokens" in caplog.text
  inputs = enc.tokenize([long, "a man"])
  assert sorted(inputs) == sorted(packing.INPUT_NAMES) and inputs["input_word_ids"].shape == (2, 16)
  assert inputs["input_mask"].numpy()[1].tolist() == [1] * 4 + [0] * 12
  enc.fit(SENTENCES, method="whitening")
  with pytest.raises(ValueError, match="max_seq_length stays 16 while a calibration fitted on those vectors is set"):
    enc.max_seq_length = 32


def test_show_progress_bar_forces_the_line_on_or_off(enc, capfd):
  capfd.readouterr()
  enc.encode(["dog runs now"], show_progress_bar=True)
  err = capfd.readouterr().err
  assert "encoding: 1/1 (100%" in err and "sent/s, in " in err
  enc.encode(["dog runs later"], show_progress_bar=False)
  assert "encoding" not in capfd.readouterr().err


def test_save_records_prompts_truncate_dim_and_similarity(tiny_dir, tmp_path):
  enc = SentenceEncoder.from_pretrained(tiny_dir, pooling="last-avg", max_seq_length=16, prompts=PROMPTS,
                                        default_prompt_name="query", truncate_dim=5, similarity_fn_name="manhattan")
  loaded = SentenceEncoder.load(enc.save(str(tmp_path / "enc")))
  assert (loaded.prompts, loaded.default_prompt_name, loaded.truncate_dim, loaded.similarity_fn_name) == \
      (PROMPTS, "query", 5, "manhattan")
  np.testing.assert_allclose(loaded.encode(["runs"]), enc.encode(["runs"]), atol=1e-6)


def test_a_corrupt_sentence_encoder_json_is_named_in_one_line(enc, tmp_path):
  saved = enc.save(str(tmp_path / "enc"))
  info = tmp_path / "enc" / "sentence_encoder.json"
  for text in ('{"format_version": 1, "model": ', "[1, 2]", "\xff"):
    info.write_bytes(text.encode("latin-1"))
    with pytest.raises(ValueError, match=f"^{re.escape(str(info))}") as refused:
      SentenceEncoder.load(saved)
    assert "\n" not in str(refused.value)


def test_inputs_is_encodes_first_argument_and_sentences_its_earlier_name(enc):
  """sentence-transformers 6 names encode's first argument `inputs` and still takes `sentences=`."""
  texts = ["a man plays a guitar", "a dog runs"]
  want = enc.encode(texts)
  np.testing.assert_array_equal(enc.encode(inputs=texts), want)
  np.testing.assert_array_equal(enc.encode(sentences=texts), want)
  np.testing.assert_array_equal(enc.encode_query(inputs=texts), enc.encode_query(texts))
  with pytest.raises(TypeError, match="inputs twice"):
    enc.encode(texts, sentences=texts)
  with pytest.raises(TypeError, match="needs inputs"):
    enc.encode()
