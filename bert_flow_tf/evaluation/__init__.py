"""Evaluation of sentence vectors: scores, STS aggregation, isotropy diagnostics and the lexical analysis.

  metrics.py    Spearman, Pearson and ROC-AUC, x 100 as the paper reports them
  sts.py        Spearman over the subsets of one STS dataset, aggregated ("all", "mean", "wmean")
  isotropy.py   how anisotropic a set of vectors is (random-pair cosine, spectrum), and the one-line report of it
  lexical.py    word edit distance and its correlation with a similarity (the paper's Table 6)

The cosine itself is bert_flow_tf/search.py's; the result schema and the files written from it are
bert_flow_tf/reporting/.
"""
# The modules users import by name (the others serve them); importing the package loads none of them.
__all__ = ["isotropy", "lexical", "metrics", "sts"]
