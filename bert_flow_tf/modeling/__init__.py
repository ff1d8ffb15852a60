"""BERT in Keras and what turns its outputs into sentence vectors.

  config.py        BertConfig: google / HF config JSON -> hyperparameters
  layers.py        embeddings, self-attention, transformer block (Keras layers)
  bert_encoder.py  BertEncoder: input_word_ids/input_mask/input_type_ids -> sequence/pooled/encoder_outputs
  pooling.py       named poolings (last-avg, first-last-avg, ...; the original's names as aliases), no TensorFlow
  pooling_ops.py   the poolings in-graph: an encoder's outputs -> sentence vectors
  tokenizer.py     tensorflow-text WordPiece: strings -> word pieces -> the three int32 inputs
  packing.py       the input names; a batch of word pieces packed to its longest sentence (or a static length)
"""
# The modules users import by name (the others serve them); importing the package loads none of them.
__all__ = ["bert_encoder", "config", "pooling", "tokenizer"]
