"""What one request may hold, and the body read within it.

`read_body` refuses a Content-Length over `max_body_bytes` with 413 before a byte of the body is read, and counts a
body sent without one (chunked) as it streams in, refusing it at the first chunk over the limit: a 10 MB request
never sits in memory whole. A client that closes its connection before the body is complete gets
`protocol.CLIENT_CLOSED` (499: nothing can be sent to it). The other limits are checked where the request is read
(`protocol`).
"""
import dataclasses

from starlette import requests

from bert_flow_tf.server import protocol


@dataclasses.dataclass(frozen=True)
class Limits:
  """What one request may hold (the server's flags of the same names).

  Args:
    max_inputs: int, strings per request (OpenAI's embeddings limit: 2048).
    max_chars: int, characters per string (the model reads at most max_seq_length tokens of it).
    max_body_bytes: int, bytes of the request body.
  """
  max_inputs: int = 2048
  max_chars: int = 32768
  max_body_bytes: int = 4 * 1024 * 1024


def too_large(limit):
  return protocol.ApiError(413, f"the request body is over {limit} bytes (--max_body_bytes)")


async def read_body(request, limit):
  """The body of a Starlette request, at most `limit` bytes, else protocol.ApiError 413 (or 499: the client went
  away; see the module notes)."""
  declared = request.headers.get("content-length")
  if declared is not None and declared.isdigit() and int(declared) > limit:
    raise too_large(limit)
  chunks, seen = [], 0
  try:
    async for chunk in request.stream():
      seen += len(chunk)
      if seen > limit:
        raise too_large(limit)
      chunks.append(chunk)
  except requests.ClientDisconnect:
    raise protocol.ApiError(protocol.CLIENT_CLOSED, f"the client closed the connection after {seen} bytes of its "
                                                    "body") from None
  return b"".join(chunks)
