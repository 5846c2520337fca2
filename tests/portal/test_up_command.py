"""``manage.py up``'s web server: the ASGI app under uvicorn workers, as many as asked, and
HTTPS with the data dir's certificate or the files given."""

from __future__ import annotations

import pytest
from django.core.management.base import CommandError

from portal.management.commands.up import serving_files, web_command
from portal.tls import ServingFiles


def option(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_the_web_serves_the_asgi_app_with_uvicorn_workers():
    argv = web_command(8000, "127.0.0.1", workers=3)
    assert "portal.asgi:application" in argv
    assert option(argv, "--worker-class") == "portal.web_server.StatusUvicornWorker"
    assert option(argv, "--workers") == "3"
    assert option(argv, "--bind") == "127.0.0.1:8000"
    assert "--certfile" not in argv


def test_idle_connections_outlive_a_clients_pause():
    """gunicorn's default (2 s) closed connections clients were about to reuse: resets."""
    assert int(option(web_command(8000, "127.0.0.1", workers=1), "--keep-alive")) >= 60


def test_an_ipv6_bind_is_bracketed():
    assert option(web_command(8000, "::1", workers=1), "--bind") == "[::1]:8000"


def test_tls_passes_the_certificate_and_key(tmp_path):
    files = ServingFiles(cert=tmp_path / "c.pem", key=tmp_path / "k.pem")
    argv = web_command(8443, "127.0.0.1", workers=1, tls=files)
    assert option(argv, "--certfile") == str(files.cert)
    assert option(argv, "--keyfile") == str(files.key)


def test_the_workers_default_to_the_setting(settings, monkeypatch, tmp_path):
    from portal.management.commands import up

    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))  # restored after the test
    settings.DATA_DIR = tmp_path
    seen = {}
    monkeypatch.setattr(up, "control_plane", lambda *a, **kw: seen.update(kw) or [])
    monkeypatch.setattr(up.Supervisor, "run", lambda self, **kw: None)
    settings.KRUNTIMES_WEB_WORKERS = 2
    settings.KRUNTIMES_CLUSTER = "kubernetes"  # no local pods
    up.Command().run_from_argv(["manage.py", "up"])
    assert seen["workers"] == 2 and seen["tls"] is None
    up.Command().run_from_argv(["manage.py", "up", "--web-workers", "5"])
    assert seen["workers"] == 5


def test_tls_without_files_uses_the_data_dirs_certificate(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    files = serving_files("127.0.0.1", tls=True, cert=None, key=None)
    assert files == ServingFiles(cert=tmp_path / "tls/server.crt", key=tmp_path / "tls/server.key")
    assert files.cert.is_file() and (tmp_path / "tls/ca.crt").is_file()


def test_no_tls_serves_plain_http():
    assert serving_files("127.0.0.1", tls=False, cert=None, key=None) is None


def test_given_files_are_used_as_they_are(tmp_path):
    cert, key = tmp_path / "c.pem", tmp_path / "k.pem"
    cert.write_text("c")
    key.write_text("k")
    assert serving_files("127.0.0.1", tls=False, cert=str(cert), key=str(key)) == ServingFiles(
        cert=cert, key=key
    )


@pytest.mark.parametrize(
    ("cert", "key", "message"),
    [("c.pem", None, "go together"), (None, "k.pem", "go together"), ("c.pem", "k.pem", "no such")],
)
def test_bad_certificate_options_are_refused(tmp_path, cert, key, message):
    with pytest.raises(CommandError, match=message):
        serving_files(
            "127.0.0.1",
            tls=True,
            cert=cert and str(tmp_path / cert),
            key=key and str(tmp_path / key),
        )


def test_gunicorns_control_socket_is_under_the_data_dir(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    argv = web_command(8000, "127.0.0.1", workers=1)
    assert option(argv, "--control-socket") == str(tmp_path / "gunicorn.ctl")


def test_a_data_dir_too_deep_for_a_socket_disables_it(settings, tmp_path):
    deep = tmp_path / ("d" * 120)
    settings.DATA_DIR = deep
    argv = web_command(8000, "127.0.0.1", workers=1)
    assert "--control-socket" not in argv and "--no-control-socket" in argv


def test_beat_is_quiet_unless_asked(settings):
    from portal.management.commands.up import control_plane

    def beat_level(**kw):
        beat = next(
            child for child in control_plane(8000, "127.0.0.1", **kw) if child.name == "beat"
        )
        return option(beat.argv, "--loglevel")

    assert beat_level() == "WARNING"
    assert beat_level(verbose_beat=True) == "INFO"
    settings.KRUNTIMES_BEAT_LOG_LEVEL = "INFO"
    assert beat_level() == "INFO"


def test_up_verbose_beat_flag(settings, monkeypatch, tmp_path):
    from portal.management.commands import up

    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    settings.DATA_DIR = tmp_path
    settings.KRUNTIMES_CLUSTER = "kubernetes"
    seen = {}
    monkeypatch.setattr(up, "control_plane", lambda *a, **kw: seen.update(kw) or [])
    monkeypatch.setattr(up.Supervisor, "run", lambda self, **kw: None)
    up.Command().run_from_argv(["manage.py", "up"])
    assert seen["verbose_beat"] is False
    up.Command().run_from_argv(["manage.py", "up", "--verbose-beat"])
    assert seen["verbose_beat"] is True


@pytest.mark.parametrize("cluster", ["kubernetes", "local"])
def test_in_kubernetes_mode_up_supervises_the_cluster_provider(
    settings, monkeypatch, tmp_path, cluster
):
    from portal.management.commands import up

    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    settings.DATA_DIR = tmp_path
    settings.KRUNTIMES_CLUSTER = cluster
    seen: dict = {}

    def run(self, **kw) -> None:
        seen.update(children=self.children, locked=_locked(tmp_path))

    monkeypatch.setattr(up.Supervisor, "run", run)
    if cluster == "local":
        from scheduling.providers import local

        monkeypatch.setattr(
            local.LocalProvider,
            "cleanup_orphans",
            lambda self: seen.update(keep_on_stop=self.keep_on_stop) or 0,
        )
    up.Command().run_from_argv(["manage.py", "up"])
    children = {child.name: child.argv for child in seen["children"]}
    if cluster == "kubernetes":
        assert children["cluster-provider"][1:] == ["-m", "django", "cluster-provider"]
    else:
        assert "cluster-provider" not in children
        # a stop of ``up`` keeps its pods (name, UID, disk) for the next start
        assert seen["keep_on_stop"] is True
    from portal import datadir

    assert seen["locked"]  # the data directory was ``up``'s while it ran
    datadir.lock_for_up(tmp_path).release()  # and free once it returned


def _locked(data_dir) -> bool:
    from portal import datadir

    try:
        datadir.lock_for_up(data_dir).release()
    except datadir.DataDirBusy:
        return True
    return False
