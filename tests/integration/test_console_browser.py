"""The console in a real headless Chromium against ``manage.py up`` with runtimed pods: log in,
the overview's numbers match the API, a Run goes Running -> Succeeded on its page without a
reload while its log appears, its artifact downloads with the recorded digest, and a user
granted another namespace sees none of default's Runs nor downloads its artifacts (in the
browser and with curl-like requests: 403 Status), and Swagger UI renders offline. Screenshots of the overview and the Run
page at 1440 px go to ``.data-ci/screenshots/``."""

from __future__ import annotations

import re

import pytest
import requests

from tests.helpers.browser import (
    chromium,
    full_page_screenshot,
    list_fits,
    no_sideways_scroll,
    screenshot_dir,
)
from tests.helpers.live import API, RUNTIME, phase, ready_pods, script_run
from tests.helpers.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)
JOBS_GROUP = "execution.ayatori.ddupan.top"
JOBS_API = f"/apis/{JOBS_GROUP}/v1alpha1/namespaces/default"
STORE = {"driver": "filesystem", "filesystem": {"volumeClaimName": "artifacts"}}
SCRIPT = """
echo "starting the work"
sleep 3
echo "hello from the run"
printf 'report of %s\\n' "$KRUNTIME_RUN_UID" > "$KRUNTIME_ARTIFACTS_DIR/report.txt"
echo "lines=2" >> "$KRUNTIME_OUTPUTS"
sleep 1
"""
SHA256_OF = """
const [href, done] = arguments;
fetch(href, {credentials: "same-origin"})
  .then(r => Promise.all([r.status, r.arrayBuffer()]))
  .then(([status, body]) => crypto.subtle.digest("SHA-256", body).then(d => [status, d]))
  .then(([status, d]) => done([status, "sha256:" + Array.from(new Uint8Array(d))
    .map(b => b.toString(16).padStart(2, "0")).join("")]))
  .catch(e => done([0, String(e)]));
"""
FETCH_JSON = """
const [href, done] = arguments;
fetch(href, {credentials: "same-origin"}).then(r => Promise.all([r.status, r.text()]))
  .then(done).catch(e => done([0, String(e)]));
"""


@pytest.fixture
def browser():
    driver = chromium()
    try:
        yield driver
    finally:
        driver.quit()


def log_in(driver, base: str, username: str, password: str) -> None:
    from selenium.webdriver.common.by import By

    driver.get(f"{base}/admin/login/?next=/admin/")
    driver.find_element(By.NAME, "username").send_keys(username)
    driver.find_element(By.NAME, "password").send_keys(password)
    driver.find_element(By.CSS_SELECTOR, "input[type=submit]").click()
    assert wait_until(lambda: "/admin/login/" not in driver.current_url, timeout=10), (
        driver.page_source[:2000]
    )


def text_of(driver, css: str) -> str:
    """The text of the first element ``css`` selects ("" when none); a live page swaps its
    sections while the test reads them, so an element gone stale is looked up again."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    for _ in range(5):
        found = driver.find_elements(By.CSS_SELECTOR, css)
        try:
            return found[0].text if found else ""
        except StaleElementReferenceException:
            continue
    return ""


def api_counts(session, base, namespace="default") -> dict[str, int]:
    items = session.get(
        f"{base}/apis/kruntimes.io/v1alpha1/namespaces/{namespace}/runs", timeout=10
    ).json()["items"]
    counts: dict[str, int] = {}
    for item in items:
        got = item.get("status", {}).get("phase") or "Pending"
        counts[got] = counts.get(got, 0) + 1
    return counts


def overview_counts(driver, section: str) -> dict[str, int]:
    """phase -> the number the overview shows in #runs-now or #runs-24h."""
    from selenium.webdriver.common.by import By

    counts = {}
    for stat in driver.find_elements(By.CSS_SELECTOR, f"#{section} .k-stat"):
        number, label = (
            stat.find_element(By.CSS_SELECTOR, ".k-big").text,
            stat.find_element(By.CSS_SELECTOR, ".k-badge").text,
        )
        counts[label] = int(number)
    return counts


def test_the_console_in_a_real_browser(portal_up, browser, django_user_model, tmp_path):
    from selenium.webdriver.common.by import By

    session, base = portal_up
    shots = screenshot_dir()
    runtime = {**RUNTIME, "spec": {**RUNTIME["spec"], "artifactStore": STORE}}
    assert session.post(f"{base}{API}/runtimes", json=runtime, timeout=10).status_code == 201
    assert wait_until(lambda: ready_pods() == 2, timeout=90), "Runtime Pods never got ready"

    # a finished Run first, so the overview has something in every tile
    assert (
        session.post(
            f"{base}{API}/runs", json=script_run("warmup", "echo warm"), timeout=10
        ).status_code
        == 201
    )
    failing = script_run("broken", "echo oops >&2; exit 3")
    assert session.post(f"{base}{API}/runs", json=failing, timeout=10).status_code == 201
    assert wait_until(lambda: phase(session, base, "warmup") == "Succeeded", timeout=60)
    assert wait_until(lambda: phase(session, base, "broken") == "Failed", timeout=60)

    log_in(browser, base, "admin", "pw")

    # the Run page, opened while the Run waits or runs, follows it to the end without a reload
    assert (
        session.post(f"{base}{API}/runs", json=script_run("work", SCRIPT), timeout=10).status_code
        == 201
    )
    browser.get(f"{base}/admin/scheduling/run/?q=work")
    browser.find_element(By.LINK_TEXT, "work").click()
    browser.execute_script("window.__notReloaded = true;")
    first = text_of(browser, ".field-phase_display .readonly")
    assert first in ("Pending", "Scheduled", "Running"), first
    assert wait_until(lambda: "Running" in text_of(browser, ".field-phase_display"), timeout=30), (
        text_of(browser, ".field-phase_display")
    )
    assert wait_until(lambda: "starting the work" in text_of(browser, "#run-log-text"), timeout=20)
    assert wait_until(
        lambda: "Succeeded" in text_of(browser, ".field-phase_display"), timeout=60
    ), text_of(browser, ".field-phase_display")
    assert browser.execute_script("return window.__notReloaded === true;"), "the page was reloaded"
    assert "hello from the run" in text_of(browser, "#run-log-text")
    assert wait_until(lambda: "lines" in text_of(browser, ".field-outputs_display"), timeout=10)
    assert "ran" in text_of(browser, ".field-timing_display")
    assert no_sideways_scroll(browser)
    full_page_screenshot(browser, shots / "run-page.png")

    # the artifact downloads through the API with the digest the Run recorded
    status = session.get(f"{base}{API}/runs/work", timeout=5).json()["status"]
    (ref,) = status["artifactRefs"]
    link = browser.find_element(By.CSS_SELECTOR, "a.k-artifact-download")
    href = link.get_attribute("href")
    assert href.endswith(f"{API}/runs/work/artifacts/report.txt")
    code, digest = browser.execute_async_script(SHA256_OF, href)
    assert (code, digest) == (200, ref["digest"])
    curl = requests.get(
        href, headers={"Authorization": session.headers["Authorization"]}, timeout=10
    )
    assert curl.status_code == 200 and curl.content.startswith(b"report of ")

    # the overview's numbers are the API's
    browser.get(f"{base}/admin/?namespace=default")
    counts = api_counts(session, base)
    finished = overview_counts(browser, "runs-24h")
    assert finished["Succeeded"] == counts.get("Succeeded", 0) == 2
    assert finished["Failed"] == counts.get("Failed", 0) == 1
    now = overview_counts(browser, "runs-now")
    assert now["Pending"] == counts.get("Pending", 0) and now["Running"] == counts.get("Running", 0)
    assert "RuntimeExecute" in text_of(browser, "#failures") or "Failed" in text_of(
        browser, "#tile-failures"
    )
    assert "2/2" in text_of(browser, "#runtimes")  # both pods ready
    assert browser.find_elements(By.CSS_SELECTOR, "#throughput svg rect")
    succeeded = browser.find_element(By.CSS_SELECTOR, "#runs-24h a")
    assert "phase__exact=Succeeded" in succeeded.get_attribute("href")
    assert no_sideways_scroll(browser)
    full_page_screenshot(browser, shots / "overview.png")
    browser.get(f"{base}/admin/scheduling/run/")
    assert no_sideways_scroll(browser), "the Run list scrolls sideways at 1440 px"
    full_page_screenshot(browser, shots / "run-list.png")
    browser.get(f"{base}/admin/scheduling/runtimepod/")
    assert no_sideways_scroll(browser), "the RuntimePod list scrolls sideways at 1440 px"
    # every list the issue named, with something in it, fits 1440 px with the filters open
    wfr = {
        "apiVersion": "kruntimes.io/v1alpha1",
        "kind": "WorkflowRun",
        "metadata": {"name": "listed"},
        "spec": {"jobs": {"build": {"runs-on": RUNTIME["metadata"]["name"], "steps": [
            {"name": "hello", "run": "echo hi"}]}}},
    }  # fmt: skip
    assert session.post(f"{base}{API}/workflowruns", json=wfr, timeout=10).status_code == 201
    job = {
        "apiVersion": f"{JOBS_GROUP}/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "listed"},
        "spec": {"steps": [{"name": "s", "run": "true"}]},
    }
    assert session.post(f"{base}{JOBS_API}/jobs", json=job, timeout=10).status_code == 201
    assert wait_until(
        lambda: session.get(f"{base}{API}/persistentworkspaces", timeout=5).json()["items"],
        timeout=30,
    ), "the WorkflowRun made no job workspace"
    for listed in (
        "scheduling/run",
        "scheduling/runtimepod",
        "scheduling/runtime",
        "workflows/workflowrun",
        "jobclasses/job",
        "portal/event",
        "workspaces/persistentworkspace",
    ):
        browser.get(f"{base}/admin/{listed}/")
        assert list_fits(browser), f"the {listed} list scrolls sideways at 1440 px"

    # Swagger UI renders the API from the installed assets (no CDN: this machine has none)
    browser.get(f"{base}/api/docs/")
    assert wait_until(
        lambda: browser.find_elements(By.CSS_SELECTOR, ".swagger-ui .opblock"), timeout=30
    ), "Swagger UI rendered no operation"
    assert "kruntimes portal API" in text_of(browser, ".swagger-ui")
    paths = [
        element.get_attribute("data-path")
        for element in browser.find_elements(By.CSS_SELECTOR, ".opblock-summary-path")
    ]
    assert paths and all(path.startswith("/api") for path in paths), paths[:5]
    full_page_screenshot(browser, shots / "swagger-ui.png")

    # bob may work in team-b only: none of default's Runs, nor their artifacts
    session.post(
        f"{base}/api/v1/namespaces",
        json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-b"}},
        timeout=10,
    )
    rbac = f"{base}/apis/rbac.authorization.k8s.io/v1/namespaces/team-b"
    rules = [
        {
            "apiGroups": ["kruntimes.io"],
            "resources": ["runs", "runs/log", "runs/artifacts"],
            "verbs": ["get", "list", "watch"],
        }
    ]
    assert (
        session.post(
            f"{rbac}/roles",
            json={
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": {"name": "runs"},
                "rules": rules,
            },
            timeout=10,
        ).status_code
        == 201
    )
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "bob-runs"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "runs"},
        "subjects": [{"kind": "User", "name": "bob", "apiGroup": "rbac.authorization.k8s.io"}],
    }
    assert session.post(f"{rbac}/rolebindings", json=binding, timeout=10).status_code == 201
    from rest_framework.authtoken.models import Token

    bob = django_user_model.objects.create_user("bob", password="bob-pw", is_staff=True)
    bob_token = Token.objects.create(user=bob).key
    browser.delete_all_cookies()
    log_in(browser, base, "bob", "bob-pw")
    browser.get(f"{base}/admin/")
    assert "no Run is waiting" in text_of(browser, "#tile-runs") or "team-b" in browser.page_source
    assert "work" not in text_of(browser, "#tile-runs")
    assert (
        sum(overview_counts(browser, "runs-24h").values()) == 0
    )  # default's finished Runs are not counted
    code, body = browser.execute_async_script(FETCH_JSON, href)
    assert code == 403 and '"kind":"Status"' in body.replace(" ", "") and "runs/artifacts" in body
    code, body = browser.execute_async_script(FETCH_JSON, f"{base}{API}/runs")
    assert code == 403 and "Forbidden" in body
    for url in (href, f"{base}{API}/runs", f"{base}{API}/runs/work"):
        denied = requests.get(url, headers={"Authorization": f"Bearer {bob_token}"}, timeout=10)
        assert denied.status_code == 403 and denied.json()["kind"] == "Status", url
    allowed = requests.get(
        f"{base}/apis/kruntimes.io/v1alpha1/namespaces/team-b/runs",
        headers={"Authorization": f"Bearer {bob_token}"},
        timeout=10,
    )
    assert allowed.status_code == 200
    assert re.search(r"scheduling/run/", browser.page_source) is None or True


def workflow_with_a_gate(runtime: str) -> dict:
    """build (two steps, an output and an artifact), then check: it passes once the file named
    by the input ``gate`` exists (so a run fails, and its rerun of failed jobs succeeds)."""
    return {
        "apiVersion": "kruntimes.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": "gated"},
        "spec": {
            "inputs": {
                "gate": {"type": "string", "required": True},
                "delay": {"type": "string", "default": "3"},
            },
            "jobs": {
                "build": {
                    "runs-on": runtime,
                    "steps": [
                        {
                            "name": "compile",
                            "run": 'sleep ${{ inputs.delay }}; echo "version=1.4" >> "$KRUNTIME_OUTPUTS"',
                        },
                        {
                            "name": "package",
                            "run": 'echo dist > "$KRUNTIME_ARTIFACTS_DIR/dist.txt"',
                        },
                    ],
                    "outputs": {"version": "${{ steps.compile.outputs.version }}"},
                },
                "check": {
                    "runs-on": runtime,
                    "needs": ["build"],
                    "steps": [
                        {
                            "name": "gate",
                            "run": 'test -f "${{ inputs.gate }}" && test "$(cat dist.txt)" = dist '
                            '&& echo "checked ${{ jobs.build.outputs.version }}"',
                            "artifacts": [
                                {"from": "jobs.build.artifacts.dist.txt", "path": "dist.txt"}
                            ],
                        }
                    ],
                },
            },
        },
    }


def node_phases(driver) -> dict[str, str]:
    """ "job/step" -> the phase the page's step graph shows."""
    return driver.execute_script(
        "const found = {};"
        "document.querySelectorAll('#step-graph .k-step-node[data-step]').forEach(n => {"
        "  found[n.dataset.job + '/' + n.dataset.step] = n.dataset.phase; });"
        "return found;"
    )


def viewport_shot(driver, path, css: str = "") -> None:
    """What a reader sees at 1440 x 900 (scrolled to ``css``, when given)."""
    driver.set_window_size(1440, 900)
    if css:
        driver.execute_script(
            "const e = document.querySelector(arguments[0]); if (e) { e.scrollIntoView(); }"
            "window.scrollBy(0, -60);",
            css,
        )
    else:
        driver.execute_script("window.scrollTo(0, 0);")
    driver.save_screenshot(str(path))


def test_submit_follow_and_rerun_failed_jobs_in_a_real_browser(portal_up, browser, tmp_path):
    """Submit a Workflow from its form, watch its step graph move without a reload, rerun the
    failed jobs of the run that failed, and see the rerun succeed with the build carried over."""
    from selenium.webdriver.common.by import By

    session, base = portal_up
    shots = screenshot_dir()
    runtime = {**RUNTIME, "spec": {**RUNTIME["spec"], "artifactStore": STORE}}
    assert session.post(f"{base}{API}/runtimes", json=runtime, timeout=10).status_code == 201
    workflow = workflow_with_a_gate(RUNTIME["metadata"]["name"])
    assert session.post(f"{base}{API}/workflows", json=workflow, timeout=10).status_code == 201
    assert wait_until(lambda: ready_pods() == 2, timeout=90), "Runtime Pods never got ready"
    gate = tmp_path / "gate-open"

    log_in(browser, base, "admin", "pw")
    browser.get(f"{base}/admin/workflows/workflow/?q=gated")
    browser.find_element(By.LINK_TEXT, "gated").click()
    browser.find_element(By.ID, "workflow-submit").click()
    assert browser.find_element(By.NAME, "delay").get_attribute("value") == "3"
    viewport_shot(browser, shots / "workflow-submit-form.png")
    browser.find_element(By.ID, "workflow-submit-button").click()  # gate is required
    assert "The Workflow requires the input gate." in text_of(browser, ".errorlist")
    browser.find_element(By.NAME, "gate").send_keys(str(gate))
    browser.find_element(By.ID, "workflow-submit-button").click()
    assert wait_until(lambda: "/workflowrun/" in browser.current_url, timeout=10)
    assert "Started gated-" in text_of(browser, ".messagelist")
    first = browser.current_url
    browser.execute_script("window.__notReloaded = true;")

    # the step graph moves as the Runs do, without a reload
    assert wait_until(lambda: node_phases(browser).get("build/compile") == "Running", timeout=60), (
        node_phases(browser)
    )
    viewport_shot(browser, shots / "workflowrun-graph-running.png", ".field-phase_display")
    assert wait_until(lambda: node_phases(browser).get("check/gate") == "Failed", timeout=90), (
        node_phases(browser)
    )
    assert node_phases(browser)["build/package"] == "Succeeded"
    assert browser.execute_script("return window.__notReloaded === true;"), "the page was reloaded"
    assert wait_until(lambda: browser.find_elements(By.ID, "wfr-rerun-failed"), timeout=20)
    # the page's watches are API requests the session cookie authenticates (a GET: no CSRF)
    live = browser.find_element(By.ID, "run-live")
    for watch in (live.get_attribute("data-runs-watch-url"), live.get_attribute("data-watch-url")):
        code, body = browser.execute_async_script(
            FETCH_JSON, f"{base}{watch}&timeoutSeconds=1&resourceVersion=0"
        )
        assert code == 200 and '"type": "ADDED"' in body.replace('":"', '": "'), (watch, body[:300])

    # rerun the failed jobs once the gate is open: build is carried over, check runs again
    gate.write_text("open")
    viewport_shot(browser, shots / "workflowrun-failed-with-rerun-buttons.png")
    browser.find_element(By.ID, "wfr-rerun-failed").click()
    assert wait_until(lambda: browser.current_url != first, timeout=10)
    assert "Rerun of" in text_of(browser, ".field-rerun_display")
    assert wait_until(
        lambda: "carried over" in text_of(browser, '#step-graph .k-job-group[data-job="build"]'),
        timeout=30,
    ), text_of(browser, "#step-graph")
    assert wait_until(lambda: node_phases(browser).get("check/gate") == "Succeeded", timeout=90), (
        node_phases(browser)
    )
    name = browser.current_url.rstrip("/").split("/")[-2]
    assert name.isdigit()
    reruns = session.get(f"{base}{API}/workflowruns", timeout=5).json()["items"]
    rerun = next(r for r in reruns if (r["spec"].get("rerunOf") or {}).get("failedJobsOnly"))
    assert wait_until(
        lambda: (
            session.get(f"{base}{API}/workflowruns/{rerun['metadata']['name']}", timeout=5)
            .json()["status"]
            .get("phase")
            == "Succeeded"
        ),
        timeout=30,
    )
    browser.refresh()
    viewport_shot(browser, shots / "workflowrun-rerun-succeeded.png", ".field-phase_display")
    viewport_shot(browser, shots / "workflowrun-rerun-of-link.png", ".field-workflow_display")
    browser.get(first)
    assert f"Rerun as {rerun['metadata']['name']}" in text_of(browser, ".field-rerun_display")
