"""Presigned reads: where the blob store can sign, a reference to a version's
bytes is a GET URL of the store itself, and the bytes never pass through the
API.

A presigned URL cannot be revoked: whoever holds it reads the object until
it expires, whatever happens meanwhile to the source's permissions or the
key that asked for it (only deleting the object, or rotating the store's
signing credentials, stops it). That is why its life is clamped here, by the
service, to MAX_LIFETIME (15 minutes) whatever the caller asks, and why the
response headers are fixed here too: Content-Type is the type sniffed from
the bytes at registration and Content-Disposition is `attachment` with an
RFC 5987 filename, both part of the signature, so neither the caller nor a
holder of the URL can make the store serve the file as something else (an
HTML page rendered on the store's origin, say). A store that cannot sign
answers None and the caller issues the proxied, HMAC-signed reference.
"""

from __future__ import annotations

from datetime import timedelta

from groundwork.errors import NotFound
from groundwork.services.hygiene import content_disposition
from groundwork.services.platform import PlatformPorts
from groundwork.signing import MAX_LIFETIME

#: the shortest life a link is given: a zero or negative ask still gets a usable one
MIN_LIFETIME = timedelta(seconds=1)


def clamped_lifetime(ttl_seconds: int) -> timedelta:
    """Between MIN_LIFETIME and MAX_LIFETIME; clamped before any arithmetic
    (10**14 seconds would overflow timedelta)."""
    seconds = max(
        int(MIN_LIFETIME.total_seconds()), min(ttl_seconds, int(MAX_LIFETIME.total_seconds()))
    )
    return timedelta(seconds=seconds)


def presigned_read(
    ports: PlatformPorts, tenant_id: str, source_id: str, version_id: str, lifetime: timedelta
) -> str | None:
    """A presigned GET of the version's object, or None when the store cannot
    sign. NotFound when the version is not stored and live (deleted since)."""
    found = ports.catalog.readable_version(tenant_id, source_id, version_id)
    if found is None:
        raise NotFound(f"no stored version of source {source_id} is visible to this key")
    blob_key, filename, media_type = found
    return ports.blobs.presign_get(
        blob_key,
        min(lifetime, MAX_LIFETIME),
        content_type=media_type or "application/octet-stream",
        content_disposition=content_disposition(filename),
    )
