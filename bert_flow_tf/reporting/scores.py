"""Score: one number of a results table (a row of results.json), the name of an embedding space, and the warnings
for calibrations that lower a score.

Every `Score.value` is multiplied by 100, as the paper reports them (Spearman rho x 100, AUC x 100).
"""
import dataclasses

from bert_flow_tf.calibration import baselines
from bert_flow_tf.data import tasks

METRICS = ("spearman", "auc")
AGGREGATIONS = (None, "all", "mean", "wmean")
FIT_ON = ("target", "nli")  # where a calibration is fitted: the task's own sentences or NLI sentences
UNCALIBRATED = "none"       # the method of the raw vectors
FLOW = "flow"


def space_name(method, fit_on):
  """The name of an embedding space (a table row, an isotropy.json key): "none", "flow (target)", "sn (target)"."""
  return method if fit_on is None else f"{method} ({fit_on})"


def _known_method(method):
  if method in (UNCALIBRATED, FLOW):
    return True
  try:
    baselines.check_name(method)
  except ValueError:
    return False
  return True


@dataclasses.dataclass(frozen=True)
class Score:
  """One number of a results table.

  Attributes:
    dataset: one of bert_flow_tf.data.RESULT_DATASETS (a benchmark, or "custom": the user's --eval_file).
    method: "none" (raw vectors), "flow", or a baseline name (bert_flow_tf.calibration.baselines.FORMS).
    fit_on: "target", "nli", or None (no calibration fitted, method "none").
    metric: "spearman" (STS, SICK-R) or "auc" (QNLI).
    aggregation: "all", "mean", "wmean" over STS12-16 subsets, or None for single-set datasets.
    value: float, the score x 100.
  """
  dataset: str
  method: str
  fit_on: object
  metric: str
  aggregation: object
  value: float

  def __post_init__(self):
    checks = (("dataset", self.dataset in tasks.RESULT_DATASETS, tasks.RESULT_DATASETS),
              ("fit_on", self.fit_on is None or self.fit_on in FIT_ON, (None,) + FIT_ON),
              ("metric", self.metric in METRICS, METRICS),
              ("aggregation", self.aggregation in AGGREGATIONS, AGGREGATIONS),
              ("method", _known_method(self.method), f'"{UNCALIBRATED}", "{FLOW}", {baselines.FORMS}'))
    for field, ok, allowed in checks:
      if not ok:
        raise ValueError(f"Score.{field}={getattr(self, field)!r}; allowed: {allowed}")


def calibration_warnings(scores):
  """One line per calibrated score below the uncalibrated ("none") score of the same dataset and aggregation.

  Args:
    scores: list of Score.

  Returns:
    list of str, e.g. "custom: flow (target) 80.96 < none 82.03 (spearman): this calibration lowers the score".
  """
  none = {(s.dataset, s.aggregation): s.value for s in scores if s.method == UNCALIBRATED}
  lines = []
  for s in scores:
    base = none.get((s.dataset, s.aggregation))
    if s.method != UNCALIBRATED and base is not None and s.value < base:
      where = s.dataset if s.aggregation is None else f"{s.dataset} {s.aggregation}"
      lines.append(f"{where}: {space_name(s.method, s.fit_on)} {s.value:.2f} < none {base:.2f} ({s.metric}): "
                   "this calibration lowers the score; the uncalibrated vectors do better here")
  return lines
