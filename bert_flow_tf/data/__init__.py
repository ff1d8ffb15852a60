"""Evaluation and training data: sentence-pair readers and the task registry."""
from bert_flow_tf.data.pairs import PairSet
from bert_flow_tf.data.pairs import Task
from bert_flow_tf.data.tasks import DATASETS
from bert_flow_tf.data.tasks import EVAL_TASKS
from bert_flow_tf.data.tasks import load_task
from bert_flow_tf.data.tasks import TASK_NAMES
from bert_flow_tf.data.tasks import TASKS
