"""Markdown: paper-style tables of scores, and the results.md page of one experiment (values x 100, 2 decimals)."""
from bert_flow_tf.data import tasks
from bert_flow_tf.reporting import scores as scores_lib


def markdown_table(header, rows):
  """One markdown table (no trailing newline) from a header and rows, each a list of cell strings."""
  lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
  lines += ["| " + " | ".join(r) + " |" for r in rows]
  return "\n".join(lines)


def scores_tables(scores):
  """Paper-style markdown tables of `scores` (a list of Score).

  The first table has one row per (method, fit_on), in order of first appearance, and one column per
  dataset present (in bert_flow_tf.data.RESULT_DATASETS order): STS12-16 show the "all" aggregation, the others their
  single value (aggregation None or "all"). A second table, when any exist, gives STS12-16 "mean" / "wmean".
  Missing cells are "-".
  """
  rows = list(dict.fromkeys((s.method, s.fit_on) for s in scores))
  main = {(s.method, s.fit_on, s.dataset): s.value for s in scores if s.aggregation in (None, "all")}
  datasets = [d for d in tasks.RESULT_DATASETS
              if any(s.dataset == d and s.aggregation in (None, "all") for s in scores)]
  cell = lambda v: "-" if v is None else f"{v:.2f}"
  name = scores_lib.space_name
  out = [markdown_table(["method"] + datasets,
                        [[name(m, f)] + [cell(main.get((m, f, d))) for d in datasets] for m, f in rows])]
  agg = {(s.method, s.fit_on, s.dataset, s.aggregation): s.value for s in scores
         if s.aggregation in ("mean", "wmean")}
  columns = [(d, a) for d in tasks.DATASETS for a in ("mean", "wmean")
             if any(k[2] == d and k[3] == a for k in agg)]
  if columns:
    out.append(markdown_table(["method"] + [f"{d} {a}" for d, a in columns],
                              [[name(m, f)] + [cell(agg.get((m, f, d, a))) for d, a in columns] for m, f in rows]))
  return "\n\n".join(out) + "\n"


def poolings_table(results):
  """One table across poolings, as the README's Results: a row per (pooling, method, fit_on) in order of first
  appearance, a column per benchmark (DATASETS order; STS12-16 their "all" aggregation) and "custom" when present.

  Args:
    results: list of (pooling name, list of Score).

  Returns:
    str, a markdown table ending in a newline.
  """
  main = {(p, s.method, s.fit_on, s.dataset): s.value for p, scores in results for s in scores
          if s.aggregation in (None, "all")}
  rows = list(dict.fromkeys(k[:3] for k in main))
  datasets = [d for d in tasks.RESULT_DATASETS if d in tasks.DATASETS or any(k[3] == d for k in main)]
  cell = lambda v: "-" if v is None else f"{v:.2f}"
  return markdown_table(["pooling", "method"] + datasets,
                        [[p, scores_lib.space_name(m, f)] + [cell(main.get((p, m, f, d))) for d in datasets]
                         for p, m, f in rows]) + "\n"


def results_page(record):
  """results.md of one experiment: its scores, warnings, isotropy, Table 6, analysis and stage times.

  Args:
    record: reporting.record.ExperimentRecord.

  Returns:
    str, ending in a newline.
  """
  r = record
  lines = [f"# {r.model}, {r.pooling_description}", "",
           f"Spearman x100 (STS, SICK-R, custom; STS12-16 'all' = subsets concatenated), ROC-AUC x100 (QNLI). "
           f"Flow mode: {r.flow_mode}; target sentences: {r.target_sentences}"
           f"{'; custom: the training file (else the scored pairs)' if r.has_custom else ''}.", "",
           scores_tables(r.scores) if r.scores else "(no scored pairs: nothing evaluated)", ""]
  if r.warnings:
    lines += ["## Warnings", ""] + [f"- {w}" for w in r.warnings] + [""]
  lines += ["## Isotropy of the evaluated vectors (and of the fit sentences, before fitting)", "",
            "| dataset | space | mean cos (random pairs) | top-1 PC variance share | condition number |",
            "|---|---|---|---|---|"]
  for dataset, spaces in r.isotropy.items():
    for space, d in spaces.items():
      lines.append(f"| {dataset} | {space} | {d['mean_cosine']:.3f} | {d['top1_variance']:.3f} | "
                   f"{d['condition_number']:.3g} |")
  if r.edit_distance_rhos:
    lines += ["", "## Similarity vs word edit distance (STS-B dev, Spearman x100; paper Table 6)", "",
              "| similarity | rho |", "|---|---|"] + [f"| {k} | {v:.2f} |" for k, v in r.edit_distance_rhos.items()]
  if r.analysis_markdown:
    lines += ["", r.analysis_markdown]
  lines += ["", "## Wall time per stage (s)", "", "| stage | seconds |", "|---|---|"]
  lines += [f"| {k} | {v:.1f} |" for k, v in r.timings.items()]
  return "\n".join(lines) + "\n"
