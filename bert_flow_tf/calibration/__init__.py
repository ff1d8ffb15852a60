"""Calibrations of sentence vectors: the BERT-flow fit and the unsupervised baselines.

  fit_config.py    FlowFitConfig: the flow fit's settings (the paper's target and NLI ones), without TensorFlow
  flow_fitting.py  fit a Glow on sentence pairs: the loop (schedules, checkpoints, resume, traced-step reuse)
  pair_sources.py  where the pairs come from: the PairSource interface, cached vectors, BERT with dropout
  store_stream.py  pairs (and whitening) read from the embedding store shard by shard
  fitted_flow.py   a fitted flow's folder: flow.json, check, load_glow, save, reuse
  baselines.py     whitening(-k), SN, NATSV, SN+NATSV
  calibrator.py    either of them fitted, applied, saved and loaded behind one interface (what SentenceEncoder holds)
"""
# The modules users import by name (the others serve them); importing the package loads none of them.
__all__ = ["baselines", "calibrator", "fitted_flow", "flow_fitting", "pair_sources", "store_stream"]
