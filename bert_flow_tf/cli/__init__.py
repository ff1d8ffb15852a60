"""The entry points' shared flag groups: the only library package that defines absl flags.

  engine_flags.py   where the work runs: --tpu, --num_gpus, --num_cpu_replicas, --use_xla, --static_shapes
"""
