"""Default JobClass selection (seed 003): explicit name, then the namespace annotation, then
the unique global default; none and several are named, never "the newest"."""

from __future__ import annotations

import pytest

from jobclasses.resolution import resolve
from tests.helpers.jobclasses import NAMESPACE_DEFAULT, class_manifest, create, delete

pytestmark = pytest.mark.django_db


def classes(*specs):
    for name, default in specs:
        create(class_manifest(name, default=default))


def test_an_explicit_class_name_wins_over_every_default():
    classes(("global", True), ("team", False), ("explicit", False))
    found = resolve("explicit", {NAMESPACE_DEFAULT: "team"})
    assert found.job_class.name == "explicit"


def test_the_namespace_annotation_wins_over_the_global_default():
    classes(("global", True), ("team", False))
    assert resolve("", {NAMESPACE_DEFAULT: "team"}).job_class.name == "team"


def test_the_unique_global_default_is_used_last():
    classes(("global", True), ("other", False))
    assert resolve("", {}).job_class.name == "global"


def test_no_default_class():
    classes(("other", False))
    found = resolve("", {})
    assert (found.job_class, found.reason) == (None, "NoDefaultJobClass")


def test_several_global_defaults_are_ambiguous_not_the_newest(caplog):
    classes(("older", True), ("newer", True))
    found = resolve("", {})
    assert (found.job_class, found.reason) == (None, "AmbiguousDefaultJobClass")
    assert "newer" in found.message and "older" in found.message
    assert "several JobClasses are the global default" in caplog.text


def test_an_explicit_name_that_does_not_exist():
    found = resolve("missing", {})
    assert (found.job_class, found.reason) == (None, "JobClassNotFound")


def test_a_namespace_default_that_does_not_exist_does_not_fall_back():
    classes(("global", True))
    found = resolve("", {NAMESPACE_DEFAULT: "missing"})
    assert (found.job_class, found.reason) == (None, "JobClassNotFound")


def test_a_class_being_deleted_takes_no_new_job():
    classes(("global", True))
    from jobclasses.models import JobClass

    delete(JobClass.objects.get(name="global"))  # held by its protection finalizer
    assert resolve("global", {}).reason == "JobClassTerminating"
    assert resolve("", {}).reason == "NoDefaultJobClass"


def test_only_the_annotation_value_true_makes_a_default():
    create(
        {
            **class_manifest("maybe"),
            "metadata": {
                "name": "maybe",
                "annotations": {"execution.ayatori.ddupan.top/is-default-job-class": "yes"},
            },
        }
    )
    assert resolve("", {}).reason == "NoDefaultJobClass"


def test_the_number_of_global_defaults_is_exported_for_alerting():
    from prometheus_client import REGISTRY

    classes(("older", True), ("newer", True))
    resolve("", {})
    assert REGISTRY.get_sample_value("kruntimes_jobclass_global_defaults") == 2
