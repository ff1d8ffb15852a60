"""What the analysis tests compare against, made without the code under test."""
import struct

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(path):
  """(width, height) from a PNG's IHDR chunk; fails on anything that is not a PNG."""
  data = path.read_bytes()
  assert data[:8] == PNG_SIGNATURE and data[12:16] == b"IHDR", f"{path} is not a PNG"
  return struct.unpack(">II", data[16:24])


def word_levenshtein(x, y):
  """Insertions, deletions and substitutions of words turning x into y (the textbook DP, one row at a time)."""
  row = list(range(len(y) + 1))
  for i, word in enumerate(x, start=1):
    previous, row[0] = row[:], i
    for j, other in enumerate(y, start=1):
      row[j] = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (word != other))
  return row[-1]
