"""The public surface: every package of bert_flow_tf and glow says what users import (`__all__`), and each name
there is a module of the package or a name its __init__.py binds. Read from the sources (no import: beam, serving
and analysis load heavy optional dependencies)."""
import ast
import importlib
import pathlib
import warnings

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = sorted(p.parent for root in ("bert_flow_tf", "glow") for p in (REPO / root).rglob("__init__.py"))


def _bound_names(tree):
  """The names a module binds at its top level: imports, assignments, functions and classes."""
  names = set()
  for node in tree.body:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
      names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
      names.add(node.name)
    elif isinstance(node, ast.Assign):
      names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
  return names


def _declared_all(tree):
  for node in tree.body:
    if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
      return node.value
  return None


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_package_lists_what_users_import(package):
  tree = ast.parse((package / "__init__.py").read_text())
  declared = _declared_all(tree)
  assert declared is not None, f"{package.relative_to(REPO)}/__init__.py has no __all__"
  bound = _bound_names(tree)
  if isinstance(declared, ast.Call):  # bert_flow_tf's: sorted(_PUBLIC), names its __getattr__ imports on first use
    public = {ast.literal_eval(k) for node in tree.body if isinstance(node, ast.Assign)
              and node.targets[0].id == "_PUBLIC" for k in node.value.keys}
    bound |= public  # resolved by test_the_lazy_top_level_names_resolve
  else:
    public = set(ast.literal_eval(declared))
  assert public, f"{package.relative_to(REPO)}: __all__ is empty"
  for name in public:
    assert not name.startswith("_"), name
    is_module = (package / f"{name}.py").is_file() or (package / name / "__init__.py").is_file()
    assert is_module or name in bound, f"{package.relative_to(REPO)}.__all__ names {name!r}, which it lacks"


@pytest.mark.parametrize("package", ["bert_flow_tf", "bert_flow_tf.loaders", "bert_flow_tf.siamese", "glow"])
def test_the_lazy_top_level_names_resolve(package):
  package = importlib.import_module(package)
  for name in package.__all__:
    value = getattr(package, name)
    assert getattr(value, "__name__", name).rpartition(".")[2] == name, (package, name)


def test_library_modules_warn_past_300_lines_and_fail_past_400():
  """docs/layout.md's rule: a module past 300 lines may hold more than one idea (a warning, to split it by idea);
  past 400 it does (a failure)."""
  lines = {str(p.relative_to(REPO)): len(p.read_text(encoding="utf-8").splitlines())
           for root in ("bert_flow_tf", "glow") for p in (REPO / root).rglob("*.py")}
  long = {path: n for path, n in lines.items() if n > 300}
  if long:
    warnings.warn(f"modules past 300 lines (split by idea if they hold more than one): {long}")
  assert not {path: n for path, n in long.items() if n > 400}, long
