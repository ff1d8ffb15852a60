"""Evaluation and training data: sentence-pair readers, the task registry and a user's own files (custom)."""
from bert_flow_tf.data import custom
from bert_flow_tf.data.pairs import PairSet
from bert_flow_tf.data.pairs import Task
from bert_flow_tf.data.tasks import DATASETS
from bert_flow_tf.data.tasks import EVAL_TASKS
from bert_flow_tf.data.tasks import load_task
from bert_flow_tf.data.tasks import RESULT_DATASETS
from bert_flow_tf.data.tasks import TASK_NAMES
from bert_flow_tf.data.tasks import TASKS

# The readers (sts, nli, qnli), records (pairs), order and tasks modules serve these.
__all__ = ["DATASETS", "EVAL_TASKS", "PairSet", "RESULT_DATASETS", "TASKS", "TASK_NAMES", "Task", "custom", "load_task"]
