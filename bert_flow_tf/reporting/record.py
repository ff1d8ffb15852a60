"""ExperimentRecord: everything one run_flow.py experiment reports, as plain values (experiment.py fills it)."""
import dataclasses


@dataclasses.dataclass
class ExperimentRecord:
  """The outcome of one experiment (one pooling), ready to render and write.

  Attributes:
    model: str, the model's source (directory or preset name).
    pooling: str, the pooling name as given; pooling_description: str, the pooling in words.
    flow_mode: str, "cached" or "faithful".
    target_sentences: str, what target fits read: "train+dev+test" or "train".
    has_custom: bool, the user's own data was evaluated (as the dataset "custom").
    scores: list of reporting.scores.Score, in evaluation order.
    isotropy: dict dataset -> {space name -> evaluation.isotropy.isotropy dict}.
    warnings: list of str, the calibrations that lower a score on the user's data.
    edit_distance_rhos: dict similarity name -> Spearman x 100 with the word edit distance on STS-B dev (Table 6);
      empty when not asked.
    analysis_markdown: str, the analysis section of results.md (analysis/report.py); empty when not asked.
    timings: dict stage -> wall seconds.
    spaces: dict dataset -> (sentences: list of 2N str, {space name: float32 [2N, D]}), the evaluated vectors the
      analysis draws (isotropy plots, projector); empty without the analysis.
    lexical_pairs: data.PairSet, the STS-B dev pairs of Table 6, or None; lexical_similarities: dict similarity
      name -> float [N] on them ("gold", "none", each calibrated space; Figure 2); empty when not asked.
  """
  model: str
  pooling: str
  pooling_description: str
  flow_mode: str
  target_sentences: str
  has_custom: bool
  scores: list
  isotropy: dict
  warnings: list
  edit_distance_rhos: dict
  analysis_markdown: str
  timings: dict
  spaces: dict = dataclasses.field(default_factory=dict)
  lexical_pairs: object = None
  lexical_similarities: dict = dataclasses.field(default_factory=dict)
