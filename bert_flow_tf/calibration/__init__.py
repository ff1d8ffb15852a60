"""Calibrations of sentence vectors: the BERT-flow fit and the unsupervised baselines.

  fit_flow.py    fit a Glow on sentence pairs (schedules, checkpoints, resume, provenance)
  baselines.py   whitening(-k), SN, NATSV, SN+NATSV
  calibrator.py  either of them fitted, applied, saved and loaded behind one interface (what SentenceEncoder holds)
"""
