"""TF Serving warm-up records: `<SavedModel>/assets.extra/tf_serving_warmup_requests`.

The model server replays these Predict requests when it loads a version, before it takes traffic, so the first
real request does not pay for graph optimization and lazy initialization. The file is a TFRecord of serialized
`tensorflow.serving.PredictionLog` protos (tensorflow-serving-api), each holding one `PredictRequest`: a
signature name and its input tensors.

The text model gets a one-sentence and a several-sentence request on `serving_default` and a `similarity`
request; the search model the same two query batches with k = 3; the ids model gets the same sentences,
tokenized, on its `serving_default`. The sentences cover an empty line, accents and one longer than any
max_seq_length up to 128.
"""
import os

import numpy as np
import tensorflow as tf
from tensorflow_serving.apis import model_pb2
from tensorflow_serving.apis import predict_pb2
from tensorflow_serving.apis import prediction_log_pb2

from bert_flow_tf.modeling import packing

WARMUP_PATH = os.path.join("assets.extra", "tf_serving_warmup_requests")
WARMUP_SENTENCES = ("A man is playing a guitar.", "", "Café owners in Zürich protest the new tax.",
                    "The stock market fell sharply on Monday after the report. " * 12)


def predict_log(signature_name, inputs):
  """A PredictionLog with one PredictRequest: `inputs` (dict name -> array-like) on `signature_name`."""
  request = predict_pb2.PredictRequest(model_spec=model_pb2.ModelSpec(signature_name=signature_name))
  for name, value in inputs.items():
    request.inputs[name].CopyFrom(tf.make_tensor_proto(value))
  return prediction_log_pb2.PredictionLog(predict_log=prediction_log_pb2.PredictLog(request=request))


def text_model_logs(sentences=WARMUP_SENTENCES):
  """Requests for the text model: serving_default on 1 and on all sentences, similarity on rotated pairs."""
  sentences = [s.encode("utf-8") for s in sentences]
  rotated = sentences[1:] + sentences[:1]
  return [predict_log("serving_default", {"sentences": sentences[:1]}),
          predict_log("serving_default", {"sentences": sentences}),
          predict_log("similarity", {"sentences_a": sentences, "sentences_b": rotated})]


def search_model_logs(sentences=WARMUP_SENTENCES):
  """Requests for the search model: serving_default on 1 and on all sentences, k = 3."""
  sentences = [s.encode("utf-8") for s in sentences]
  return [predict_log("serving_default", {"queries": batch, "k": np.int32(3)}) for batch in (sentences[:1], sentences)]


def ids_model_logs(tokenizer, sentences=WARMUP_SENTENCES):
  """Requests for the ids model: serving_default on the first and on all sentences, packed by `tokenizer`
  (bert_flow_tf.modeling.tokenizer.BertTokenizer) to the longest, capped at its max_seq_length."""
  logs = []
  for batch in (sentences[:1], sentences):
    packed = packing.pack_to_longest(tokenizer, tokenizer.tokenize(tf.constant(batch, tf.string)))
    logs.append(predict_log("serving_default", {k: v.numpy() for k, v in packed.items()}))
  return logs


def write(saved_model_dir, logs):
  """Writes `logs` (PredictionLog list) to `saved_model_dir/assets.extra/tf_serving_warmup_requests`."""
  path = os.path.join(saved_model_dir, WARMUP_PATH)
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with tf.io.TFRecordWriter(path) as writer:
    for log in logs:
      writer.write(log.SerializeToString())


def read(saved_model_dir):
  """The PredictionLogs of a SavedModel's warm-up file, in file order."""
  logs = []
  for record in tf.data.TFRecordDataset(os.path.join(saved_model_dir, WARMUP_PATH)).as_numpy_iterator():
    log = prediction_log_pb2.PredictionLog()
    log.ParseFromString(record)
    logs.append(log)
  return logs


def request_inputs(log):
  """(signature name, dict input name -> np.ndarray) of a PredictionLog's PredictRequest."""
  request = log.predict_log.request
  return request.model_spec.signature_name, {k: np.asarray(tf.make_ndarray(v)) for k, v in request.inputs.items()}
