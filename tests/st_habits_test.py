"""sentence-transformers' habits with a model object (bert_flow_tf/st_habits.py; tokenizer and save_pretrained in
sentence_encoder.py, get_embedding_dimension in st_api.py): constructor words taken or refused in one line,
device/to/eval, tokenizer, get_embedding_dimension, save_pretrained, a saved folder."""
import numpy as np
import pytest

from bert_flow_tf import SentenceEncoder
from bert_flow_tf import st_habits
from bert_flow_tf.modeling.tokenizer import BertTokenizer
from tests import tiny_runs
from tests.embedding.tiny_model import SENTENCES


@pytest.fixture(scope="module", name="tiny_dir")
def fixture_tiny_dir(tmp_path_factory):
  return tiny_runs.tiny_model_dir(tmp_path_factory.mktemp("st_habits"))


def test_device_to_eval_tokenizer_and_dimension(tiny_dir):
  enc = SentenceEncoder(tiny_dir, device="cpu", trust_remote_code=False, max_seq_length=16)
  assert (enc.device, enc.default_device) == ("cpu", "cpu")
  assert enc.to("/CPU:0") is enc and enc.device == "/CPU:0" and enc.eval() is enc
  assert isinstance(enc.tokenizer, BertTokenizer) and enc.tokenizer is enc.embedder.tokenizer
  assert enc.get_embedding_dimension() == enc.get_sentence_embedding_dimension() == 16
  with pytest.raises(ValueError, match=r"device 'gpu:7' \(/GPU:7\) is not on this machine"):
    enc.to("gpu:7")
  assert SentenceEncoder(tiny_dir, max_seq_length=16).device in ("cpu", "gpu:0")


@pytest.mark.parametrize("word", sorted(st_habits.REFUSED))
def test_words_without_a_meaning_here_are_refused_in_one_line(tiny_dir, word):
  with pytest.raises(ValueError) as e:
    SentenceEncoder(tiny_dir, **{word: None})
  message = str(e.value)
  assert message.startswith(f"{word}= is sentence-transformers'") and "\n" not in message
  assert message.split(": ", 1)[1] == st_habits.REFUSED[word]


def test_model_name_or_path_is_the_first_argument(tiny_dir):
  by_name = SentenceEncoder(model_name_or_path=tiny_dir, max_seq_length=16)
  assert by_name.describe() == SentenceEncoder(tiny_dir, max_seq_length=16).describe()
  assert SentenceEncoder.from_pretrained(model_name_or_path=tiny_dir, max_seq_length=16).fingerprint == \
      by_name.fingerprint
  with pytest.raises(TypeError, match=r"^got the model twice: 'other' and model_name_or_path=.*: give one$"):
    SentenceEncoder("other", model_name_or_path=tiny_dir)


def test_sentence_transformers_training_call_is_refused_in_one_line(tiny_dir):
  enc = SentenceEncoder(tiny_dir, max_seq_length=16)
  for args, kwargs in (((), {"train_objectives": [("loader", "loss")], "epochs": 1, "warmup_steps": 100}),
                       (([("loader", "loss")],), {"epochs": 1})):
    with pytest.raises(ValueError, match=r"^fit\(train_objectives=...\) is sentence-transformers' training of the "
                                         r"model: .*run_siamese.py fine-tunes the BERT") as refused:
      enc.fit(*args, **kwargs)
    assert "\n" not in str(refused.value)
  with pytest.raises(TypeError, match=r"^fit\(\) got unexpected keyword arguments: epochs, methd$"):
    enc.fit(SENTENCES, methd="whitening", epochs=1)
  with pytest.raises(TypeError, match=r"^fit\(\) missing its sentences"):
    enc.fit()
  assert enc.calibration is None


def test_the_tokenizer_takes_a_string_as_a_batch_of_one(tiny_dir):
  enc = SentenceEncoder(tiny_dir, max_seq_length=16)
  one = enc.tokenizer("the dog runs .")
  assert sorted(one) == ["input_mask", "input_type_ids", "input_word_ids"] and one["input_word_ids"].shape == (1, 16)
  listed = enc.tokenizer(["the dog runs .", "a man"])
  for name, ids in one.items():
    np.testing.assert_array_equal(ids.numpy()[0], listed[name].numpy()[0])
  assert one["input_mask"].numpy().sum() == enc.tokenize("the dog runs .")["input_mask"].numpy().sum() == 6


def test_trust_remote_code_true_is_refused(tiny_dir):
  with pytest.raises(ValueError, match=r"^trust_remote_code=True: this package runs no code"):
    SentenceEncoder.from_pretrained(tiny_dir, trust_remote_code=True)


def test_save_pretrained_writes_a_folder_that_load_and_the_constructor_read(tiny_dir, tmp_path):
  enc = SentenceEncoder(tiny_dir, max_seq_length=16, truncate_dim=8, similarity_fn_name="dot", prompts={"q": "a "})
  enc.fit(SENTENCES, method="whitening")
  enc.save_pretrained(str(tmp_path / "saved"))
  x = np.random.default_rng(0).normal(size=[3, 16]).astype(np.float32)
  for loaded in (SentenceEncoder.load(str(tmp_path / "saved")), SentenceEncoder(tmp_path / "saved")):
    assert (loaded.truncate_dim, loaded.get_embedding_dimension(), loaded.max_seq_length) == (8, 8, 16)
    assert (loaded.similarity_fn_name, loaded.prompts, loaded.calibration.method) == ("dot", {"q": "a "}, "whitening")
    assert loaded.fingerprint == enc.fingerprint  # the same model, pooling and max_seq_length
    np.testing.assert_array_equal(loaded.calibration.transform(x), enc.calibration.transform(x))
  np.testing.assert_array_equal(loaded.encode(SENTENCES[:3], precision="int8"),  # the constructor's, end to end
                                enc.encode(SENTENCES[:3], precision="int8"))
  # As sentence-transformers' constructor: a keyword given wins over the folder's setting.
  wider = SentenceEncoder(str(tmp_path / "saved"), truncate_dim=12, similarity_fn_name="cosine")
  assert (wider.get_embedding_dimension(), wider.similarity_fn_name) == (12, "cosine")
  with pytest.raises(ValueError, match="was saved from .*pooling last-avg.* not from this encoder's .*pooling cls"):
    SentenceEncoder(str(tmp_path / "saved"), pooling="cls")
