"""The paper's analysis and pictures of embedding spaces (`run_flow.py --analysis`; any LoadedModel too).

  word_frequency.py   Table 1: word-embedding norms and k-NN distances per word-frequency-rank bucket (wordfreq)
  plots.py            Figure 2 (similarity vs word edit distance) and isotropy plots, PNG via matplotlib's Agg
  projector.py        TensorBoard Embedding Projector files: sentences as metadata, one tensor per space
  report.py           all of it for one evaluated experiment (its vectors and Table 6 similarities), and its
                      results.md sections

Import the submodules themselves: this package imports none of them, so matplotlib and wordfreq load only
when asked for.
"""
# The modules users import by name (the others serve them); importing the package loads none of them.
__all__ = ["plots", "projector", "report", "word_frequency"]
