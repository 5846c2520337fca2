"""Pod exec over the websocket, through kubernetes.stream as the Job adapter uses it."""

from __future__ import annotations

import io
import json
import os
import tarfile
import time

import pytest
from kubernetes.client.exceptions import ApiException
from kubernetes.stream import stream

POD = {
    "metadata": {"name": "p"},
    "spec": {
        "containers": [
            {
                "name": "main",
                "image": "x",
                "env": [
                    {"name": "GREETING", "value": "hi"},
                    {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                    {"name": "POD_UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}},
                ],
            }
        ]
    },
}


@pytest.fixture
def pod(core):
    return core.create_namespaced_pod("default", POD)


def execute(core, command, name="p", **kwargs):
    return stream(
        core.connect_get_namespaced_pod_exec,
        name,
        "default",
        command=command,
        stdin=kwargs.pop("stdin", False),
        stdout=True,
        stderr=True,
        tty=False,
        _preload_content=False,
        **kwargs,
    )


def run(client, timeout=10):
    client.run_forever(timeout=timeout)
    return client


def test_stdout_stderr_and_success_on_v5(core, pod):
    client = run(execute(core, ["sh", "-ec", "echo out; echo err >&2; echo $GREETING $POD_NAME"]))
    assert client.subprotocol == "v5.channel.k8s.io"
    assert client.read_stdout() == "out\nhi p\n"
    assert client.read_stderr() == "err\n"
    assert client.returncode == 0


def test_the_downward_api_uid_is_the_pods(core, pod):
    client = run(execute(core, ["sh", "-c", "printf %s $POD_UID"]))
    assert client.read_stdout() == pod.metadata.uid


def test_a_non_zero_exit_is_the_api_servers_status(core, pod):
    client = execute(core, ["sh", "-c", "exit 3"])
    client.run_forever(timeout=10)
    status = json.loads(client.read_channel(3))
    assert status == {
        "metadata": {},
        "status": "Failure",
        "message": "command terminated with non-zero exit code: exit status 3",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": "3"}]},
    }
    client = run(execute(core, ["sh", "-c", "exit 3"]))
    assert client.returncode == 3


def test_stdin_streams_to_the_process_and_close_channel_is_eof(core, pod):
    client = execute(core, ["sh", "-c", "cat; echo done"], stdin=True)
    client.write_stdin("line one\n")
    client.write_stdin("line two\n")
    client.close_channel(0)
    run(client)
    assert client.read_stdout() == "line one\nline two\ndone\n"
    assert client.returncode == 0


def test_v4_is_spoken_when_the_client_asks_for_it(core, pod):
    client = run(
        execute(
            core,
            ["sh", "-c", "echo v4; exit 4"],
            _headers={"sec-websocket-protocol": "v4.channel.k8s.io"},
        )
    )
    assert client.subprotocol == "v4.channel.k8s.io"
    assert client.read_stdout() == "v4\n"
    assert client.returncode == 4


def test_paths_under_work_outputs_steps_map_into_the_pod_root(core, pod, kube):
    root = kube.pod_root("default", "p")
    client = run(
        execute(
            core,
            [
                "sh",
                "-ec",
                "echo data > /work/a.txt; mkdir -p /outputs/o; cp /work/a.txt /outputs/o/; pwd",
            ],
        )
    )
    assert client.returncode == 0, client.read_stderr()
    assert client.read_stdout() == f"{root}\n"
    assert (root / "work" / "a.txt").read_text() == "data\n"
    assert (root / "outputs" / "o" / "a.txt").read_text() == "data\n"


def test_a_tar_round_trip_through_work_and_outputs(core, pod, kube):
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        payload = b"print('checkout')\n" * 5000  # larger than one frame
        info = tarfile.TarInfo("src/main.py")
        info.size = len(payload)
        tar.addfile(info, io.BytesIO(payload))
    upload = execute(core, ["tar", "xf", "-", "-C", "/work"], stdin=True, binary=True)
    data = archive.getvalue()
    for start in range(0, len(data), 16384):
        upload.write_stdin(data[start : start + 16384])
    upload.close_channel(0)
    run(upload)
    assert upload.returncode == 0, upload.read_stderr()
    root = kube.pod_root("default", "p")
    assert (root / "work" / "src" / "main.py").read_bytes() == payload

    copy = run(execute(core, ["sh", "-ec", "cp -r /work/src /outputs/; echo ok"]))
    assert copy.returncode == 0
    download = run(execute(core, ["tar", "cf", "-", "-C", "/outputs", "."], binary=True))
    assert download.returncode == 0
    with tarfile.open(fileobj=io.BytesIO(download.read_stdout()), mode="r") as tar:
        assert tar.extractfile("./src/main.py").read() == payload


def test_a_closed_websocket_kills_the_process(core, pod, kube):
    root = kube.pod_root("default", "p")
    client = execute(core, ["sh", "-c", "echo $$ > /work/pid; sleep 30; touch /work/finished"])
    deadline = time.monotonic() + 5
    while not (root / "work" / "pid").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    pid = int((root / "work" / "pid").read_text())
    client.close()
    deadline = time.monotonic() + 5

    def alive() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True

    while alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive()
    assert not (root / "work" / "finished").exists()


def test_exec_into_a_missing_pod_is_404(core):
    with pytest.raises(ApiException) as caught:
        execute(core, ["true"], name="ghost")
    assert "404" in str(caught.value.reason) and 'pods \\"ghost\\" not found' in str(
        caught.value.reason
    )


def test_exec_into_a_pending_or_completed_pod_is_400(core, kube):
    kube.workloads.ready_delay = 30
    core.create_namespaced_pod("default", POD)
    with pytest.raises(ApiException) as caught:
        execute(core, ["true"])
    assert "400" in str(caught.value.reason) and "does not have a host assigned" in str(
        caught.value.reason
    )
    kube.workloads.ready_delay = 0
    core.create_namespaced_pod("default", {**POD, "metadata": {"name": "done"}})
    kube.succeed_pod("default", "done")
    with pytest.raises(ApiException) as caught:
        execute(core, ["true"], name="done")
    assert "current phase is Succeeded" in str(caught.value.reason)


def test_a_deleted_pod_takes_its_root_with_it(core, pod, kube):
    run(execute(core, ["sh", "-c", "touch /work/x"]))
    root = kube.pod_root("default", "p")
    assert (root / "work" / "x").exists()
    core.delete_namespaced_pod("p", "default")
    assert not root.exists()


def test_a_pod_of_two_containers_needs_a_valid_container_name(core):
    two = {
        "metadata": {"name": "two"},
        "spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "x"}]},
    }
    core.create_namespaced_pod("default", two)
    with pytest.raises(ApiException) as caught:
        execute(core, ["true"], name="two")
    assert "a container name must be specified for pod two, choose one of: [a b]" in str(
        caught.value.reason
    )
    with pytest.raises(ApiException) as caught:
        execute(core, ["true"], name="two", container="c")
    assert "container c is not valid for pod two" in str(caught.value.reason)
    assert run(execute(core, ["true"], name="two", container="b")).returncode == 0


def test_a_missing_executable_is_the_runtimes_error_status(core, pod):
    client = run(execute(core, ["no-such-command-here"]))
    status = json.loads(client.read_channel(3))
    assert status["status"] == "Failure" and status["reason"] == "InternalError"
    assert 'exec: "no-such-command-here"' in status["message"]


@pytest.mark.parametrize(
    ("argument", "expected"),
    [
        ("/work", "ROOT/work"),
        ("/work/a", "ROOT/work/a"),
        ("-C/outputs", "-C/outputs"),  # preceded by a word character: not a path of its own
        ("cd /steps/1 && ls /outputs", "cd ROOT/steps/1 && ls ROOT/outputs"),
        ("--dir=/work/x", "--dir=ROOT/work/x"),
        ("/workspace", "/workspace"),
        ("/srv/work", "/srv/work"),
        ("'/work/a b'", "'ROOT/work/a b'"),
    ],
)
def test_the_path_translation_is_exactly_the_documented_one(argument, expected):
    from pathlib import Path

    from tests.helpers.emulator.podexec import translate

    assert translate(argument, Path("ROOT")) == expected
