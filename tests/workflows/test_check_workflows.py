"""scripts/check_workflows.py (`make lint`) passes the deploy workflow as it is, and each of
its credential and supply-chain rules refuses the workflow with that rule broken."""
import os
import shutil

import pytest

from devstack import programs

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")

check_workflows = programs.load("check_workflows")

WORKFLOW = os.path.join(ROOT, ".github", "workflows", "deploy.yml")
LOCK = "requirements-deploy.lock"
ROLE = "          role-to-assume: ${{ secrets.AWS_DEPLOY_ROLE_ARN }}\n"
MARKER = ("          # trust-policy: token.actions.githubusercontent.com:sub = "
          "repo:<owner>/<repo>:environment:production:ref:refs/heads/main\n")
INSTALL = "          -r requirements-deploy.lock\n"


def deploy_yml():
    with open(WORKFLOW) as f:
        return f.read()


def problems(tmp_path, text, lock=None):
    """check_workflows' problems with `text` as a checkout's deploy workflow, next to the
    repository's lock file (or `lock`, when given)."""
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True, exist_ok=True)
    (workflows / "deploy.yml").write_text(text)
    if lock is None:
        shutil.copy(os.path.join(ROOT, LOCK), tmp_path / LOCK)
    else:
        (tmp_path / LOCK).write_text(lock)
    return check_workflows.problems_of(str(workflows / "deploy.yml"))


def changed(text, old, new):
    assert old in text, old
    return text.replace(old, new)


def test_the_deploy_workflow_passes():
    assert check_workflows.problems_of(WORKFLOW) == []


def test_the_copy_passes(tmp_path):
    """The cases below break one rule each in this same copy."""
    assert problems(tmp_path, deploy_yml()) == []


def test_the_lock_holds_every_requirement_with_hashes():
    assert check_workflows.lock_problems(os.path.join(ROOT, LOCK)) == []
    with open(os.path.join(ROOT, LOCK)) as f:
        lock = f.read()
    assert "\naws-sam-cli==1.170.0 \\\n" in lock
    assert "--find-links" not in lock and "/opt/" not in lock, "no path of the machine that generated it"


# --- the role and its trust policy ------------------------------------------------------

def test_role_without_trust_marker_is_refused(tmp_path):
    found = problems(tmp_path, changed(deploy_yml(), MARKER, ""))
    assert len(found) == 1 and "role-to-assume without a `# trust-policy:`" in found[0]


@pytest.mark.parametrize("marker", [
    "# trust-policy: token.actions.githubusercontent.com:job_workflow_ref = o/r/.github/workflows/deploy.yml@refs/heads/dev",
    "# trust-policy: token.actions.githubusercontent.com:sub = repo:o/r:environment:production",
    "# trust-policy: token.actions.githubusercontent.com:ref = refs/heads/main-old",
    "# token.actions.githubusercontent.com:ref = refs/heads/main",
])
def test_a_marker_that_does_not_pin_main_is_refused(tmp_path, marker):
    found = problems(tmp_path, changed(deploy_yml(), MARKER, f"          {marker}\n"))
    assert len(found) == 1 and "trust-policy" in found[0]


def test_a_marker_away_from_the_role_is_refused(tmp_path):
    """The marker must sit in the comment block right above `role-to-assume:`."""
    text = changed(deploy_yml(), MARKER, "")
    text = changed(text, "jobs:\n", "jobs:\n" + MARKER.strip() + "\n")
    found = problems(tmp_path, text)
    assert len(found) == 1 and "trust-policy" in found[0]


@pytest.mark.parametrize("marker", [
    "# trust-policy: token.actions.githubusercontent.com:ref = refs/heads/main",
    "# trust-policy: token.actions.githubusercontent.com:sub = repo:o/r:environment:production:ref:refs/heads/main",
    "# trust-policy: environment deployment branches: main only",
])
def test_other_conditions_that_pin_main_pass(tmp_path, marker):
    assert problems(tmp_path, changed(deploy_yml(), MARKER, f"          {marker}\n")) == []


def test_credentials_outside_an_environment_are_refused(tmp_path):
    found = problems(tmp_path, changed(deploy_yml(), "    environment: production\n", ""))
    assert any("holds AWS credentials outside a GitHub environment" in p for p in found), found


def test_credentials_without_a_role_are_refused(tmp_path):
    text = changed(deploy_yml(), MARKER + ROLE, "          aws-access-key-id: ${{ secrets.KEY }}\n")
    found = problems(tmp_path, text)
    assert any("without role-to-assume" in p for p in found), found


# --- pip installs -----------------------------------------------------------------------

def test_pip_install_without_require_hashes_is_refused(tmp_path):
    found = problems(tmp_path, changed(deploy_yml(), "          --require-hashes\n", ""))
    assert len(found) == 1 and "add --require-hashes" in found[0]


@pytest.mark.parametrize("run", [
    'python -m pip install "aws-sam-cli==1.170.0"',
    "pip install --require-hashes aws-sam-cli==1.170.0",
    "pip3 install --upgrade pip",
    "echo go && python3 -m pip install --require-hashes -r requirements-deploy.lock boto3",
])
def test_a_package_named_on_the_command_line_is_refused(tmp_path, run):
    text = deploy_yml().replace("        run: make test\n", f"        run: {run}\n")
    found = problems(tmp_path, text)
    assert any("pip install" in p for p in found), found


def test_a_missing_lock_is_refused(tmp_path):
    found = problems(tmp_path, changed(deploy_yml(), INSTALL, "          -r requirements-other.lock\n"))
    assert len(found) == 1 and "no such file" in found[0]


def test_a_lock_entry_without_a_hash_or_exact_version_is_refused(tmp_path):
    lock = "aws-sam-cli==1.170.0 \\\n    --hash=sha256:" + "0" * 64 + "\nboto3==1.0\nclick>=8 \\\n    --hash=sha256:" + "1" * 64 + "\n"
    found = problems(tmp_path, deploy_yml(), lock=lock)
    assert len(found) == 2, found
    assert "boto3==1.0: no --hash" in found[0]
    assert "click>=8: pin an exact version" in found[1]
