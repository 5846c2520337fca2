"""A Run's data in and out through RunService: outputs, artifacts to a real store, artifact
inputs staged from it, and cancel killing the whole process group."""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from dataclasses import replace

import boto3
import pytest

from runtimed.tasks import RunService
from tests.helpers.payloads import make_payload

FS_STORE = {"driver": "filesystem", "filesystem": {"volumeClaimName": "artifacts"}}
BUILD = """
echo "tests=passed" >> "$KRUNTIME_OUTPUTS"
echo "# a comment" >> "$KRUNTIME_OUTPUTS"
echo "version=1.2.3" >> "$KRUNTIME_OUTPUTS"
mkdir -p "$KRUNTIME_ARTIFACTS_DIR/dist/bin"
printf 'hello' > "$KRUNTIME_ARTIFACTS_DIR/dist/app.txt"
printf '#!/bin/sh\\necho hi\\n' > "$KRUNTIME_ARTIFACTS_DIR/dist/bin/run.sh"
chmod +x "$KRUNTIME_ARTIFACTS_DIR/dist/bin/run.sh"
printf '<ok/>' > "$KRUNTIME_ARTIFACTS_DIR/report.xml"
"""


@pytest.fixture
def volumes(tmp_path):
    return tmp_path / "volumes"


@pytest.fixture
def service(config, reporter, clock, volumes) -> RunService:
    config = replace(config, artifact_volumes=volumes)
    return RunService(config, reporter, clock=clock, grace=1.0)


def produce(service, store_spec, uid="producer-uid") -> dict:
    return service.execute_run(make_payload(BUILD, uid=uid, artifactStore=store_spec))


def consume(service, store_spec, refs, script, uid="consumer-uid") -> dict:
    inputs = [{"ref": ref, "path": path} for ref, path in refs]
    return service.execute_run(
        make_payload(script, uid=uid, artifactStore=store_spec, artifactInputs=inputs)
    )


def by_name(final: dict) -> dict[str, dict]:
    return {ref["name"]: ref for ref in final.get("artifactRefs", [])}


def test_outputs_and_artifacts_land_in_the_final_report(service, volumes):
    final = produce(service, FS_STORE)
    assert (final["phase"], final["reason"]) == ("Succeeded", "")
    assert final["outputs"] == {"tests": "passed", "version": "1.2.3"}
    assert final["artifactStore"] == FS_STORE
    refs = by_name(final)
    assert set(refs) == {"dist", "report.xml"}
    report = refs["report.xml"]
    path = volumes / "artifacts" / report["location"]["filesystem"]["path"]
    assert path.read_bytes() == b"<ok/>"
    assert report["location"]["filesystem"] == {
        "path": "namespaces/ci/runs/producer-uid/report.xml",
        "volumeClaimName": "artifacts",
    }
    assert report["digest"] == "sha256:" + hashlib.sha256(b"<ok/>").hexdigest()
    assert (report["type"], report["sizeBytes"], report["driver"]) == ("file", 5, "filesystem")
    assert refs["dist"]["type"] == "directory"
    assert refs["dist"]["contentType"] == "application/gzip"


def test_the_running_report_carries_the_store_snapshot(service, reporter):
    produce(service, FS_STORE)
    assert reporter.reports[0]["phase"] == "Running"
    assert reporter.reports[0]["artifactStore"] == FS_STORE


def test_a_second_run_reads_the_same_bytes_through_artifact_inputs(service):
    refs = by_name(produce(service, FS_STORE))
    final = consume(
        service,
        FS_STORE,
        [(refs["dist"], "in/dist"), (refs["report.xml"], "report.xml")],
        """
set -e
test "$(cat in/dist/app.txt)" = hello
test -x in/dist/bin/run.sh
test "$(cat report.xml)" = '<ok/>'
""",
    )
    assert (final["phase"], final["message"]) == ("Succeeded", "")


def test_a_tampered_artifact_fails_the_consumer_with_prepare_source(service, volumes):
    refs = by_name(produce(service, FS_STORE))
    path = volumes / "artifacts" / refs["report.xml"]["location"]["filesystem"]["path"]
    path.write_bytes(b"<no/>")
    final = consume(service, FS_STORE, [(refs["report.xml"], "report.xml")], "exit 0")
    assert (final["phase"], final["reason"]) == ("Failed", "PrepareSource")
    assert "report.xml" in final["message"]


def test_an_input_path_escaping_the_working_directory_fails_prepare_source(service, config):
    refs = by_name(produce(service, FS_STORE))
    final = consume(service, FS_STORE, [(refs["report.xml"], "../escape.xml")], "exit 0")
    assert (final["phase"], final["reason"]) == ("Failed", "PrepareSource")
    assert not (config.workspace.parent / "escape.xml").exists()


def test_inputs_without_a_store_fail_prepare_source(service):
    ref = by_name(produce(service, FS_STORE))["report.xml"]
    final = consume(service, None, [(ref, "r.xml")], "exit 0")
    assert (final["phase"], final["reason"]) == ("Failed", "PrepareSource")
    assert "no artifactStore" in final["message"]


def test_invalid_outputs_fail_the_run_naming_the_key(service):
    final = service.execute_run(make_payload('echo "bad key=1" >> "$KRUNTIME_OUTPUTS"'))
    assert (final["phase"], final["reason"]) == ("Failed", "OutputsInvalid")
    too_big = service.execute_run(
        make_payload('printf "big=%09000d\\n" 0 >> "$KRUNTIME_OUTPUTS"', uid="other-uid")
    )
    assert (too_big["phase"], too_big["reason"]) == ("Failed", "OutputsTooLarge")
    assert "big" in too_big["message"]


@pytest.mark.parametrize(
    "swap",
    [
        'ln -sf "$SECRET" "$KRUNTIME_OUTPUTS"',
        'rm "$KRUNTIME_OUTPUTS" && mkfifo "$KRUNTIME_OUTPUTS"',
        'ln -f "$SECRET" "$KRUNTIME_OUTPUTS"',
    ],
    ids=["symlink", "fifo", "hard-link"],
)
def test_outputs_swapped_for_another_file_fail_the_run_outputs_invalid(service, tmp_path, swap):
    secret = tmp_path / "secret_key"
    secret.write_text("SECRET_KEY=hunter2\n")
    final = service.execute_run(make_payload(f'SECRET="{secret}"; {swap}'))
    assert (final["phase"], final["reason"]) == ("Failed", "OutputsInvalid")
    assert "hunter2" not in json.dumps(final)


def test_a_symlinked_artifact_fails_the_run_artifact_invalid(service, volumes):
    final = service.execute_run(
        make_payload('ln -s /etc/passwd "$KRUNTIME_ARTIFACTS_DIR/passwd"', artifactStore=FS_STORE)
    )
    assert (final["phase"], final["reason"]) == ("Failed", "ArtifactInvalid")
    assert not (volumes / "artifacts" / "namespaces").exists() or not any(
        (volumes / "artifacts").rglob("passwd")
    )


def test_artifacts_without_a_store_fail_the_run_instead_of_vanishing(service):
    final = service.execute_run(make_payload('echo x > "$KRUNTIME_ARTIFACTS_DIR/out.txt"'))
    assert (final["phase"], final["reason"]) == ("Failed", "ArtifactInvalid")
    assert "out.txt" in final["message"]


def test_a_failed_step_uploads_nothing(service, volumes):
    final = service.execute_run(
        make_payload(
            'echo a=1 >> "$KRUNTIME_OUTPUTS"; echo x > "$KRUNTIME_ARTIFACTS_DIR/o"; exit 4',
            artifactStore=FS_STORE,
        )
    )
    assert (final["phase"], final["exitCode"]) == ("Failed", 4)
    assert "outputs" not in final and "artifactRefs" not in final
    assert not any(volumes.rglob("o"))


def test_a_short_log_rides_on_the_final_report(service, reporter):
    final = service.execute_run(make_payload("echo one; echo two >&2"))
    assert reporter.log_text() == "one\ntwo\n"
    assert reporter.reports[-1]["log"]["text"] == "one\ntwo\n"
    assert "log" not in final  # neither recorded nor repeated in heartbeats
    assert service.active.recent_reports()[-1] == final


def test_a_long_log_is_shipped_in_chunks_while_it_runs(service, reporter):
    service.execute_run(make_payload("head -c 200000 /dev/zero | tr '\\0' x; echo"))
    assert reporter.log_text() == "x" * 200000 + "\n"
    assert [name for name, _ in reporter.sent].count("scheduling.append_log") >= 3


# --- cancel ---------------------------------------------------------------------------------


def wait_for(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purposes
    with open(f"/proc/{pid}/stat") as handle:
        return handle.read().split()[2] != "Z"


def test_cancel_kills_the_running_step_and_every_child(service, reporter, config):
    pids = config.workspace / "pids"
    script = f"""
sleep 300 & echo $! >> {pids}
(trap '' TERM; sleep 300) & echo $! >> {pids}
echo $$ >> {pids}
wait
"""
    payload = make_payload(script)
    worker = threading.Thread(target=service.execute_run, args=(payload,))
    worker.start()
    wait_for(lambda: pids.exists() and len(pids.read_text().split()) == 3)
    assert service.cancel_run(payload) is None  # the kill happens in the executing thread
    worker.join(15)
    assert not worker.is_alive()
    final = reporter.reports[-1]
    assert (final["phase"], final["reason"]) == ("Cancelled", "Cancelled")
    for pid in map(int, pids.read_text().split()):
        assert not alive(pid), f"process {pid} survived the cancel"


def test_a_cancel_before_the_start_means_it_never_runs(service, reporter, config):
    marker = config.workspace / "ran"
    payload = make_payload(f"touch {marker}")
    final = service.cancel_run(payload)
    assert (final["phase"], final["reason"]) == ("Cancelled", "Cancelled")
    assert final["startTime"] is None
    assert service.execute_run(payload) == final  # the late dispatch re-sends, never runs
    assert not marker.exists()


def test_a_cancel_after_the_end_re_sends_the_final_report(service, reporter):
    payload = make_payload("exit 0")
    done = service.execute_run(payload)
    assert service.cancel_run(payload) == done
    assert reporter.reports[-1] == done


def test_a_cancel_for_another_pod_is_ignored(service, reporter):
    assert service.cancel_run(make_payload(pod=("pod-b", "uid-pod-b"))) is None
    assert reporter.reports == []


# --- the same through S3 (moto's server over real HTTP) --------------------------------------


@pytest.fixture
def s3_store(s3_endpoint, tmp_path, config):
    secrets = tmp_path / "secrets" / "s3-creds"
    secrets.mkdir(parents=True)
    (secrets / "accessKeyID").write_text("test-key\n")
    (secrets / "secretAccessKey").write_text("test-secret\n")
    client = boto3.client(
        "s3",
        endpoint_url=s3_endpoint,
        region_name="us-east-1",
        aws_access_key_id="test-key",
        aws_secret_access_key="test-secret",
    )
    client.create_bucket(Bucket="artifacts")
    spec = {
        "driver": "s3",
        "s3": {
            "bucket": "artifacts",
            "prefix": "ci",
            "region": "us-east-1",
            "endpoint": s3_endpoint,
            "forcePathStyle": True,
            "credentialsSecretName": "s3-creds",
        },
    }
    return spec, client, tmp_path / "secrets"


def test_the_same_round_trip_through_s3(config, reporter, clock, s3_store):
    spec, client, secrets = s3_store
    service = RunService(replace(config, secrets_dir=secrets), reporter, clock=clock, grace=1.0)
    refs = by_name(produce(service, spec))
    assert refs["dist"]["driver"] == "s3"
    assert refs["dist"]["location"] == {
        "s3": {"bucket": "artifacts", "key": "ci/namespaces/ci/runs/producer-uid/dist"}
    }
    body = client.get_object(
        Bucket="artifacts", Key="ci/namespaces/ci/runs/producer-uid/report.xml"
    )["Body"].read()
    assert body == b"<ok/>"
    final = consume(
        service,
        spec,
        [(refs["dist"], "in/dist")],
        'set -e; test "$(cat in/dist/app.txt)" = hello; test -x in/dist/bin/run.sh',
    )
    assert (final["phase"], final["message"]) == ("Succeeded", "")


# --- secret masking -------------------------------------------------------------------------

SECRET = "wJalrXUtnFEMI-K7MDENG"


def test_values_of_the_pods_mounted_secrets_are_masked_in_log_and_outputs(
    config, reporter, clock, tmp_path
):
    secrets = tmp_path / "secrets"
    (secrets / "s3-credentials").mkdir(parents=True)
    (secrets / "s3-credentials" / "secretAccessKey").write_text(SECRET + "\n")
    key_file = secrets / "s3-credentials" / "secretAccessKey"
    service = RunService(replace(config, secrets_dir=secrets), reporter, clock=clock, grace=1.0)
    script = f"""
    KEY=$(cat {key_file})
    echo "key=$KEY"
    printf 'user:%s' "$KEY" | base64
    head -c 65530 /dev/zero | tr '\\0' x; echo "$KEY"
    echo "token=$KEY" >> "$KRUNTIME_OUTPUTS"
    echo "plain=visible" >> "$KRUNTIME_OUTPUTS"
    """
    final = service.execute_run(make_payload(script, uid="masked-uid"))
    assert final["phase"] == "Succeeded"
    shipped = reporter.log_text()
    assert SECRET not in shipped
    assert shipped.count("***") == 3
    assert "key=***\n" in shipped
    assert final["outputs"] == {"token": "***", "plain": "visible"}
    for path in config.workspace.parent.rglob("*"):
        if path.is_file() and not path.is_relative_to(secrets):
            assert SECRET.encode() not in path.read_bytes(), path


def test_without_mounted_secrets_nothing_is_masked(service, reporter):
    service.execute_run(make_payload(f"echo {SECRET}"))
    assert reporter.log_text() == SECRET + "\n"
