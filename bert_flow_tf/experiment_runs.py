"""run_flow.py's experiments run together: `run_experiments` runs ExperimentSpecs that differ only in pooling over
one embedding store and one tokenizer, and writes each one's report files (reporting/files.py) and, with
`spec.analysis`, analysis/report.py's.
"""
import dataclasses

from bert_flow_tf.experiment import Experiment
from bert_flow_tf.modeling import pooling as pooling_lib
from bert_flow_tf.reporting import files
from bert_flow_tf.reporting.record import ExperimentRecord


@dataclasses.dataclass
class ExperimentRun:
  """One finished experiment: `experiment` (its flows, embedder, store), `record` (what it reports) and
  `results_md` (the text written to results.md)."""
  experiment: Experiment
  record: ExperimentRecord
  results_md: str


def _with_analysis(experiment, record):
  """Writes the analysis files of `record` (analysis/report.py, imported only here: matplotlib). Returns the record
  with their markdown and the analysis stage's seconds."""
  from bert_flow_tf.analysis import report  # pylint: disable=g-import-not-at-top
  with experiment.timer.stage("analysis"):
    markdown = report.write_analysis(experiment.spec.output_dir, experiment.spec.model,
                                     experiment.embedder.pooling_spec.name, record.spaces, record.lexical_pairs,
                                     record.lexical_similarities)
  return dataclasses.replace(record, analysis_markdown=markdown, timings=dict(experiment.timer.seconds))


def run_experiments(specs):
  """Runs experiments that differ only in pooling (and output_dir) over one embedding store and one tokenizer.

  Every sentence any of them needs is encoded first, in one BERT pass computing the union of the poolings'
  quantities (`pooling.quantities`); each experiment then reads its vectors from the store. When an experiment
  finishes, its analysis files (with `spec.analysis`) and report files (reporting/files.py) are written into its
  output_dir.

  Args:
    specs: non-empty list of ExperimentSpec on the same model, max_seq_length and cache_dir.

  Returns:
    list of ExperimentRun, in the order of `specs`.
  """
  first = Experiment(specs[0])
  experiments = [first] + [Experiment(s, first.embedder.tokenizer, first.store) for s in specs[1:]]
  names = sorted({q for e in experiments for q in pooling_lib.quantities(e.embedder.pooling_spec)})
  with first.timer.stage("embed"):
    pairsets = list({id(p): p for e in experiments for p in e.pairsets()}.values())  # own data shared: once
    first.store.ensure([s for p in pairsets for s in (*p.sentences_a, *p.sentences_b)], names,
                       first.spec.show_progress_bar)
  runs = []
  for e in experiments:
    record = e.run()
    if e.spec.analysis:
      record = _with_analysis(e, record)
    runs.append(ExperimentRun(e, record, files.write_report(e.spec.output_dir, record)))
  return runs
