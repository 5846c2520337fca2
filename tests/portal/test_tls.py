"""The data dir's CA and server certificate: they verify with the ssl module for every local
name, keys are 0600, a second call reuses them, and a change of host or a near expiry makes a
new server certificate under the same CA."""

from __future__ import annotations

import datetime
import socket
import ssl
import stat
import threading

import pytest

from portal import tls

NOW = datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)


@pytest.fixture
def paths(tmp_path):
    return tls.Paths(tmp_path / "tls")


def mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def handshake(files: tls.ServingFiles, ca_file, server_hostname: str) -> dict:
    """A real TLS handshake over a socket pair; returns the peer certificate seen."""
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(files.cert, files.key)
    client_ctx = ssl.create_default_context(cafile=str(ca_file))
    left, right = socket.socketpair()
    errors: list[BaseException] = []

    def serve() -> None:
        try:
            with server_ctx.wrap_socket(right, server_side=True) as conn:
                conn.recv(1)
        except (ssl.SSLError, OSError) as exc:
            errors.append(exc)

    thread = threading.Thread(target=serve)
    thread.start()
    try:
        with client_ctx.wrap_socket(left, server_hostname=server_hostname) as conn:
            peer = conn.getpeercert()
            conn.sendall(b"x")
    finally:
        thread.join(5)
    return peer


def test_the_server_hosts_add_the_bind_host_unless_local_or_a_wildcard():
    assert tls.server_hosts("127.0.0.1") == ["localhost", "127.0.0.1", "::1"]
    assert tls.server_hosts("0.0.0.0") == ["localhost", "127.0.0.1", "::1"]
    assert tls.server_hosts("::") == ["localhost", "127.0.0.1", "::1"]
    assert tls.server_hosts("10.1.2.3")[-1] == "10.1.2.3"
    assert tls.server_hosts("[fd00::1]")[-1] == "fd00::1"
    assert tls.server_hosts("portal.example")[-1] == "portal.example"


@pytest.mark.parametrize("name", ["localhost", "127.0.0.1", "::1"])
def test_the_server_certificate_verifies_against_the_ca_for_each_local_name(paths, name):
    files = tls.ensure_server_cert(paths, tls.server_hosts("127.0.0.1"))
    peer = handshake(files, paths.ca_cert, name)
    assert peer["subject"]


def test_a_name_the_certificate_does_not_cover_fails_verification(paths):
    files = tls.ensure_server_cert(paths, tls.server_hosts("127.0.0.1"))
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(files, paths.ca_cert, "elsewhere.example")


def test_private_keys_are_0600(paths):
    files = tls.ensure_server_cert(paths, tls.server_hosts("127.0.0.1"))
    assert mode(paths.ca_key) == 0o600
    assert mode(files.key) == 0o600
    assert mode(paths.ca_cert) == 0o644


def test_a_second_call_reuses_the_ca_and_the_server_certificate(paths):
    hosts = tls.server_hosts("127.0.0.1")
    files = tls.ensure_server_cert(paths, hosts)
    first = (paths.ca_cert.read_bytes(), files.cert.read_bytes(), files.key.read_bytes())
    again = tls.ensure_server_cert(paths, hosts)
    assert (paths.ca_cert.read_bytes(), again.cert.read_bytes(), again.key.read_bytes()) == first


def test_a_new_bind_host_makes_a_new_server_certificate_under_the_same_ca(paths):
    tls.ensure_server_cert(paths, tls.server_hosts("127.0.0.1"))
    ca = paths.ca_cert.read_bytes()
    files = tls.ensure_server_cert(paths, tls.server_hosts("portal.example"))
    assert paths.ca_cert.read_bytes() == ca
    handshake(files, paths.ca_cert, "portal.example")
    handshake(files, paths.ca_cert, "localhost")


def test_a_certificate_close_to_expiry_is_renewed(paths):
    hosts = tls.server_hosts("127.0.0.1")
    files = tls.ensure_server_cert(paths, hosts, now=NOW)
    old = files.cert.read_bytes()
    soon = NOW + datetime.timedelta(days=tls.SERVER_DAYS) - tls.RENEW_BEFORE / 2
    assert tls.ensure_server_cert(paths, hosts, now=soon).cert.read_bytes() != old
    later = soon + datetime.timedelta(days=1)
    assert tls.ensure_server_cert(paths, hosts, now=later).cert.read_bytes() == (
        files.cert.read_bytes()
    )


def test_a_certificate_from_another_ca_is_replaced(paths, tmp_path):
    hosts = tls.server_hosts("127.0.0.1")
    other = tls.Paths(tmp_path / "other")
    foreign = tls.ensure_server_cert(other, hosts)
    paths.directory.mkdir(parents=True)
    tls.ensure_ca(paths)
    paths.server_cert.write_bytes(foreign.cert.read_bytes())
    paths.server_key.write_bytes(foreign.key.read_bytes())
    files = tls.ensure_server_cert(paths, hosts)
    handshake(files, paths.ca_cert, "localhost")
