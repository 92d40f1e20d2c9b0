"""The keyword client's JSON: the fast codec must send and read exactly what
the client's own serializer would (the bodies carry dates, tuples, decimals)."""

from __future__ import annotations

import datetime as dt
import json
import math
import uuid
from decimal import Decimal
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from opensearchpy.serializer import JSONSerializer

from resources.opensearch.wire import FastJSONSerializer

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(),
    st.dates(),
    st.datetimes(timezones=st.one_of(st.none(), st.just(dt.UTC))),
    st.uuids(),
    st.decimals(allow_nan=False, allow_infinity=False, places=4),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(st.text(max_size=8), inner, max_size=4),
    ),
    max_leaves=20,
)
# a body is an object or an array: a string at the top goes as written (below)
bodies = st.one_of(
    st.dictionaries(st.text(max_size=8), values, max_size=4), st.lists(values, max_size=4)
)


@given(bodies)
def test_a_body_is_sent_as_the_stock_serializer_sends_it(body: Any) -> None:
    assert json.loads(FastJSONSerializer().dumps(body)) == json.loads(JSONSerializer().dumps(body))


@given(bodies)
def test_an_answer_reads_back_as_the_stock_serializer_reads_it(body: Any) -> None:
    text = JSONSerializer().dumps(body)
    assert FastJSONSerializer().loads(text) == JSONSerializer().loads(text)


def test_a_string_body_goes_as_it_is() -> None:
    """ndjson bulk bodies arrive already encoded."""
    assert FastJSONSerializer().dumps('{"index":{}}\n') == '{"index":{}}\n'


def test_what_only_the_stock_serializer_takes_is_still_sent() -> None:
    for body in ({"n": 2**70}, {"s": "\ud800"}, {1: "a"}):
        assert FastJSONSerializer().dumps(body) == JSONSerializer().dumps(body)
    assert math.isnan(FastJSONSerializer().loads('{"n": NaN}')["n"])


def test_what_neither_can_write_is_refused_as_the_client_refuses_it() -> None:
    from opensearchpy.exceptions import SerializationError

    for bad in ({"x": object()}, {"x": {1j: 1}}):
        try:
            FastJSONSerializer().dumps(bad)
        except SerializationError:
            continue
        raise AssertionError(f"{bad!r} was written")
    try:
        FastJSONSerializer().loads("{not json")
    except SerializationError:
        pass
    else:
        raise AssertionError("bad JSON was read")


def test_decimal_and_uuid_keep_their_stock_form() -> None:
    value = {"d": Decimal("1.50"), "u": uuid.UUID(int=7), "t": dt.date(2026, 1, 2)}
    assert FastJSONSerializer().dumps(value) == JSONSerializer().dumps(value)


def test_the_keyword_client_speaks_through_it() -> None:
    """Both directions: the transport's writer and the reader of its answers."""
    from resources.opensearch.keyword_index import client_for

    transport = client_for("http://127.0.0.1:9").transport
    assert isinstance(transport.serializer, FastJSONSerializer)
    assert isinstance(transport.deserializer.serializers["application/json"], FastJSONSerializer)
