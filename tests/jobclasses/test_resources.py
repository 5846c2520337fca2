"""The JobClass resource policy (seed 003, rules 1-3 and the policy's own consistency)."""

from __future__ import annotations

from jobclasses.resources import effective_resources, policy_problems

SEED_POLICY = {
    "defaults": {
        "requests": {"cpu": "250m", "memory": "256Mi"},
        "limits": {"cpu": "2", "memory": "2Gi"},
    },
    "maximum": {"limits": {"cpu": "8", "memory": "16Gi"}},
}


def test_the_seed_policy_is_consistent():
    assert policy_problems(SEED_POLICY) == []
    assert policy_problems(None) == []


def test_rule_1_unset_values_are_filled_from_defaults():
    effective, problems = effective_resources(SEED_POLICY, {"limits": {"cpu": "4"}})
    assert problems == []
    assert effective == {
        "requests": {"cpu": "250m", "memory": "256Mi"},
        "limits": {"cpu": "4", "memory": "2Gi"},
    }


def test_a_job_without_resources_gets_the_defaults():
    assert effective_resources(SEED_POLICY, None) == (SEED_POLICY["defaults"], [])


def test_no_policy_keeps_what_the_job_asks():
    asked = {"requests": {"cpu": 1}}
    assert effective_resources(None, asked) == ({"requests": {"cpu": "1"}}, [])


def test_rule_2_maximum_is_enforced():
    _, problems = effective_resources(SEED_POLICY, {"limits": {"cpu": "9"}})
    assert problems == ["limits.cpu 9 (the Job) is more than the class maximum 8"]


def test_rule_2_the_maximum_itself_is_allowed():
    _, problems = effective_resources(SEED_POLICY, {"limits": {"cpu": "8000m", "memory": "16Gi"}})
    assert problems == []


def test_rule_2_minimum_is_enforced():
    policy = {"minimum": {"requests": {"memory": "128Mi"}}}
    _, problems = effective_resources(policy, {"requests": {"memory": "64Mi"}})
    assert problems == ["requests.memory 64Mi (the Job) is less than the class minimum 128Mi"]
    assert effective_resources(policy, {"requests": {"memory": "128Mi"}})[1] == []


def test_rule_3_a_request_above_its_limit_is_refused():
    _, problems = effective_resources(None, {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}})
    assert problems == ["requests.cpu 2 (the Job) is more than limits.cpu 1 (the Job)"]


def test_rule_3_names_a_default_that_breaks_the_jobs_limit():
    _, problems = effective_resources(SEED_POLICY, {"limits": {"memory": "128Mi"}})
    assert problems == [
        "requests.memory 256Mi (the class default) is more than limits.memory 128Mi (the Job)"
    ]


def test_request_equal_to_limit_is_fine():
    assert (
        effective_resources(None, {"requests": {"cpu": "1"}, "limits": {"cpu": "1000m"}})[1] == []
    )


def test_inconsistent_policies_are_named():
    assert policy_problems(
        {"minimum": {"limits": {"cpu": "4"}}, "maximum": {"limits": {"cpu": "2"}}}
    ) == ["minimum.limits.cpu 4 is more than maximum.limits.cpu 2"]
    assert policy_problems(
        {"defaults": {"limits": {"cpu": "9"}}, "maximum": {"limits": {"cpu": "8"}}}
    ) == ["defaults.limits.cpu 9 is more than maximum.limits.cpu 8"]
    assert policy_problems(
        {"defaults": {"requests": {"cpu": "1"}}, "minimum": {"requests": {"cpu": "2"}}}
    ) == ["defaults.requests.cpu 1 is less than minimum.requests.cpu 2"]
    assert policy_problems(
        {"defaults": {"requests": {"memory": "2Gi"}, "limits": {"memory": "1Gi"}}}
    ) == ["defaults.requests.memory 2Gi is more than defaults.limits.memory 1Gi"]
    assert policy_problems(
        {"minimum": {"requests": {"cpu": "4"}}, "maximum": {"limits": {"cpu": "2"}}}
    ) == ["minimum.requests.cpu 4 is more than maximum.limits.cpu 2: no Job could satisfy both"]
