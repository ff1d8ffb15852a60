"""A fitted flow's folder: its flow.json (what was fitted, how, on what) and the checkpoint of its Glow.

  write_info   flow.json: dim, the Glow config, the fit settings, progress and provenance
  read_info    flow.json back, with one-line errors for a missing or broken file
  mismatch     flow.json compared with the settings a caller would fit or use it with
  check        read_info, then mismatch as an error
  load_glow    the Glow of a finished fit
  save         a fitted Glow written as `flow_fitting.fit_flow` leaves it
  reuse        the one rule for a folder met again: a finished fit with the same settings is loaded, an unfinished
               one is left for the fit to resume, other settings are an error

`flow_fitting.fit_flow` writes the folder (and its checkpoints) as it fits.
"""
import dataclasses
import json
import os
import tempfile

import tensorflow as tf

import glow
from bert_flow_tf.utils import errors
from bert_flow_tf.utils import io_utils

INFO_FILE = "flow.json"
_VALUE = "/.ATTRIBUTES/VARIABLE_VALUE"


def write_info(flow_dir, dim, fit_config, extra):
  """Writes flow.json: dim, the Glow config of `fit_config.flow_model_config`, `fit_config` (a FlowFitConfig, under
  "fit") and `extra`."""
  info = {"dim": dim, "flow_config": glow.GlowConfig.load(fit_config.flow_model_config).to_dict(),
          "fit": dataclasses.asdict(fit_config), **extra}
  io_utils.write_text(os.path.join(flow_dir, INFO_FILE), json.dumps(info, indent=2, sort_keys=True) + "\n")


def read_info(flow_dir):
  """The flow.json that `fit_flow` wrote: dim, flow config, fit config, progress and `provenance`.

  Raises:
    FileNotFoundError / errors.UserError naming the file: missing, not UTF-8 JSON, not an object, or without a
    valid "dim", "flow_config" or "fit".
  """
  info_path = os.path.join(flow_dir, INFO_FILE)
  info = io_utils.read_json_object(info_path, f"no fitted flow: {INFO_FILE} is missing")
  dim = info.get("dim")
  if isinstance(dim, bool) or not isinstance(dim, int) or dim < 2:
    raise errors.UserError(f'"dim" must be an int >= 2, got {str(dim)[:40]!r}', info_path)
  for key in ("flow_config", "fit"):
    if not isinstance(info.get(key), dict):
      raise errors.UserError(f'"{key}" must be a JSON object (the flow\'s Glow config and fit settings), got '
                             f"{str(info.get(key))[:40]!r}", info_path)
  return info


def check(flow_dir, dim=None, fit_config=None, provenance=None):
  """Reads the flow.json in `flow_dir` and checks that the flow was fitted as these arguments say (see `mismatch`).

  Returns:
    dict, the flow.json (see `read_info`).

  Raises:
    FileNotFoundError / errors.UserError: flow.json is missing or broken (see `read_info`), or the flow was fitted
      with other settings (naming every one that differs, with the value asked for and the flow's).
  """
  info = read_info(flow_dir)
  wrong = mismatch(info, dim=dim, fit_config=fit_config, provenance=provenance)
  if wrong:
    raise errors.UserError(wrong, flow_dir)
  return info


def mismatch(info, dim=None, fit_config=None, provenance=None):
  """What differs between a flow's flow.json and the settings a caller would fit or use it with, or None.

  Only what is given is compared: `dim` with the flow's width, `fit_config` with its fit settings, and each key of
  `provenance` that the flow.json records (a flow written without provenance skips that part).

  Args:
    info: dict, the flow's flow.json (`read_info`).
    dim: int or None, the width of the vectors that will go through the flow.
    fit_config: FlowFitConfig or None, the settings the caller would fit with.
    provenance: dict or None, what the vectors are (as `fit_flow` takes it).

  Returns:
    None, or str: one line naming every setting that differs, with the value asked for and the flow's.
  """
  fitted = info.get("provenance") or {}
  asked = {k: (v, fitted[k]) for k, v in (provenance or {}).items() if k in fitted}
  if dim is not None:
    asked["dim"] = (dim, info["dim"])
  if fit_config is not None:
    ours, theirs = dataclasses.asdict(fit_config), info["fit"]
    asked.update({f"fit.{k}": (ours.get(k), theirs.get(k)) for k in sorted(ours.keys() | theirs.keys())})
  wrong = {k: v for k, v in asked.items() if v[0] != v[1]}
  if not wrong:
    return None
  names = sorted({k.split(".")[0] for k in wrong})
  return f"the flow was fitted with other settings ({', '.join(names)} differ): " + "; ".join(
      f"{k}={want} (the flow was fitted with {got})" for k, (want, got) in wrong.items())


def load_glow(flow_dir, info=None):
  """Restores a flow written by `fit_flow` (its flow.json and latest checkpoint), strictly. Returns a Glow.

  Args:
    flow_dir: str, the flow's folder.
    info: dict, its flow.json when the caller has read it (`read_info`), or None to read it here.

  Raises:
    errors.UserError naming the file: an unfinished fit, a flow.json whose Glow cannot be built, or a checkpoint
    that does not hold exactly this Glow's variables with their shapes (`restore_strictly`).
  """
  info = read_info(flow_dir) if info is None else info
  info_path = os.path.join(flow_dir, INFO_FILE)
  if not info.get("complete"):
    raise errors.UserError(f"the flow did not finish fitting ({info.get('steps_done')} of {info.get('num_steps')} "
                           "steps); rerun the fit to resume it", flow_dir)
  try:
    glow_model = glow.Glow(glow.GlowConfig.from_dict(info["flow_config"]), info["dim"], init=info["fit"]["init"],
                           seed=info["fit"]["seed"])
  except (TypeError, ValueError, KeyError, tf.errors.OpError) as e:
    raise errors.UserError(f"cannot build the flow it describes ({type(e).__name__}: {errors.brief(e)})",
                           info_path) from e
  try:
    latest = tf.train.latest_checkpoint(flow_dir)
  except (tf.errors.OpError, ValueError) as e:  # a damaged `checkpoint` state file
    raise errors.UserError(f"cannot read the checkpoint state ({errors.brief(e)})",
                           os.path.join(flow_dir, "checkpoint")) from e
  if latest is None:
    raise errors.missing_file("no flow checkpoint", flow_dir)
  restore_strictly(glow_model, latest)
  return glow_model


def restore_strictly(glow_model, prefix):
  """Restores `glow_model` from the checkpoint `prefix` (written with `tf.train.Checkpoint(flow=...)`, optimizer state
  allowed beside it): every variable of the flow must be there with its shape, and the checkpoint's `flow/` must
  hold nothing else.

  Raises:
    errors.UserError naming the first variable that differs (missing, of another shape, or left over) and the
    checkpoint, or a checkpoint that cannot be read.
  """
  try:
    saved = _flow_variables(prefix)
  except (tf.errors.OpError, ValueError, IndexError) as e:  # a truncated file: IndexError "Read less bytes"
    raise errors.UserError(f"cannot read the flow checkpoint, corrupt? ({errors.brief(e)})", prefix) from e
  with tempfile.TemporaryDirectory(prefix="bert-flow-layout-") as tmp:  # this flow's names and shapes
    expected = _flow_variables(tf.train.Checkpoint(flow=glow_model).write(os.path.join(tmp, "flow")))
  for name in sorted(expected.keys() | saved.keys()):
    if expected.get(name) != saved.get(name):
      what = ("missing from the checkpoint" if name not in saved else "in the checkpoint but not in this flow"
              if name not in expected else f"of shape {saved[name]} in the checkpoint, {expected[name]} in the "
              "flow flow.json describes")
      raise errors.UserError(f"the checkpoint does not hold the flow flow.json describes: variable {name} is "
                             f"{what}", prefix)
  try:
    tf.train.Checkpoint(flow=glow_model).restore(prefix).expect_partial()  # the optimizer's state is not restored
  except (tf.errors.OpError, ValueError, IndexError) as e:
    raise errors.UserError(f"cannot restore the flow, corrupt? ({errors.brief(e)})", prefix) from e


def _flow_variables(prefix):
  """{name under flow/: shape list} of the checkpoint `prefix`, optimizer slots left out."""
  return {name[len("flow/"):].removesuffix(_VALUE): shape for name, shape in tf.train.list_variables(prefix)
          if name.startswith("flow/") and ".OPTIMIZER_SLOT" not in name}


def save(glow_model, flow_dir, fit_config, summary):
  """Writes a fitted flow as `fit_flow` leaves it, for `load_glow`: flow.json and a checkpoint of the flow alone (no
  optimizer slots).

  Args:
    glow_model: the fitted Glow (checkpointed under the key flow, as the original's).
    flow_dir: str, a new or empty directory.
    fit_config: FlowFitConfig, how it was fitted.
    summary: dict, what `fit_flow` returned with it (complete must be True).
  """
  os.makedirs(flow_dir, exist_ok=True)
  tf.train.Checkpoint(flow=glow_model).save(os.path.join(flow_dir, "flow"))
  extra = {k: v for k, v in summary.items() if k not in ("dim", "flow_config", "fit")}
  write_info(flow_dir, glow_model.dim, fit_config, extra)


def reuse(flow_dir, fit_config, provenance):
  """(Glow, flow.json dict) of the flow already fitted in `flow_dir` with these settings, or None: no flow.json
  there, or a fit that did not finish (`fit_flow` resumes it from its checkpoint).

  Raises:
    errors.UserError: the flow.json there records other settings (see `check`), or its checkpoint is unreadable.
  """
  if not os.path.isfile(os.path.join(flow_dir, INFO_FILE)):
    return None
  info = check(flow_dir, fit_config=fit_config, provenance=provenance)
  return (load_glow(flow_dir, info), info) if info.get("complete") else None
