"""The rotation a binary search applies before its sign bits: ITQ, fitted on the corpus's own codes.

Iterative quantization (Gong and Lazebnik, "Iterative Quantization", CVPR 2011): for vectors V [n, D'], an
orthogonal R [D', D'] that lowers the sign quantization loss ||sign(V R) - V R||^2, by alternating the bits
B = sign(V R) and the orthogonal Procrustes step R = U W^T (U S W^T the SVD of V^T B), from a random rotation.
A rotation changes no cosine: the int8 codes and the rescoring stay the vectors' own; only which vectors the
Hamming scan puts first changes (docs/quantization.md, "Rotated sign bits", measures by how much).

`corpus_codes.CorpusCodes.finish` fits R on a uniform sample of SAMPLE_ROWS of the corpus's int8 codes read back
and centred (ITQ is defined on centred vectors; the centre is the int8 ranges' middle), so a corpus streamed a block
at a time gets its rotation from its codes alone, as `ivf_index` gets its centroids.

Legend: n = vectors, M = corpus vectors, D' = width.
"""
import numpy as np

ITERATIONS = 50      # bits / Procrustes rounds (the loss changes by under 0.1% a round by then: bench/itq_bits.py)
SAMPLE_ROWS = 16384  # vectors the rotation is fitted on: 8 MB of float32 at D' = 128


def fit(vectors, iterations=ITERATIONS, seed=0):
  """ITQ's rotation of float [n, D'] vectors: orthogonal float32 [D', D'] (see the module notes)."""
  v = np.asarray(vectors, np.float32)
  rotation, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=[v.shape[1]] * 2))
  rotation = rotation.astype(np.float32)
  for _ in range(iterations):
    u, _, wt = np.linalg.svd((v.T @ np.sign(v @ rotation)).astype(np.float64))
    rotation = (u @ wt).astype(np.float32)
  return rotation


def loss(vectors, rotation):
  """The sign quantization loss per dimension, mean((sign(V R) - V R)^2), of float [n, D'] vectors."""
  projected = np.asarray(vectors, np.float64) @ rotation
  return float(np.mean((np.sign(projected) - projected) ** 2))
