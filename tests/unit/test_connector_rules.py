"""The connectors' pure rules: which keys an instance takes, who may read
them, which source failures are retried, what a configuration may hold."""

from __future__ import annotations

import pytest

from groundwork.connectors.calls import pause_for, with_retries
from groundwork.connectors.port import ConnectorError
from groundwork.connectors.s3_bucket import S3BucketSettings, object_item, s3_error
from groundwork.connectors.selection import ItemSelection, SubjectsByPrefix, subjects_from_tags
from groundwork.errors import Refused
from groundwork.services.connectors import ConnectorRequest, validate


def test_globs_take_and_leave_keys() -> None:
    selection = ItemSelection(include=("*.md", "*.pdf"), exclude=("drafts/*",))
    assert selection.selects("guide.md") and selection.selects("a/b/report.pdf")
    assert not selection.selects("drafts/idea.md"), "exclude wins"
    assert not selection.selects("tool.exe")
    assert not selection.selects("a/.git/config.md"), "hidden segments are skipped"
    assert ItemSelection().selects("anything.bin")


def test_the_longest_prefix_names_the_subjects() -> None:
    prefixes = SubjectsByPrefix.from_config(
        {"finance/": ["group:finance"], "finance/board/": ["group:board"]}
    )
    assert prefixes.subjects_for("finance/q3.pdf") == ("group:finance",)
    assert prefixes.subjects_for("finance/board/minutes.pdf") == ("group:board",)
    assert prefixes.subjects_for("handbook.md") is None
    assert subjects_from_tags({"s": "group:a+group:b, group:c"}, "s") == (
        "group:a",
        "group:b",
        "group:c",
    )
    assert subjects_from_tags({}, "s") is None


def test_an_object_is_its_key_etag_and_citation() -> None:
    settings = S3BucketSettings.from_config({"bucket": "docs", "prefix": "team/"})
    item = object_item(settings, {"Key": "team/a/b.md", "ETag": '"abc"', "Size": 12}, None)
    assert (item.item_id, item.version, item.size) == ("team/a/b.md", "abc", 12)
    assert item.location == {"bucket": "docs", "key": "team/a/b.md", "filename": "a/b.md"}
    with pytest.raises(ValueError):
        S3BucketSettings.from_config({})


def test_throttling_is_retried_after_the_servers_pause_and_403_is_not() -> None:
    slow = s3_error("k", "SlowDown", 503, "reduce your rate", "7")
    assert slow.retryable and slow.retry_after == 7.0
    denied = s3_error("k", "AccessDenied", 403, "no", None)
    assert not denied.retryable
    assert pause_for(ConnectorError("s3", None, "x", 600.0, True), 0) == 30.0, "capped"
    pauses: list[float] = []
    calls = iter([slow, slow])

    def flaky() -> str:
        error = next(calls, None)
        if error is not None:
            raise error
        return "ok"

    assert with_retries(flaky, pauses.append) == "ok" and pauses == [7.0, 7.0]
    with pytest.raises(ConnectorError):
        with_retries(lambda: (_ for _ in ()).throw(denied), pauses.append)


def test_a_configuration_holds_no_secret() -> None:
    validate(ConnectorRequest("s3", "docs", {"bucket": "b"}, {"secret_access_key": "env:KEY"}))
    for bad in (
        ConnectorRequest("s3", "docs", {"bucket": "b", "aws_secret_access_key": "x"}),
        ConnectorRequest("fsspec", "docs", {"options": {"password": "hunter2"}}),
        ConnectorRequest("s3", "docs", {}, {"secret_access_key": "hunter2"}),
        ConnectorRequest("ftp", "docs"),
        ConnectorRequest("s3", "Bad Name"),
    ):
        with pytest.raises(Refused):
            validate(bad)
