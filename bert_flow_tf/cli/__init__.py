"""The commands and their flags: the only library package that defines absl flags; nothing else in the library
imports it. One name per concept across the entry points, the original's names as aliases (docs/flags.md).

  run_flow.py       the `bert-flow-run` command (`python run_flow.py` in a clone): flags -> run_experiments
  run_siamese.py    the `bert-flow-siamese` command (`python run_siamese.py`): flags -> siamese.run
  encode.py         the `bert-flow-encode` command (`python -m bert_flow_tf.encode`): a file of sentences -> .npy
  beam.py           the `bert-flow-beam` command (`python -m bert_flow_tf.beam`): sentence files -> the embedding
                    store on Apache Beam (the beam extra)
  serve.py          the `bert-flow-serve` command (`python -m bert_flow_tf.server`): an export over HTTP (the server
                    extra; bert_flow_tf/server)
  run_flow_flags.py, siamese_flags.py, encode_flags.py, beam_flags.py, serve_flags.py   each entry point's flags:
                    `define_flags(flag_values)`, GROUPS (its --helpfull), KEY_FLAGS (its --help) and ALIASES
  model_flags.py    --model_dir or the original's three TF1 files, `load_model_from_flags`; --max_seq_length,
                    --pooling, --encode_batch_sentences with the library's defaults (embedding/settings.py)
  config_flags.py   the one way settings become flags: one per field of a config dataclass (its name, default,
                    docstring help and range check), each checked while parsed (`check_flag`)
  outputs.py        output folders probed before any work
  engine_flags.py   where the work runs: --tpu, --num_gpus, --num_cpu_replicas, --use_xla, --static_shapes
  aliases.py        a second name that sets a flag (errors name the one typed)
  flag_help.py      the grouped --help text
  one_line_errors.py  `run(main, help_groups)`, app.run that ends expected errors in one line:
                    `error: <what> (<where>)`, and answers --help with exit status 0
"""
# The commands: each module's `run()` is a console script (pyproject.toml).
__all__ = ["beam", "encode", "run_flow", "run_siamese", "serve"]
