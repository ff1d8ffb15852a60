"""The commands and their flags: the only library package that defines absl flags; nothing else in the library
imports it.

  run_flow.py       the `bert-flow-run` command (`python run_flow.py` in a clone): flags -> run_experiments
  run_siamese.py    the `bert-flow-siamese` command (`python run_siamese.py`): flags -> siamese.run

  model_flags.py    --model_dir or the original's three TF1 files, and `load_model_from_flags`
  config_flags.py   one flag per field of a config dataclass (its name, default and docstring help)
  engine_flags.py   where the work runs: --tpu, --num_gpus, --num_cpu_replicas, --use_xla, --static_shapes
  one_line_errors.py  `run(main, flags_module)`, app.run that ends expected errors in one line:
                      `error: <what> (<where>)`
"""
