"""BERT in Keras and what turns its outputs into sentence vectors.

  config.py        BertConfig: google / HF config JSON -> hyperparameters
  layers.py        embeddings, self-attention, transformer block (Keras layers)
  bert_encoder.py  BertEncoder: input_word_ids/input_mask/input_type_ids -> sequence/pooled/encoder_outputs
  pooling.py       named poolings (last-avg, first-last-avg, ...; the original's names as aliases)
  tokenizer.py     tensorflow-text WordPiece + packing: strings -> the three int32 inputs
  presets.py       models shipped in installed packages (all-minilm-l6-v2)
"""
