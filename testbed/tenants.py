"""Tenants set up by the tests over the real catalog, each new (a random id
after a readable prefix) so that tests are isolated by construction, not by
the order they run in."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING

from groundwork.stages.registration import register_file

if TYPE_CHECKING:
    from resources.composition.platform import Platform


def new_tenant(platform: Platform, prefix: str) -> str:
    """A new, empty tenant `<prefix>-<8 hex>` on the default model; its id."""
    tenant = f"{prefix}-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
    return tenant


def seed_tenant(platform: Platform, prefix: str, documents: Mapping[str, str]) -> str:
    """A new tenant with each Markdown document (file name -> text) registered
    as an API upload readable by the whole tenant, waiting for extraction;
    returns the tenant's id."""
    tenant = new_tenant(platform, prefix)
    for filename, text in documents.items():
        register_markdown(platform, tenant, filename, text)
    return tenant


def register_markdown(platform: Platform, tenant: str, filename: str, text: str) -> str:
    """One Markdown document registered as an API upload readable by the whole
    tenant (subject `tenant:<id>`), waiting for extraction; its source id."""
    return register_file(
        platform.catalog,
        platform.blobs,
        tenant_id=tenant,
        origin=f"api:{filename}",
        filename=filename,
        data=text.encode(),
        subjects=[f"tenant:{tenant}"],
        media_type="text/markdown",
    ).source_id


def tenant_headers(platform: Platform, prefix: str, key_name: str) -> dict[str, str]:
    """The HTTP headers of a new tenant's API key named `key_name`, which reads
    as the whole tenant (subject `tenant:<id>`)."""
    tenant = new_tenant(platform, prefix)
    _, key = platform.catalog.create_api_key(tenant, [f"tenant:{tenant}"], key_name)
    return {"Authorization": f"Bearer {key}"}
