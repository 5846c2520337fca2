"""``krt wf run -f``: a GitHub Actions workflow becomes an inline WorkflowRun; whatever has
no faithful meaning here is refused with its line and key, never dropped."""

from __future__ import annotations

import pytest

from portal.krt import gha

WORKFLOW = """\
name: Build & Ship!
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
        run: make
      - id: version
        name: Work out the version
        run: echo "version=1" >> "$KRUNTIME_OUTPUTS"
      - run: echo unnamed
      - name: Compile it
        run: make again
  ship:
    runs-on: bash
    needs: build
    steps:
      - name: Ship
        env:
          VERSION: ${{ needs.build.outputs.version }}
        run: echo "$VERSION"
"""


def test_a_workflow_becomes_inline_jobs():
    loaded = gha.load(WORKFLOW, "ci.yaml")
    assert loaded.name is None and loaded.generate_from == "build-ship"
    assert loaded.spec == {
        "jobs": {
            "build": {
                "runs-on": "bash",
                "steps": [
                    {"name": "compile-it", "run": "make"},
                    {"name": "version", "run": 'echo "version=1" >> "$KRUNTIME_OUTPUTS"'},
                    {"name": "step-3", "run": "echo unnamed"},
                    {"name": "compile-it-2", "run": "make again"},
                ],
                "outputs": {"version": "${{ steps.version.outputs.version }}"},
            },
            "ship": {
                "runs-on": "bash",
                "needs": ["build"],
                "steps": [
                    {
                        "name": "ship",
                        "run": 'echo "$VERSION"',
                        # GitHub's needs.<job>.outputs is this API's jobs.<job>.outputs
                        "env": {"VERSION": "${{ jobs.build.outputs.version }}"},
                    }
                ],
            },
        }
    }


@pytest.mark.parametrize(
    ("insert_after", "text", "line", "where"),
    [
        (
            "      - name: Compile it\n",
            "        uses: actions/checkout@v4\n",
            12,
            "jobs.build.steps[0].uses",
        ),
        (
            "      - name: Compile it\n",
            "        with: {depth: 1}\n",
            12,
            "jobs.build.steps[0].with",
        ),
        ("      - name: Compile it\n", "        if: always()\n", 12, "jobs.build.steps[0].if"),
        ("      - name: Compile it\n", "        shell: bash\n", 12, "jobs.build.steps[0].shell"),
        ("    runs-on: bash\n", "    strategy: {matrix: {a: [1, 2]}}\n", 8, "jobs.build.strategy"),
        ("    runs-on: bash\n", "    container: ubuntu\n", 8, "jobs.build.container"),
        ("    runs-on: bash\n", "    services: {db: {image: pg}}\n", 8, "jobs.build.services"),
        ("    runs-on: bash\n", "    if: github.ref == 'main'\n", 8, "jobs.build.if"),
        (
            "    runs-on: bash\n",
            "    uses: org/repo/.github/workflows/x.yml@v1\n",
            8,
            "jobs.build.uses",
        ),
        ("    branches: [main]\n", "env: {A: b}\n", 5, "env"),
    ],
)
def test_every_unsupported_key_is_refused_naming_its_line(insert_after, text, line, where):
    source = WORKFLOW.replace(insert_after, insert_after + text, 1)
    assert source.splitlines()[line - 1].strip().startswith(where.rsplit(".", 1)[-1])
    with pytest.raises(gha.ConversionError) as refused:
        gha.load(source, "ci.yaml")
    assert refused.value.line == line
    key = where.rsplit(".", 1)[-1]
    assert refused.value.message.startswith(f'ci.yaml:{line}: {where}: "{key}" is not supported')


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("jobs:\n  a:\n    steps: [{run: x}]\n", "ci.yaml:3: jobs.a: runs-on (a Runtime name) is required"),
        ("jobs:\n  a:\n    runs-on: [self-hosted, linux]\n    steps: [{run: x}]\n",
         "ci.yaml:3: jobs.a.runs-on: expected a single value"),
        ("jobs:\n  a:\n    runs-on: bash\n    steps: [{name: x}]\n", "ci.yaml:4: jobs.a.steps[0]: run is required"),
        ("jobs:\n  a:\n    runs-on: bash\n    steps: [{id: 'no spaces', run: x}]\n",
         'ci.yaml:4: jobs.a.steps[0].id "no spaces": must be a label value'),
        ("on: push\n", "ci.yaml:1: a workflow needs jobs:"),
        ("jobs: [a]\n", "ci.yaml:1: jobs: expected a mapping of jobs"),
        ("- a\n", "ci.yaml:1: expected a mapping"),
        ("jobs:\n  a: {runs-on: bash\n", "ci.yaml:3: not YAML"),
        ("apiVersion: kruntimes.io/v1alpha1\nkind: Workflow\n", 'ci.yaml:1: kind "Workflow": expected a WorkflowRun'),
    ],
)  # fmt: skip
def test_malformed_files_say_where(source, message):
    with pytest.raises(gha.ConversionError) as refused:
        gha.load(source, "ci.yaml")
    assert refused.value.message.startswith(message)


def test_a_workflowrun_manifest_passes_through():
    loaded = gha.load(
        "apiVersion: kruntimes.io/v1alpha1\nkind: WorkflowRun\nmetadata:\n  name: nightly\n"
        "  labels: {team: ci}\nspec:\n  jobs:\n    a: {runs-on: bash, steps: [{name: s, run: x}]}\n"
    )
    assert loaded.name == "nightly" and loaded.metadata["labels"] == {"team": "ci"}
    assert loaded.spec == {"jobs": {"a": {"runs-on": "bash", "steps": [{"name": "s", "run": "x"}]}}}


@pytest.mark.parametrize(
    ("text", "slug"),
    [("Run tests!", "run-tests"), ("  ", ""), ("x" * 80, "x" * 63), ("Ünïcode ok", "n-code-ok")],
)
def test_step_names_become_label_values(text, slug):
    assert gha.slug(text) == slug


MANIFEST = """\
apiVersion: kruntimes.io/v1alpha1
kind: WorkflowRun
metadata: {name: nightly, namespace: team}
spec:
  jobs:
    a: {runs-on: bash, steps: [{name: s, run: x}]}
"""


def test_a_manifests_namespace_wins_over_the_context_and_must_agree_with_n(tmp_path):
    from portal.krt import workflows
    from portal.krt.errors import KrtError

    path = tmp_path / "wfr.yaml"
    path.write_text(MANIFEST)
    body = workflows.from_file("default", str(path), {"who": "me"}, None)
    assert body["metadata"] == {"name": "nightly", "namespace": "team"}
    assert body["spec"]["inputs"] == {"who": "me"}
    with pytest.raises(KrtError, match="You must pass '--namespace=team'"):
        workflows.from_file("other", str(path), {}, None, namespace_given=True)
