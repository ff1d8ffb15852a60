"""The batching engine (server/batcher.py) from Python, without HTTP: conftest's tiny export loaded as the server
loads it (ServedExport), its requests' rows, and a stop that drops the queue (`abandon`)."""
import threading

import numpy as np
import pytest
import tensorflow as tf

from bert_flow_tf.server import batcher as batcher_lib
from bert_flow_tf.server import metrics as metrics_lib
from bert_flow_tf.server import served_export
from tests.embedding.tiny_model import SENTENCES

pytestmark = pytest.mark.slow  # the export: ~10 s
CLOSE = {"rtol": 1e-6, "atol": 1e-6}  # float32 vectors (the flow's z reaches ~30) of other batch shapes


@pytest.fixture(scope="module", name="served")
def fixture_served(tiny_export):
  return served_export.ServedExport(tiny_export["export_dir"])


def _calls(batcher):
  """int: the model calls the batcher made."""
  return batcher.metrics.registry.get_sample_value("bert_flow_batch_sentences_count")


def _recorder(answers, name):
  """A `done` that files (result, error) under answers[name]."""
  return lambda result, error: answers.setdefault(name, []).append((result, error))


def test_batches_cut_by_tokens_give_the_one_call_rows(tiny_export, served):
  """The batcher's two paths (one call that embeds and counts; counted, sorted and cut by --max_batch_tokens) give
  each request the same rows and token counts, in its own order."""
  requests = [SENTENCES[:3], SENTENCES[3:4], SENTENCES[4:]]

  def answers(**caps):
    batcher = batcher_lib.Batcher(served, metrics_lib.Metrics(), **caps)
    got = []
    for texts in requests:
      batcher.submit(texts, lambda result, error: got.append((result, error)))
    batcher.start()
    batcher.stop(60)
    assert [error for _, error in got] == [None] * len(requests)
    return [result for result, _ in got], batcher

  whole, whole_batcher = answers()
  cut, cut_batcher = answers(max_batch_sentences=3, max_batch_tokens=3 * 6)
  assert _calls(whole_batcher) == 1 and _calls(cut_batcher) > len(SENTENCES) / 3
  want = tiny_export["enc"].encode(SENTENCES)
  rows = lambda vectors: served.request_output(vectors, "float32", None)  # as served: unit length
  for texts, (vectors, tokens), (cut_vectors, cut_tokens) in zip(requests, whole, cut):
    np.testing.assert_allclose(rows(vectors), rows(cut_vectors), **CLOSE)
    np.testing.assert_array_equal(tokens, cut_tokens)
    np.testing.assert_array_equal(tokens, served.token_counts(texts))
  np.testing.assert_allclose(rows(np.concatenate([v for v, _ in whole])), want, **CLOSE)
  # an export written without the with_token_counts signature: tokenized again for the counts
  twice = [t.numpy() for t in served._embed_tokenized_twice(tf.constant(SENTENCES))]  # pylint: disable=protected-access
  np.testing.assert_allclose(rows(twice[0]), want, **CLOSE)
  np.testing.assert_array_equal(twice[1], np.concatenate([tokens for _, tokens in whole]))


def test_abandon_answers_the_queue_at_once_and_the_worker_ends_after_its_batch(served):
  batcher = batcher_lib.Batcher(served, metrics_lib.Metrics())
  running, release, answers = threading.Event(), threading.Event(), {}
  batcher.submit_call(lambda: running.set() or release.wait(30), _recorder(answers, "running"))
  batcher.submit(SENTENCES[:3], _recorder(answers, "queued"))
  batcher.submit_call(lambda: "never", _recorder(answers, "queued call"))
  batcher.start()
  assert running.wait(30)
  assert batcher.abandon() == 2
  for name in ("queued", "queued call"):  # answered on this thread, before abandon returned
    [(result, error)] = answers[name]
    assert result is None and isinstance(error, batcher_lib.Abandoned), name
  assert batcher.metrics.registry.get_sample_value("bert_flow_queue_sentences") == 0
  with pytest.raises(batcher_lib.QueueFull):
    batcher.submit(SENTENCES[:1], _recorder(answers, "late"))
  release.set()
  batcher.stop(30)
  assert answers["running"] == [(True, None)]  # the batch that ran is answered
  assert _calls(batcher) == 0 and "late" not in answers  # the model never ran the dropped sentences


def test_abandon_ends_a_cut_batch_after_the_call_that_runs(tiny_export):
  """A request cut in one model call per sentence: the model call that runs when `abandon` comes is the last one,
  and the request gets Abandoned."""
  first_call, release = threading.Event(), threading.Event()

  class Gated(served_export.ServedExport):
    """The served export, its first model call held until `release`."""

    def embed(self, sentences):
      if not first_call.is_set():
        first_call.set()
        release.wait(30)
      return super().embed(sentences)

  batcher = batcher_lib.Batcher(Gated(tiny_export["export_dir"]), metrics_lib.Metrics(), max_batch_sentences=1)
  answers = {}
  batcher.submit(SENTENCES[:6], _recorder(answers, "cut"))
  batcher.start()
  assert first_call.wait(30)
  assert batcher.abandon() == 0  # nothing queued: the request is the running batch
  release.set()
  batcher.stop(30)
  [(result, error)] = answers["cut"]
  assert result is None and isinstance(error, batcher_lib.Abandoned)
  assert _calls(batcher) == 1  # of six
