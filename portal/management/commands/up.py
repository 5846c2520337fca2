"""``manage.py up``: web, the control worker, beat and the Runtime Pods (local processes, or
the kubernetes cluster provider), in the foreground; Ctrl-C stops them all."""

from __future__ import annotations

import logging
import os
import shutil
import sys
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from portal import datadir
from portal import tls as tls_files
from portal.processes import Child, Supervisor
from portal.tls import ServingFiles
from runtimed.protocol import CONTROL_QUEUE


def web_command(
    port: int, bind: str, *, workers: int, tls: ServingFiles | None = None
) -> list[str]:
    """gunicorn with uvicorn workers: streams wait on an event loop, not on a pinned thread,
    and several processes answer at once (Django runs each process's sync views in turn)."""
    argv = [
        sys.executable,
        "-m",
        "gunicorn",
        "portal.asgi:application",
        "--bind",
        f"[{bind}]:{port}" if ":" in bind else f"{bind}:{port}",
        "--worker-class",
        "portal.web_server.StatusUvicornWorker",
        "--workers",
        str(workers),
        "--timeout",
        "120",
        # idle keep-alive connections stay open past a client's pause (gunicorn's 2 s closed
        # them under clients about to reuse them: a reset request); kubectl keeps them 90 s
        "--keep-alive",
        "75",
        "--access-logfile",
        "-",
    ]
    if tls is not None:
        argv += ["--certfile", str(tls.cert), "--keyfile", str(tls.key)]
    return argv + control_socket_options(settings.DATA_DIR)


# a Unix socket's path must fit sockaddr_un.sun_path (108 bytes on Linux, with its NUL)
MAX_SOCKET_PATH = 100


def _gunicorn_options() -> set[str]:
    try:
        from gunicorn.config import KNOWN_SETTINGS
    except ImportError:  # pragma: no cover - gunicorn is a dependency
        return set()
    return {option for setting in KNOWN_SETTINGS for option in (setting.cli or [])}


def control_socket_options(data_dir: Path) -> list[str]:
    """gunicorn's control socket (gunicorn >= 24) under the data dir, not ``~/.gunicorn``; none
    when the data dir's path is too long for a socket (or gunicorn has no such option)."""
    known = _gunicorn_options()
    if "--control-socket" not in known:
        return []
    path = Path(data_dir) / "gunicorn.ctl"
    if len(str(path).encode()) > MAX_SOCKET_PATH:
        return ["--no-control-socket"] if "--no-control-socket" in known else []
    return ["--control-socket", str(path)]


def beat_log_level(verbose: bool = False) -> str:
    """beat's log level: WARNING (its every "Sending due task" line is INFO) unless verbose
    (``up --verbose-beat`` or ``KRUNTIMES_BEAT_LOG_LEVEL``)."""
    return "INFO" if verbose else settings.KRUNTIMES_BEAT_LOG_LEVEL


def control_plane(
    port: int,
    bind: str,
    *,
    workers: int = 4,
    tls: ServingFiles | None = None,
    verbose_beat: bool = False,
) -> list[Child]:
    python = sys.executable
    web = web_command(port, bind, workers=workers, tls=tls)
    worker = [
        python,
        "-m",
        "celery",
        "-A",
        "portal",
        "worker",
        "-Q",
        CONTROL_QUEUE,
        "-n",
        "control@%h",
        "--concurrency",
        "2",
        "--loglevel",
        "INFO",
    ]
    beat = [
        python,
        "-m",
        "celery",
        "-A",
        "portal",
        "beat",
        "--loglevel",
        beat_log_level(verbose_beat),
        "--scheduler",
        settings.CELERY_BEAT_SCHEDULER,
        "--pidfile",
        str(settings.DATA_DIR / "beat.pid"),
    ]
    return [Child("web", web), Child("control-worker", worker), Child("beat", beat)]


def cluster_provider() -> Child:
    """The kubernetes provider (Deployments, the Pod watch) as one more supervised child."""
    return Child("cluster-provider", [sys.executable, "-m", "django", "cluster-provider"])


def metrics_dir() -> str:
    """prometheus-client multiprocess mode: web serves what the workers count."""
    path = settings.DATA_DIR / "metrics"
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return str(path)


def gateway_env(port: int, bind: str, files: ServingFiles) -> None:
    """Function Runs are invoked at this server's HTTPS address (``scheduling.endpoints``);
    with the portal's own certificate, its CA is what clients verify the endpoint with."""
    host = bind if bind not in ("", "0.0.0.0", "::", "localhost") else "127.0.0.1"
    host = f"[{host}]" if ":" in host else host
    os.environ.setdefault("KRUNTIMES_GATEWAY_URL", f"https://{host}:{port}")
    ca = tls_files.data_dir_paths().ca_cert
    if files.cert == tls_files.data_dir_paths().server_cert and ca.exists():
        os.environ.setdefault("KRUNTIMES_GATEWAY_CA_FILE", str(ca))


def serving_files(
    bind: str, *, tls: bool, cert: str | None, key: str | None
) -> ServingFiles | None:
    """What HTTPS serves with: the given files, the data dir's (made as needed), or none."""
    if bool(cert) != bool(key):
        raise CommandError("--tls-cert and --tls-key go together")
    if cert and key:
        for given in (cert, key):
            if not Path(given).is_file():
                raise CommandError(f"no such file: {given}")
        return ServingFiles(cert=Path(cert).resolve(), key=Path(key).resolve())
    if not tls:
        return None
    return tls_files.ensure_server_cert(tls_files.data_dir_paths(), tls_files.server_hosts(bind))


class Command(BaseCommand):
    help = "Start the web server, the control worker, beat and the local Runtime Pods."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument(
            "--bind", default="127.0.0.1", help="address to listen on (0.0.0.0 for every interface)"
        )
        parser.add_argument(
            "--web-workers",
            type=int,
            default=None,
            help="web server processes (default KRUNTIMES_WEB_WORKERS, 4)",
        )
        parser.add_argument(
            "--tls",
            action="store_true",
            help="serve HTTPS with the data dir's CA-signed certificate (made on first use)",
        )
        parser.add_argument("--tls-cert", help="serve HTTPS with this certificate (PEM chain)")
        parser.add_argument("--tls-key", help="the private key of --tls-cert")
        parser.add_argument(
            "--verbose-beat",
            action="store_true",
            help="log beat's INFO lines (each periodic task it sends); default: warnings only "
            "(KRUNTIMES_BEAT_LOG_LEVEL)",
        )

    def handle(
        self,
        *args,
        port: int,
        bind: str,
        web_workers: int | None,
        tls: bool,
        tls_cert: str | None,
        tls_key: str | None,
        verbose_beat: bool = False,
        **options,
    ) -> None:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
        workers = web_workers if web_workers is not None else settings.KRUNTIMES_WEB_WORKERS
        if workers < 1:
            raise CommandError("--web-workers must be at least 1")
        files = serving_files(bind, tls=tls, cert=tls_cert, key=tls_key)
        try:
            lock = datadir.lock_for_up(settings.DATA_DIR)
        except datadir.DataDirBusy as exc:
            raise CommandError(str(exc)) from None
        try:
            self.serve(port, bind, workers, files, verbose_beat)
        finally:
            lock.release()

    def serve(
        self, port: int, bind: str, workers: int, files: ServingFiles | None, verbose_beat: bool
    ) -> None:
        (settings.DATA_DIR / "beat.pid").unlink(missing_ok=True)
        os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", metrics_dir())
        if files is not None:
            gateway_env(port, bind, files)
        supervisor = Supervisor(
            control_plane(port, bind, workers=workers, tls=files, verbose_beat=verbose_beat),
            stop_timeout=settings.KRUNTIMES_POD_TERMINATION_GRACE_SECONDS,
        )
        tick = None
        if settings.KRUNTIMES_CLUSTER == "kubernetes":
            supervisor.children.append(cluster_provider())
        if settings.KRUNTIMES_CLUSTER == "local":
            from scheduling.providers.local import LocalProvider

            provider = LocalProvider(supervisor, keep_on_stop=True)
            provider.cleanup_orphans()
            tick = provider.sync
        scheme = "https" if files else "http"
        self.stdout.write(
            f"kruntimes portal: admin {scheme}://{bind}:{port}/admin/ , "
            f"API {scheme}://{bind}:{port}/apis , Ctrl-C stops everything"
        )
        supervisor.run(tick=tick, poll=0.5)
