"""Staging a Run's source into the workspace: inline scripts and real git checkouts."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from runtimed.payload import Source
from runtimed.staging import PrepareError, ensure_run_dir, resolve_entrypoint, stage


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        [
            "git",
            "-c",
            "user.name=Test",
            "-c",
            "user.email=test@example.com",
            "-c",
            "init.defaultBranch=main",
            *args,
        ],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path) -> tuple[Path, str, str]:
    """A local repository with two commits; returns (path, first sha, second sha)."""
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "--quiet")
    (path / "ci").mkdir()
    (path / "ci" / "run.sh").write_text("echo first\n")
    git(path, "add", ".")
    git(path, "commit", "--quiet", "-m", "one")
    first = git(path, "rev-parse", "HEAD")
    (path / "ci" / "run.sh").write_text("echo second\n")
    git(path, "commit", "--quiet", "-am", "two")
    return path, first, git(path, "rev-parse", "HEAD")


def test_inline_source_becomes_a_private_script(workspace):
    directory = ensure_run_dir(workspace, "uid-1")
    assert directory == workspace / ".kruntimes" / "runs" / "uid-1"
    staged = stage(Source(inline="echo hi\n"), "ignored.sh", directory)
    assert staged.script == directory / "script.sh"
    assert staged.script.read_text() == "echo hi\n"
    assert stat.S_IMODE(staged.script.stat().st_mode) == 0o700


def test_inline_source_is_rewritten_for_a_new_attempt(workspace):
    directory = ensure_run_dir(workspace, "uid-1")
    stage(Source(inline="echo one\n"), None, directory)
    staged = stage(Source(inline="echo two\n"), None, directory)
    assert staged.script.read_text() == "echo two\n"


def test_repo_is_cloned_and_the_commit_checked_out(workspace, repo):
    path, first, _ = repo
    directory = ensure_run_dir(workspace, "uid-2")
    staged = stage(Source(repo_url=str(path), commit_sha=first), "ci/run.sh", directory)
    assert staged.checkout == directory / "src"
    assert staged.commit == first
    assert staged.script == (directory / "src" / "ci" / "run.sh").resolve()
    assert staged.script.read_text() == "echo first\n"
    assert git(directory / "src", "rev-parse", "HEAD") == first


def test_repo_without_commit_uses_the_default_branch_and_reclones(workspace, repo):
    path, _, second = repo
    directory = ensure_run_dir(workspace, "uid-3")
    (directory / "src").mkdir()
    (directory / "src" / "stale").write_text("from an earlier attempt")
    staged = stage(Source(repo_url=f"file://{path}"), "ci/run.sh", directory)
    assert staged.commit == second
    assert staged.script.read_text() == "echo second\n"
    assert not (directory / "src" / "stale").exists()


def test_unknown_commit_fails_to_prepare(workspace, repo):
    path, _, _ = repo
    directory = ensure_run_dir(workspace, "uid-4")
    with pytest.raises(PrepareError, match="deadbeef"):
        stage(Source(repo_url=str(path), commit_sha="deadbeef" * 5), "ci/run.sh", directory)


def test_unreachable_repo_fails_to_prepare(workspace, tmp_path):
    directory = ensure_run_dir(workspace, "uid-5")
    with pytest.raises(PrepareError, match="git clone failed"):
        stage(Source(repo_url=str(tmp_path / "nowhere")), "run.sh", directory)


@pytest.mark.parametrize("url", ["", "--upload-pack=touch /tmp/x"])
def test_option_like_repo_url_is_refused(workspace, url):
    directory = ensure_run_dir(workspace, "uid-6")
    with pytest.raises(PrepareError, match="not a repository URL"):
        stage(Source(repo_url=url), "run.sh", directory)


def test_repo_source_needs_an_entrypoint(workspace, repo):
    with pytest.raises(PrepareError, match="entrypoint is required"):
        stage(Source(repo_url=str(repo[0])), None, ensure_run_dir(workspace, "uid-7"))


@pytest.mark.parametrize(
    ("entrypoint", "match"),
    [
        ("../outside.sh", "must not contain '..'"),
        ("ci/../../outside.sh", "must not contain '..'"),
        ("/etc/passwd", "relative"),
        ("ci/missing.sh", "does not exist"),
        ("ci", "does not exist"),
    ],
)
def test_entrypoint_must_stay_inside_and_exist(tmp_path, entrypoint, match):
    checkout = tmp_path / "src"
    (checkout / "ci").mkdir(parents=True)
    (tmp_path / "outside.sh").write_text("echo escaped\n")
    with pytest.raises(PrepareError, match=match):
        resolve_entrypoint(checkout, entrypoint)


def test_entrypoint_symlink_escaping_the_checkout_is_refused(workspace, repo, tmp_path):
    path, _, _ = repo
    secret = tmp_path / "secret.sh"
    secret.write_text("echo escaped\n")
    os.symlink(secret, path / "ci" / "escape.sh")
    os.symlink("run.sh", path / "ci" / "inside.sh")
    git(path, "add", ".")
    git(path, "commit", "--quiet", "-m", "links")
    directory = ensure_run_dir(workspace, "uid-8")
    with pytest.raises(PrepareError, match="outside the checkout"):
        stage(Source(repo_url=str(path)), "ci/escape.sh", directory)
    # a link that stays inside the checkout is fine
    staged = stage(Source(repo_url=str(path)), "ci/inside.sh", directory)
    assert staged.script == (directory / "src" / "ci" / "run.sh").resolve()


def test_run_uid_must_be_one_path_component(workspace):
    for uid in ("a/b", "..", ""):
        with pytest.raises(PrepareError):
            ensure_run_dir(workspace, uid)
