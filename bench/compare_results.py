"""Two run_flow.py output folders compared value by value: results.json and isotropy.json, every number and
string; prints how many values differ and the largest |difference|. `python bench/compare_results.py BEFORE AFTER`.
"""
import json, sys, math
def flat(o, p=""):
  if isinstance(o, dict):
    for k, v in o.items(): yield from flat(v, f"{p}/{k}")
  elif isinstance(o, list):
    for i, v in enumerate(o): yield from flat(v, f"{p}[{i}]")
  else: yield p, o
a_dir, b_dir = sys.argv[1], sys.argv[2]
for f in ["results.json", "isotropy.json"]:
  a, b = dict(flat(json.load(open(f"{a_dir}/{f}")))), dict(flat(json.load(open(f"{b_dir}/{f}"))))
  diff = [k for k in a if a.get(k) != b.get(k)]
  nums = [k for k in a if isinstance(a[k], float)]
  maxd = max((abs(a[k] - b[k]) for k in nums if isinstance(b.get(k), float)), default=0)
  print(f, "values", len(a), "keys equal", set(a) == set(b), "unequal", len(diff), "max |diff|", maxd, diff[:5])
