"""Stage a Run's source into ``<workspace>/.kruntimes/runs/<run-uid>/``.

Inline source becomes ``script.sh``; a ``repoURL`` is cloned with ``git`` into ``src`` and its
``commitSHA`` checked out; a task entrypoint must stay inside that checkout. A Run without
source stages nothing: what it runs is read from its args and workspace (``runtimed.command``).
Every failure is a :class:`PrepareError`, which the Run reports as ``PrepareSource``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .payload import Source
from .protocol import RUNS_DIR

SCRIPT_NAME = "script.sh"
CHECKOUT_NAME = "src"
GIT_TIMEOUT_SECONDS = 300.0
GIT_OUTPUT_LIMIT = 2048
# What git may keep from runtimed's environment (proxies, CA bundles); nothing else leaks.
_GIT_ENV_KEEP = (
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "TMPDIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "GIT_SSL_CAINFO",
    "GIT_SSH_COMMAND",
)


class PrepareError(Exception):
    """Staging failed; the message is meant for the Run's status."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Staged:
    run_dir: Path
    script: Path | None  # what bash runs; None for a Run without source
    checkout: Path | None = None
    commit: str | None = None  # the resolved commit of a repoURL source


def run_dir(workspace: Path, uid: str) -> Path:
    if not uid or "/" in uid or uid in (".", ".."):
        raise PrepareError(f"run uid {uid!r} cannot name a directory")
    return workspace / RUNS_DIR / uid


def ensure_run_dir(workspace: Path, uid: str) -> Path:
    path = run_dir(workspace, uid)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PrepareError(f"cannot create the run directory {path}: {exc}") from exc
    return path


def stage(
    source: Source,
    entrypoint: str | None,
    directory: Path,
    *,
    git_timeout: float = GIT_TIMEOUT_SECONDS,
) -> Staged:
    """Put the source in place and return what to execute. Inline source ignores entrypoint."""
    if source.inline is not None:
        return Staged(directory, write_inline(directory, source.inline))
    if source.repo_url is None:
        return Staged(directory, None)
    if not entrypoint:
        raise PrepareError("mode.task.entrypoint is required with a repoURL source")
    checkout = directory / CHECKOUT_NAME
    commit = clone(source.repo_url or "", source.commit_sha, checkout, timeout=git_timeout)
    return Staged(directory, resolve_entrypoint(checkout, entrypoint), checkout, commit)


def write_inline(directory: Path, text: str) -> Path:
    script = directory / SCRIPT_NAME
    try:
        script.unlink(missing_ok=True)  # never write through a symlink left behind
        fd = os.open(script, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o700)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(script, 0o700)  # the umask may have narrowed it
    except OSError as exc:
        raise PrepareError(f"cannot write the inline source: {exc}") from exc
    return script


def clone(repo_url: str, commit: str | None, dest: Path, *, timeout: float) -> str:
    """Clone ``repo_url`` into a fresh ``dest`` and check out ``commit`` (default: HEAD)."""
    if not repo_url or repo_url.startswith("-"):
        raise PrepareError(f"repoURL {repo_url!r} is not a repository URL")
    if commit is not None and (not commit or commit.startswith("-")):
        raise PrepareError(f"commitSHA {commit!r} is not a commit")
    _remove(dest)
    _git(
        ["clone", "--quiet", "--no-checkout", "--", repo_url, str(dest)],
        dest.parent,
        timeout,
        "git clone",
    )
    wanted = f"{commit or 'HEAD'}^{{commit}}"
    try:
        resolved = _git(
            ["rev-parse", "--verify", "--quiet", "--end-of-options", wanted],
            dest,
            timeout,
            "git rev-parse",
        ).strip()
    except PrepareError:
        raise PrepareError(f"commit {commit or 'HEAD'} not found in {repo_url}") from None
    _git(["checkout", "--quiet", "--detach", resolved], dest, timeout, "git checkout")
    return resolved


def resolve_entrypoint(checkout: Path, entrypoint: str) -> Path:
    """The entrypoint's real path; it must be relative, stay in the checkout and be a file."""
    relative = Path(entrypoint)
    if relative.is_absolute():
        raise PrepareError(f"entrypoint {entrypoint!r} must be a relative path")
    if ".." in relative.parts:
        raise PrepareError(f"entrypoint {entrypoint!r} must not contain '..'")
    root = checkout.resolve()
    target = (root / relative).resolve()
    if not target.is_relative_to(root) or target == root:
        raise PrepareError(f"entrypoint {entrypoint!r} resolves outside the checkout")
    if not target.is_file():
        raise PrepareError(f"entrypoint {entrypoint!r} does not exist in the checkout")
    return target


def _git(args: list[str], cwd: Path, timeout: float, what: str) -> str:
    git = shutil.which("git")
    if git is None:
        raise PrepareError("git is not installed in this Runtime Pod")
    try:
        done = subprocess.run(
            [git, *args],
            cwd=cwd,
            env=_git_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise PrepareError(f"{what}: timed out after {timeout:g}s") from None
    except OSError as exc:
        raise PrepareError(f"{what}: {exc}") from exc
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip()[-GIT_OUTPUT_LIMIT:]
        raise PrepareError(
            f"{what} failed (exit code {done.returncode})" + (f": {detail}" if detail else "")
        )
    return done.stdout.decode("utf-8", "replace")


def _git_env() -> dict[str, str]:
    env = {name: os.environ[name] for name in _GIT_ENV_KEEP if name in os.environ}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_CONFIG_NOSYSTEM="1")
    return env


def _remove(path: Path) -> None:
    """Clear what an earlier attempt left at ``path`` (a checkout, or anything else)."""
    try:
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.exists():
            shutil.rmtree(path)
    except OSError as exc:
        raise PrepareError(f"cannot clear {path}: {exc}") from exc
