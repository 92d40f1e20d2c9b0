"""A private certificate authority and server certificates under a home, for
the engines that listen beyond loopback (PostgreSQL over TLS, the
authenticating proxy in front of OpenSearch).

Self-signed on purpose: the platform's hosts trust this one CA (its
certificate is public: copy `ca.crt` to each host and name it in
GROUNDWORK_DATABASE_CA / GROUNDWORK_OPENSEARCH_CA), so no outside authority
or download is involved. Keys are written 0600 and made once; a certificate
that lacks a requested name is issued again. The `cryptography` package
makes them when it is installed (it is in the lock, through the S3 client's
dependencies), else the `openssl` command.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import secrets
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

DAYS = 825


@dataclass(frozen=True, slots=True)
class ServerCertificate:
    ca_cert: Path
    cert: Path
    key: Path


def server_certificate(home: Path, names: Sequence[str], stem: str = "server") -> ServerCertificate:
    """The home's CA (made once) and a server certificate `<stem>.crt` for
    `names` (host names and IP addresses) signed by it: one CA for every
    engine of the home, one certificate per engine."""
    home.mkdir(parents=True, exist_ok=True)
    wanted = sorted({*names, "127.0.0.1", "localhost"})
    result = ServerCertificate(home / "ca.crt", home / f"{stem}.crt", home / f"{stem}.key")
    record = home / f"{stem}-names.json"
    if result.cert.exists() and record.exists() and json.loads(record.read_text()) == wanted:
        return result
    try:
        _with_cryptography(home, wanted, stem)
    except ImportError:
        _with_openssl(home, wanted, stem)
    record.write_text(json.dumps(wanted))
    return result


def _write_private(path: Path, data: bytes) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _with_cryptography(home: Path, names: list[str], stem: str) -> None:
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    def load_or_make_key(path: Path) -> ec.EllipticCurvePrivateKey:
        if path.exists():
            key = serialization.load_pem_private_key(path.read_bytes(), password=None)
            assert isinstance(key, ec.EllipticCurvePrivateKey)
            return key
        key = ec.generate_private_key(ec.SECP256R1())
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        _write_private(path, pem)
        return key

    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)
    ca_key = load_or_make_key(home / "ca.key")
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"Groundwork CA {home.name}")])
    if not (home / "ca.crt").exists():
        ca = (
            x509.CertificateBuilder()
            .subject_name(ca_name)
            .issuer_name(ca_name)
            .public_key(ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=DAYS))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .sign(ca_key, hashes.SHA256())
        )
        (home / "ca.crt").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    key = load_or_make_key(home / f"{stem}.key")
    alternatives: list[x509.GeneralName] = []
    for name in names:
        try:
            alternatives.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            alternatives.append(x509.DNSName(name))
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=DAYS))
        .add_extension(x509.SubjectAlternativeName(alternatives), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    (home / f"{stem}.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _with_openssl(home: Path, names: list[str], stem: str) -> None:
    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=home)

    old = os.umask(0o077)  # the keys openssl writes are 0600 from the start
    try:
        if not (home / "ca.key").exists():
            openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "ca.key")
        if not (home / "ca.crt").exists():
            openssl(
                "req", "-x509", "-new", "-key", "ca.key", "-sha256", "-days", str(DAYS),
                "-subj", f"/CN=Groundwork CA {home.name}", "-out", "ca.crt",
            )  # fmt: skip
        if not (home / f"{stem}.key").exists():
            openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", f"{stem}.key")
        alternatives = ",".join(
            f"IP:{n}" if _is_ip(n) else f"DNS:{n}" for n in names
        )  # fmt: skip
        with tempfile.NamedTemporaryFile("w", suffix=".ext", dir=home) as ext:
            ext.write(f"subjectAltName={alternatives}\nbasicConstraints=critical,CA:FALSE\n")
            ext.flush()
            subject = f"/CN={names[0]}"
            openssl("req", "-new", "-key", f"{stem}.key", "-subj", subject, "-out", f"{stem}.csr")
            openssl(
                "x509", "-req", "-in", f"{stem}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                "-CAcreateserial", "-days", str(DAYS), "-sha256", "-extfile", ext.name,
                "-out", f"{stem}.crt",
            )  # fmt: skip
    finally:
        os.umask(old)


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def home_secret(path: Path) -> str:
    """A password made once at `path` (mode 0600); a racing process's wins."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as handle:
                handle.write(secrets.token_urlsafe(24))
    return path.read_text().strip()
