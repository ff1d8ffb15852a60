"""A Glow normalizing flow over `[batch, dim]` vectors, as BERT-flow uses it."""
