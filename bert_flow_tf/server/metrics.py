"""The server's Prometheus metrics (prometheus-client), in a registry of their own, shown by GET /metrics.

  bert_flow_requests_total{endpoint, status}       requests answered, by endpoint and HTTP status
  bert_flow_request_seconds{endpoint}              histogram: time from a request's arrival to its answer
  bert_flow_inputs_total{endpoint}                 strings received in answered 200 requests
  bert_flow_batch_sentences                        histogram: sentences per model run
  bert_flow_batch_seconds                          histogram: seconds per model run
  bert_flow_queue_sentences                        gauge: sentences waiting for the model
  bert_flow_ready                                  gauge: 1 once the warm-up answered, 0 before and while stopping
"""
import prometheus_client

_LATENCY_BUCKETS = (.001, .002, .005, .01, .02, .05, .1, .2, .5, 1., 2., 5., 10.)
_BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


class Metrics:
  """The metrics above, registered in `registry`."""

  def __init__(self):
    self.registry = prometheus_client.CollectorRegistry()
    r = self.registry
    self.requests = prometheus_client.Counter("bert_flow_requests", "requests answered", ["endpoint", "status"],
                                              registry=r)
    self.latency = prometheus_client.Histogram("bert_flow_request_seconds", "arrival to answer", ["endpoint"],
                                               buckets=_LATENCY_BUCKETS, registry=r)
    self.inputs = prometheus_client.Counter("bert_flow_inputs", "strings in answered requests", ["endpoint"],
                                            registry=r)
    self.batch_sentences = prometheus_client.Histogram("bert_flow_batch_sentences", "sentences per model run",
                                                       buckets=_BATCH_BUCKETS, registry=r)
    self.batch_seconds = prometheus_client.Histogram("bert_flow_batch_seconds", "seconds per model run",
                                                     buckets=_LATENCY_BUCKETS, registry=r)
    self.queue = prometheus_client.Gauge("bert_flow_queue_sentences", "sentences waiting for the model", registry=r)
    self.ready = prometheus_client.Gauge("bert_flow_ready", "1 once the warm-up answered", registry=r)

  def exposition(self):
    """(bytes, content type) of the text format."""
    return prometheus_client.generate_latest(self.registry), prometheus_client.CONTENT_TYPE_LATEST
