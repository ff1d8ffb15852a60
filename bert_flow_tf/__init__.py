"""bert-flow-tf: BERT sentence embeddings and the BERT-flow calibration in TF2."""
