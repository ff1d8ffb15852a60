"""Op audit of an export: lists every op of each SavedModel and fails on ops the TF Serving model server cannot run.

Prints, per SavedModel under EXPORT_DIR (`<kind>/<version>/`, as bert_flow_tf.serving.export writes), its op types by
source (core TensorFlow, tensorflow-text, Python, unregistered), what keeps it from being served, and the oldest
TF Serving release that has all its tensorflow-text ops. The `ids` model must use core ops only.
Exit status: 0 when every SavedModel is servable, 1 when one is not, 2 on bad arguments.

Usage: python scripts/check_servable.py EXPORT_DIR
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bert_flow_tf.serving import op_audit  # pylint: disable=wrong-import-position


def main(argv):
  if len(argv) != 2:
    print(__doc__.strip().splitlines()[-1], file=sys.stderr)
    return 2
  try:
    audits = op_audit.audit_export(argv[1])
  except FileNotFoundError as e:
    print(f"error: {e} (EXPORT_DIR)", file=sys.stderr)
    return 2
  for name, audit in audits.items():
    print("\n".join(op_audit.report_lines(name, audit)))
  servable = all(audit.servable() for audit in audits.values())
  print("servable: yes" if servable else "servable: NO")
  return 0 if servable else 1


if __name__ == "__main__":
  sys.exit(main(sys.argv))
