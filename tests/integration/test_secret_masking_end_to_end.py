"""Issue 27's "a Secret value appears in no log", on ``manage.py up`` with PostgreSQL and Redis:
a Job whose env takes a value from a Secret (secretKeyRef) and a Run on a Runtime whose pods
mount an S3 credentials Secret both print their secret; each print is *** in the logs the API
serves, and the value is in no stored log chunk, no file of the data dir (but the pod's
mounted Secret volume itself), not in a ``pg_dump`` of the database (Secret data encrypted at
rest), not in Redis, and not in the log of ``up``."""

from __future__ import annotations

import base64
import os
import subprocess
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from django.db import connection

from runtimed.masking import patterns
from tests.helpers.live import API, RUNTIME, phase, ready_pods, script_run
from tests.helpers.waiting import wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processes]
GROUP = "/apis/execution.ayatori.ddupan.top/v1alpha1"
JOB_SECRET = "job-pw-Xq7Zr2Lm9Tn4"
RUN_SECRET = "run-key-Vb3Hs8Kd1Wp6"


@pytest.fixture
def up_env() -> dict[str, str]:
    return {"KRUNTIMES_SECRET_ENCRYPTION_KEYS": Fernet.generate_key().decode()}


def secret(name: str, **data: str) -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "stringData": data}


def forms() -> list[bytes]:
    """Each value as it could be stored: itself, its Base64 as the API returns it, and the
    Base64 forms the masker knows."""
    found = set()
    for value in (JOB_SECRET, RUN_SECRET):
        found.add(value.encode())
        found.add(base64.b64encode(value.encode()))
        found.update(patterns([value]))
    return sorted(found)


def holds_secret(data: bytes) -> bool:
    return any(form in data for form in forms())


def create(session, url: str, body: dict) -> None:
    response = session.post(url, json=body, timeout=10)
    assert response.status_code == 201, response.text


def job_manifest() -> dict:
    return {
        "apiVersion": "execution.ayatori.ddupan.top/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "leaky-job"},
        "spec": {
            "steps": [{"name": "print", "run": 'echo "PW=$PW"'}],
            "env": [
                {"name": "PW", "valueFrom": {"secretKeyRef": {"name": "job-creds", "key": "pw"}}}
            ],
        },
    }


def local_class(session, base: str) -> None:
    params = {
        "apiVersion": "execution.ayatori.ddupan.top/v1alpha1",
        "kind": "LocalExecutionParameters",
        "metadata": {"name": "local"},
        "spec": {"maxConcurrentJobs": 2},
    }
    create(session, f"{base}{GROUP}/localexecutionparameters", params)
    job_class = {
        "apiVersion": "execution.ayatori.ddupan.top/v1alpha1",
        "kind": "JobClass",
        "metadata": {
            "name": "default",
            "annotations": {"execution.ayatori.ddupan.top/is-default-job-class": "true"},
        },
        "spec": {
            "controllerName": "execution.ayatori.ddupan.top/local",
            "parametersRef": {
                "group": "execution.ayatori.ddupan.top",
                "kind": "LocalExecutionParameters",
                "name": "local",
            },
            "allowedNamespaces": {},  # every namespace
        },
    }
    create(session, f"{base}{GROUP}/jobclasses", job_class)


def redis_holds_secret(url: str) -> tuple[int, int]:
    """(keys looked at, keys whose name or value holds a secret form)."""
    import redis

    client = redis.Redis.from_url(url)
    keys = leaks = 0
    for key in client.scan_iter(count=500):
        keys += 1
        kind = client.type(key).decode()
        values: list[bytes] = [key]
        if kind == "string":
            values.append(client.get(key) or b"")
        elif kind == "list":
            values.extend(client.lrange(key, 0, -1))
        elif kind == "hash":
            for field, value in client.hgetall(key).items():
                values += [field, value]
        elif kind == "set":
            values.extend(client.smembers(key))
        elif kind == "zset":
            values.extend(client.zrange(key, 0, -1))
        leaks += any(holds_secret(value) for value in values)
    return keys, leaks


def pg_dump_hits() -> tuple[int, int]:
    """(bytes of the dump, occurrences of a secret form in it)."""
    settings = connection.settings_dict
    dump = subprocess.run(
        [
            "pg_dump",
            "-h",
            settings["HOST"] or "127.0.0.1",
            "-p",
            str(settings["PORT"] or 5432),
            "-U",
            settings["USER"] or "postgres",
            settings["NAME"],
        ],
        env={**os.environ, "PGPASSWORD": settings["PASSWORD"] or ""},
        check=True,
        capture_output=True,
    ).stdout
    return len(dump), sum(dump.count(form) for form in forms())


@pytest.mark.parametrize("broker", ["redis"], indirect=True)
def test_a_secret_value_appears_in_no_log_file_database_or_broker(portal_up, tmp_path):
    from scheduling.models import RunLogChunk

    session, base = portal_up
    create(session, f"{base}/api/v1/namespaces/default/secrets", secret("job-creds", pw=JOB_SECRET))
    create(
        session,
        f"{base}/api/v1/namespaces/default/secrets",
        secret("run-creds", accessKeyID="AKIDEXAMPLE01", secretAccessKey=RUN_SECRET),
    )
    local_class(session, base)
    create(session, f"{base}{GROUP}/namespaces/default/jobs", job_manifest())

    store = {  # never reached: the Run leaves no artifact; its pods mount the Secret
        "driver": "s3",
        "s3": {
            "bucket": "none",
            "endpoint": "http://127.0.0.1:9",
            "region": "us-east-1",
            "credentialsSecretName": "run-creds",
        },
    }
    runtime = {**RUNTIME, "spec": {**RUNTIME["spec"], "artifactStore": store}}
    create(session, f"{base}{API}/runtimes", runtime)
    assert wait_until(lambda: ready_pods() == 2, timeout=60), "Runtime Pods never got ready"
    key = '"$KRUNTIME_WORKSPACE/../secrets/run-creds/secretAccessKey"'
    run = script_run("leaky-run", f'echo "key=$(cat {key})"; printf "again %s\\n" "$(cat {key})"')
    create(session, f"{base}{API}/runs", run)

    def job_phase() -> str:
        job = session.get(f"{base}{GROUP}/namespaces/default/jobs/leaky-job", timeout=5).json()
        return job.get("status", {}).get("phase", "")

    job_url = f"{base}{GROUP}/namespaces/default/jobs/leaky-job"
    assert wait_until(lambda: job_phase() in ("Succeeded", "Failed"), timeout=90), session.get(
        job_url, timeout=5
    ).json()
    assert wait_until(lambda: phase(session, base, "leaky-run") in ("Succeeded", "Failed"), 90)
    assert job_phase() == "Succeeded"
    assert phase(session, base, "leaky-run") == "Succeeded"

    job_log = session.get(f"{base}{GROUP}/namespaces/default/jobs/leaky-job/log", timeout=5).text
    run_log = session.get(f"{base}{API}/runs/leaky-run/log", timeout=5).text
    assert "PW=***\n" in job_log and job_log.count("***") == 1, job_log
    assert run_log == "key=***\nagain ***\n", run_log

    chunks = list(RunLogChunk.objects.values_list("text", flat=True))
    chunk_bytes = sum(len(text.encode()) for text in chunks)
    assert chunks and not any(holds_secret(text.encode()) for text in chunks)

    data_dir = tmp_path / "data"
    files = checked = 0
    for path in data_dir.rglob("*"):
        if not path.is_file():
            continue
        files += 1
        if "secrets" in path.relative_to(data_dir).parts[:-1]:
            continue  # the pods' mounted Secret volume: the credentials themselves
        checked += 1
        assert not holds_secret(path.read_bytes()), path

    dump_bytes, dump_hits = pg_dump_hits()
    redis_keys, redis_hits = redis_holds_secret(os.environ["CELERY_BROKER_URL"])
    up_log = Path(tmp_path / "up.log").read_bytes()
    print(
        f"\nmasked: Job log {job_log.count('***')}, Run log {run_log.count('***')}; "
        f"{len(chunks)} log chunks ({chunk_bytes} bytes) and {checked} of {files} files of the "
        f"data dir hold no value; pg_dump {dump_bytes} bytes: {dump_hits} hits; "
        f"Redis {redis_keys} keys: {redis_hits} hits; up log {len(up_log)} bytes: "
        f"{sum(up_log.count(form) for form in forms())} hits"
    )
    assert dump_hits == 0
    assert redis_hits == 0
    assert not holds_secret(up_log)
