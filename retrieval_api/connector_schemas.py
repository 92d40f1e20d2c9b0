"""Request and response shapes of /v1/connectors (a connector's state, never
a secret: only the names of the secrets it references)."""

from typing import Any

from pydantic import BaseModel, Field


class ConnectorBody(BaseModel):
    kind: str = Field(description="s3, fsspec, web or git")
    name: str = Field(min_length=1, max_length=63)
    config: dict[str, Any] = Field(default_factory=dict, description="settings; no secret")
    secrets: dict[str, str] = Field(
        default_factory=dict,
        description="credential name -> reference (env:VARIABLE or file:/path); never a value",
    )
    subjects: list[str] | None = Field(default=None, max_length=50)
    freshness_seconds: int = Field(default=3600, gt=0)
    interval_seconds: int = Field(default=300, gt=0)


class ConnectorPauseBody(BaseModel):
    paused: bool = True


class ItemErrorOut(BaseModel):
    item_id: str
    reason: str


class ConnectorOut(BaseModel):
    instance_id: str
    name: str
    kind: str
    config: dict[str, Any]
    secrets: list[str] = Field(description="which secrets are referenced (names only)")
    subjects: list[str]
    paused: bool
    freshness_seconds: int
    interval_seconds: int
    last_pass: int
    last_started: str | None
    last_finished: str | None
    seen: int
    changed: int
    deleted: int
    failed: int
    rescoped: int
    last_error: str | None
    lag_seconds: float | None
    behind: bool = Field(
        description="the last finished pass began longer ago than freshness_seconds"
    )
    items: int
    item_errors: list[ItemErrorOut]


class ConnectorListOut(BaseModel):
    connectors: list[ConnectorOut]


class ConnectorRemovedOut(BaseModel):
    name: str
    deleted_documents: int
