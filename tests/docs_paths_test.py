"""The docs' commands can be run in the order a reader meets them (README, then docs/*.md by name): no two code
blocks write the same path, so that following one page after another never ends in "already exists" or replaces
an earlier page's result. Read from the pages' code blocks; nothing is run."""
import collections
import pathlib
import re

REPO = pathlib.Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
# What a block writes: save/export/save_pretrained("path"), --output_dir/--export_dir/--output_file=path, > path.
# The server's --export_dir is the export it reads (bert-flow-serve, python -m bert_flow_tf.server).
_WRITES = re.compile(r"""\.(?:save|export|save_pretrained)\(\s*["']([^"']+)["']"""
                     r"""|--(?:output_dir|export_dir|output_file)[= ]([^\s\\]+)"""
                     r"""|>\s*([^\s|&;>]+\.\w+)""")
_SERVES = re.compile(r"bert-flow-serve|bert_flow_tf\.server")


def written_paths(text):
  """The paths the code blocks of a markdown `text` write, in order."""
  commands = [command for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S)
              for command in re.split(r"(?<!\\)\n", block)]  # a command's lines joined by their backslashes
  return [next(g for g in match.groups() if g) for command in commands if not _SERVES.search(command)
          for match in _WRITES.finditer(command)]


def test_the_parser_finds_each_kind_of_write():
  text = ('```python\nenc.save("a/enc")\nenc.export("a/exp", corpus=c)\n```\n'
          '```\ncut -f1 x > a/s.txt\npython run_flow.py --output_dir=a/run --export_dir a/e \\\n'
          '    --output_file=a/o.npy\nbert-flow-serve --export_dir=a/e \\\n    --port=1\n```\n')
  assert written_paths(text) == ["a/enc", "a/exp", "a/s.txt", "a/run", "a/e", "a/o.npy"]


def test_no_two_doc_commands_write_the_same_path():
  writers = collections.defaultdict(list)
  for page in PAGES:
    for path in written_paths(page.read_text(encoding="utf-8")):
      writers[path].append(str(page.relative_to(REPO)))
  assert len(writers) > 10
  assert {path: pages for path, pages in writers.items() if len(pages) > 1} == {}
