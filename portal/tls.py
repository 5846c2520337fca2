"""The embedded default's TLS: a self-signed CA made once in the data dir and a server
certificate it signs for the hosts ``manage.py up`` answers on.

kubectl sends a bearer token only over TLS, so ``up --tls`` serves HTTPS with these files and
``manage.py kubeconfig`` hands out the CA. The server certificate is made again when it does
not cover the bind host, was not signed by the CA on disk, or is close to expiry; the CA is
never replaced, so kubeconfigs already handed out keep verifying. Private keys are 0600.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")
WILDCARD_BINDS = ("0.0.0.0", "::", "")
CA_DAYS = 3650
SERVER_DAYS = 365
RENEW_BEFORE = datetime.timedelta(days=30)


@dataclass(frozen=True)
class ServingFiles:
    """What the web server is started with: a certificate chain and its private key."""

    cert: Path
    key: Path


@dataclass(frozen=True)
class Paths:
    """The TLS files in one directory (``<data dir>/tls``)."""

    directory: Path

    @property
    def ca_cert(self) -> Path:
        return self.directory / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.directory / "ca.key"

    @property
    def server_cert(self) -> Path:
        return self.directory / "server.crt"

    @property
    def server_key(self) -> Path:
        return self.directory / "server.key"


def server_hosts(bind: str) -> list[str]:
    """The names a server certificate must cover: the loopback names, and the bind host if it
    is another one (a wildcard bind names no host of its own)."""
    hosts = list(LOCAL_HOSTS)
    host = bind.strip("[]")
    if host not in WILDCARD_BINDS and host not in hosts:
        hosts.append(host)
    return hosts


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "kruntimes"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _general_name(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def make_ca(now: datetime.datetime) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = _name("kruntimes-ca")
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=CA_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def make_server_cert(
    ca_cert: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    hosts: list[str],
    now: datetime.datetime,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(hosts[0]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=SERVER_DAYS))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.SubjectAlternativeName([_general_name(h) for h in hosts]), critical=False
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    return cert, key


def covers(cert: x509.Certificate, hosts: list[str]) -> bool:
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return False
    present = {str(n) for n in names.get_values_for_type(x509.DNSName)}
    present |= {str(a) for a in names.get_values_for_type(x509.IPAddress)}
    return all(str(_value(h)) in present for h in hosts)


def _value(host: str) -> object:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return host


def expires_soon(cert: x509.Certificate, now: datetime.datetime) -> bool:
    return cert.not_valid_after_utc - now < RENEW_BEFORE


def signed_by(cert: x509.Certificate, ca_cert: x509.Certificate) -> bool:
    try:
        cert.verify_directly_issued_by(ca_cert)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _write(path: Path, data: bytes, mode: int) -> None:
    """Written aside with its mode, then renamed: no reader sees half a file or a wide key."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    aside = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    os.chmod(aside, mode)
    os.replace(aside, path)


def _load_cert(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def ensure_ca(paths: Paths, now: datetime.datetime | None = None) -> x509.Certificate:
    """The CA on disk, made the first time."""
    if paths.ca_cert.exists() and paths.ca_key.exists():
        return _load_cert(paths.ca_cert)
    cert, key = make_ca(now or _now())
    _write(paths.ca_key, _key_pem(key), 0o600)
    _write(paths.ca_cert, pem(cert), 0o644)
    return cert


def ensure_server_cert(
    paths: Paths, hosts: list[str], now: datetime.datetime | None = None
) -> ServingFiles:
    """A server certificate for ``hosts`` signed by the CA, reused while it still fits."""
    now = now or _now()
    ca_cert = ensure_ca(paths, now)
    files = ServingFiles(cert=paths.server_cert, key=paths.server_key)
    if files.cert.exists() and files.key.exists():
        current = _load_cert(files.cert)
        if (
            covers(current, hosts)
            and not expires_soon(current, now)
            and signed_by(current, ca_cert)
        ):
            return files
    ca_key = serialization.load_pem_private_key(paths.ca_key.read_bytes(), password=None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    cert, key = make_server_cert(ca_cert, ca_key, hosts, now)
    _write(files.key, _key_pem(key), 0o600)
    _write(files.cert, pem(cert), 0o644)
    return files


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def data_dir_paths() -> Paths:
    from django.conf import settings

    return Paths(settings.DATA_DIR / "tls")
