"""LoadedModel: an encoder ready to call, with what tokenizing for it needs."""
import dataclasses


@dataclasses.dataclass
class LoadedModel:
  """An encoder ready to call, with what tokenizing for it needs.

  Attributes:
    encoder: a Keras layer mapping the dict of int32 [B, S] inputs (`input_word_ids`, `input_mask`,
      `input_type_ids`) to a dict with `encoder_outputs` (list of L [B, S, H]), `sequence_output`,
      `pooled_output` and, for our BertEncoder, `embedding_output`.
    num_layers: int. L.
    hidden_size: int. H.
    vocab_file: str. WordPiece vocabulary.
    do_lower_case: bool.
    source: str. The directory (or preset name) it came from; part of cache keys.
    format: str. "tf1", "hf" or "tfhub".
    config: BertConfig or None (None for TF-Hub encoders, whose config is not stored).
    files: str. The directory or checkpoint prefix the weights were read from (a preset resolved once, here);
      what the embedding store fingerprints. Default: `source`.
  """
  encoder: object
  num_layers: int
  hidden_size: int
  vocab_file: str
  do_lower_case: bool
  source: str
  format: str
  config: object = None
  files: str = None

  def __post_init__(self):
    if self.files is None:
      self.files = self.source
