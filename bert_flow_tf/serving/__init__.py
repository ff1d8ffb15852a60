"""The servable SavedModels, and what TF Serving needs from them, checked without the server (the binary search
SavedModel is bert_flow_tf/quantization's binary_search_model, with the rest of quantized search).

  export          writes the text and ids SavedModels (sentences or token ids -> calibrated vectors)
  export_folder   an export written whole (staged, export_info.json last with every file's SHA-256), checked on load
  search_model    the search SavedModel: a corpus, exact cosine top-k in the graph
  litert          LiteRT (.tflite) files, fp32 and int8 weights, with the metadata MediaPipe's TextEmbedder reads
  text_bound      the text model's bound on each string before tokenizing
  op_audit        every op of a SavedModel, where it is registered, the oldest TF Serving release that has them
  warmup          the `assets.extra/tf_serving_warmup_requests` records (tensorflow-serving-api protos)
  session_loader  loads a SavedModel as the model server does (TF1 session, `serve` tag, signature tensor names);
                  imports only TensorFlow, so it also runs in another TF version's venv
"""
# The modules users import by name (the others serve them); importing the package loads none of them.
__all__ = ["export", "litert", "op_audit", "search_model", "session_loader", "warmup"]
