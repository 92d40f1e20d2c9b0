"""The keyword client's JSON codec.

opensearch-py reads and writes every body with the standard library's json.
Decoding a search answer was 4.7% of the API process's GIL time at 8 clients
(py-spy over bench/search_profile.py); orjson does the same work in a fraction.
Whatever orjson will not take (integers beyond 64 bits, lone surrogates,
non-string keys, NaN literals) goes through the stock serializer, so the wire
is always what the client would have sent and read.
"""

from __future__ import annotations

from typing import Any

import orjson
from opensearchpy.serializer import JSONSerializer


class FastJSONSerializer(JSONSerializer):
    def dumps(self, data: Any) -> Any:
        if isinstance(data, str):  # bulk bodies arrive already encoded
            return data
        try:
            return orjson.dumps(data, default=self.default).decode()
        except TypeError:  # orjson.JSONEncodeError included
            return super().dumps(data)

    def loads(self, s: str) -> Any:
        try:
            return orjson.loads(s)
        except orjson.JSONDecodeError:
            return super().loads(s)
