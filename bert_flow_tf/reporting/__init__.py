"""What a run_flow.py experiment reports, from plain results (no Experiment object).

  scores.py     Score, one number of a results table (the schema of results.json), space names, warnings
  record.py     ExperimentRecord, everything one experiment reports
  markdown.py   the markdown tables and the results.md page
  files.py      the files of an output folder: results.json, isotropy.json, timings.json, results.md
"""
# The modules users import by name (the others serve them); importing the package loads none of them.
__all__ = ["files", "markdown", "record", "scores"]
