"""Which Runtime Server a local pod runs: the Runtime's runtime container, read as a cluster
reads it (docs/runtime-server.md), and runtimed's reading of what the provider passes on."""

from __future__ import annotations

import json
import sys

import pytest

from runtimed.config import BUILT_IN_SERVERS, ConfigError, PodConfig
from runtimed.runtime_server.programs import BUILT_IN
from scheduling.providers import local
from scheduling.providers.runtime_server import server_env
from tests.helpers.records import make_runtime


def spec(**container) -> dict:
    return {"template": {"spec": {"containers": [{"name": "runtime", **container}]}}}


@pytest.mark.parametrize(
    ("image", "server"),
    [
        ("ghcr.io/kruntimes/runtime-python:latest", "python"),
        ("runtime-python@sha256:abc", "python"),
        ("python:3.12", "python"),
        ("ghcr.io/kruntimes/runtime-bash:latest", "bash"),
        ("bash:5", "bash"),
        ("", "bash"),
    ],
)
def test_without_a_command_the_image_names_the_built_in_server(image, server):
    assert server_env(spec(image=image)) == {"KRUNTIME_RUNTIME_SERVER": server}
    assert server_env({}) == {"KRUNTIME_RUNTIME_SERVER": "bash"}


def test_a_command_and_its_args_are_the_server_python_being_the_portals_own():
    env = server_env(spec(image="x", command=["python", "server.py"], args=["$(ADDR)"]))
    assert json.loads(env["KRUNTIME_RUNTIME_SERVER_COMMAND"]) == [
        sys.executable,
        "server.py",
        "$(ADDR)",
    ]
    other = server_env(spec(image="x", command=["/opt/srv", "--listen"]))
    assert json.loads(other["KRUNTIME_RUNTIME_SERVER_COMMAND"]) == ["/opt/srv", "--listen"]


@pytest.mark.django_db
def test_the_local_pod_env_carries_its_runtimes_choice(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    make_runtime("py", **spec(image="ghcr.io/kruntimes/runtime-python:v1"))
    pod = local.PodIdentity("default", "py", "py-0", "uid-1")
    assert local.pod_env(pod, {"runs": 2})["KRUNTIME_RUNTIME_SERVER"] == "python"


def test_runtimed_reads_the_choice_and_refuses_what_it_cannot_run(tmp_path):
    base = {
        "KRUNTIME_POD_NAME": "p",
        "KRUNTIME_POD_UID": "u",
        "KRUNTIME_POD_NAMESPACE": "ns",
        "KRUNTIME_RUNTIME": "rt",
        "KRUNTIME_WORKSPACE": str(tmp_path / "ws"),
        "KRUNTIMES_BROKER_DIR": str(tmp_path / "broker"),
    }
    assert PodConfig.from_env(base).runtime_server == "bash"
    python = PodConfig.from_env({**base, "KRUNTIME_RUNTIME_SERVER": "python"})
    assert python.runtime_server == "python"
    command = {**base, "KRUNTIME_RUNTIME_SERVER_COMMAND": '["srv", "--x"]'}
    assert PodConfig.from_env(command).runtime_server_command == ("srv", "--x")
    address = {**base, "KRUNTIME_RUNTIME_SERVER_ADDRESS": " 127.0.0.1:9091 "}
    assert PodConfig.from_env(address).runtime_server_address == "127.0.0.1:9091"
    with pytest.raises(ConfigError, match="one of bash, python"):
        PodConfig.from_env({**base, "KRUNTIME_RUNTIME_SERVER": "ruby"})
    with pytest.raises(ConfigError, match="JSON list of strings"):
        PodConfig.from_env({**base, "KRUNTIME_RUNTIME_SERVER_COMMAND": '"srv"'})
    assert tuple(BUILT_IN) == BUILT_IN_SERVERS
