"""glow.transform: fitted flows of one kind run on one kept trace, each with its own variables."""
import numpy as np
import tensorflow as tf

import glow
from glow import inference


def test_flows_of_one_kind_share_one_trace_and_keep_their_own_outputs():
  config = glow.GlowConfig.load("config_l2_d2_w32")
  flows = [glow.Glow(config, 16, seed=seed) for seed in (1, 2)]
  other = glow.Glow(config, 32, seed=3)  # another width: another kind
  x = np.random.default_rng(0).normal(size=[40, 16]).astype(np.float32)
  own = [tf.function(lambda v, f=f: f(v, training=False)[0])(tf.constant(x)).numpy() for f in flows]
  assert not np.array_equal(own[0], own[1])
  for flow, want in [*zip(flows, own), (flows[0], own[0])]:  # back to the first: its variables again
    np.testing.assert_array_equal(glow.transform(flow, x), want)
  glow.transform(other, np.zeros([3, 32], np.float32))
  twin = inference._twin(flows[0])  # pylint: disable=protected-access
  assert twin is inference._twin(flows[1]) and twin is not inference._twin(other)  # pylint: disable=protected-access
  assert twin.fn.experimental_get_tracing_count() == 1
