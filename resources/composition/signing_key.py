"""The HMAC key for signed references: GROUNDWORK_SIGNING_KEY (hex) when set,
otherwise a random key created once under GROUNDWORK_HOME (mode 0600)."""

from __future__ import annotations

import os
import secrets

from resources.composition.settings import GroundworkSettings


def signing_secret(settings: GroundworkSettings) -> bytes:
    configured = os.environ.get("GROUNDWORK_SIGNING_KEY", "")
    if configured:
        return bytes.fromhex(configured)
    path = settings.home / "signing.key"
    if not path.exists():
        settings.home.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_hex(32))
    return bytes.fromhex(path.read_text().strip())
