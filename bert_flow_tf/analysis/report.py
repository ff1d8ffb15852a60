"""An experiment's analysis (`run_flow.py --analysis`): Table 1, Figure 2, isotropy plots, projector files.

Writes into the experiment's output directory:
  table1.json                 the paper's Table 1 for the model's word-embedding matrix (word_frequency.py)
  figure2_stsb_dev.png        similarity vs word edit distance on STS-B dev, one panel per similarity
  isotropy_<dataset>.png      spectrum and random-pair cosines of every evaluated space (plots.py)
  tb/                         TensorBoard projector: a sample of evaluated sentences in every space (projector.py)
and returns the Markdown that results.md shows for them.
"""
import json
import os
import re

from bert_flow_tf.analysis import plots
from bert_flow_tf.analysis import projector
from bert_flow_tf.analysis import word_frequency
from bert_flow_tf.utils import io_utils

FIGURE2_FILE = "figure2_stsb_dev.png"
TABLE1_FILE = "table1.json"
PROJECTOR_DIR = "tb"
PROJECTOR_SENTENCES = 1000


def isotropy_file(dataset):
  """"STS-B" -> "isotropy_sts-b.png"."""
  return "isotropy_" + re.sub(r"[^a-z0-9.+-]+", "_", dataset.lower()) + ".png"


def write_table1(model, out_dir):
  """Table 1 for `model` into out_dir/table1.json. Returns the table (word_frequency.table1's dict)."""
  table = word_frequency.table1(model)
  payload = {"model": model.source, "frequencies": word_frequency.FREQUENCY_SOURCE, **table,
             "paper": {k: list(v) for k, v in word_frequency.PAPER_TABLE1.items()}}
  io_utils.write_text(os.path.join(out_dir, TABLE1_FILE), json.dumps(payload, indent=2) + "\n")
  return table


def write_analysis(out_dir, model, pooling_name, spaces, lexical_pairs=None, lexical_similarities=None):
  """Writes the analysis files of one evaluated experiment into out_dir.

  Args:
    out_dir: str, the experiment's output folder.
    model: bert_flow_tf.loaders.LoadedModel (Table 1 reads its word-embedding matrix).
    pooling_name: str, for the figure titles.
    spaces: dict dataset -> (sentences: list of N str, {space name: float32 [N, D]}), the evaluated vectors.
    lexical_pairs: the STS-B dev PairSet of Table 6, or None; lexical_similarities: dict similarity name -> [N']
      on those pairs (Figure 2).

  Returns:
    str, Markdown for results.md: Figure 2 (next to the Table 6 numbers), the isotropy plots, Table 1 beside the
    paper's, and where the projector files are.
  """
  lines = []
  if lexical_similarities:
    plots.similarity_vs_edit_distance(lexical_pairs, lexical_similarities, os.path.join(out_dir, FIGURE2_FILE),
                                      title=f"STS-B dev, {pooling_name}")
    lines += [f"![Figure 2: similarity vs word edit distance, STS-B dev]({FIGURE2_FILE})", "",
              "Figure 2 (paper): x = similarity, y = word edit distance; pairs with edit distance <= "
              f"{plots.NEAR_EDIT_DISTANCE} in green. Each panel's rho is the Table 6 number above.", ""]
  lines += ["## Isotropy plots", "",
            "Per evaluated set, every space overlaid: the share of each singular direction in the sum of squared "
            "singular values of the uncentered vectors (log scale; the dashed line is an isotropic space), and "
            "the histogram of cosines between random pairs of distinct sentences (the pairs of the table's mean "
            "cosine).", ""]
  for dataset, (_, vectors) in spaces.items():
    name = isotropy_file(dataset)
    plots.isotropy_figure(vectors, os.path.join(out_dir, name), title=f"{dataset}, {pooling_name}")
    lines += [f"![isotropy of {dataset}]({name})", ""]
  table = write_table1(model, out_dir)
  lines += ["## Word frequency biases the word embeddings (paper Table 1)", "",
            f"The model's word-embedding matrix; ours / the paper's (BERT-base). Words are whole-word vocabulary "
            f"entries ranked by frequency ({word_frequency.FREQUENCY_SOURCE}); k-NN among all rows, by l2 "
            f"distance (bert_flow_tf/analysis/word_frequency.py). Numbers in {TABLE1_FILE}.", "",
            word_frequency.table1_markdown(table)]
  if spaces:
    dataset, (sentences, vectors) = next(iter(spaces.items()))
    sample, sampled = projector.sample_distinct(sentences, vectors, PROJECTOR_SENTENCES)
    description = (f"{len(sample)} distinct sentences of the {dataset} evaluation set (seeded sample), in the "
                   f"spaces: {', '.join(vectors)}.")
    projector.write_projector(os.path.join(out_dir, PROJECTOR_DIR), sample, sampled, description)
    lines += ["## TensorBoard projector", "",
              f"{description} `tensorboard --logdir {out_dir}` shows them (Projector tab) with the flow's loss "
              "(Scalars tab).", ""]
  return "\n".join(lines)
