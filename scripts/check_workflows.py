#!/usr/bin/env python3
"""`make lint`: the deploy workflow's supply chain and credentials rules, which actionlint
does not check.

    check_workflows.py .github/workflows/*.yml

- every `uses:` names a full 40-hex commit SHA, with the tag in a comment;
- no `id-token: write` at the workflow level; a job that has it runs in an `environment`,
  only on main, and runs no `make`, `cargo` or test step (a build script could mint the
  token); AWS credentials are configured in no other job;
- a job that configures AWS credentials runs in an `environment` and assumes a role
  (OIDC, `role-to-assume`); the comment block right above each `role-to-assume:` names,
  on a `# trust-policy:` line, what pins the role to main. In an environment the token's
  subject is `repo:<owner>/<repo>:environment:<name>` whatever the branch, so a trust
  policy on `sub` alone lets any branch that names the environment assume the role. One of:
      # trust-policy: token.actions.githubusercontent.com:sub = repo:<owner>/<repo>:environment:<name>:ref:refs/heads/main
      # trust-policy: token.actions.githubusercontent.com:job_workflow_ref = <owner>/<repo>/.github/workflows/<file>@refs/heads/main
      # trust-policy: token.actions.githubusercontent.com:ref = refs/heads/main
      # trust-policy: environment deployment branches: main only
  (the first is the subject once the repository's OIDC subject template includes `ref`,
  the next two IAM conditions on GitHub's claims, the last the environment's deployment
  branch policy on GitHub);
- one fixed concurrency group, never cancelled half-way;
- every `pip install` is `--require-hashes` from requirements files only (no package named
  on the command line), and each such file exists and pins every requirement with `==`
  and at least one `--hash=`.
"""
import os
import re
import shlex
import sys

import yaml

SHA = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")
# What pins a role assumed from an environment to main (see the docstring).
TRUST_MARKER = re.compile(
    r"#\s*trust-policy:\s*(?:"
    r"token\.actions\.githubusercontent\.com:(?:job_workflow_ref|ref)\s*=\s*\S*refs/heads/main\s*$"
    r"|token\.actions\.githubusercontent\.com:sub\s*=\s*repo:\S+:environment:\S+:ref:refs/heads/main\s*$"
    r"|environment deployment branches: main only\s*$)")
# pip install's options that take a value (`-r FILE`, `--only-binary :all:`, …): what
# follows them is not a package.
PIP_VALUE_OPTIONS = {
    "-r", "--requirement", "-c", "--constraint", "-e", "--editable", "-i", "--index-url",
    "--extra-index-url", "-f", "--find-links", "--only-binary", "--no-binary", "-t", "--target",
    "--prefix", "--root", "--platform", "--python-version", "--implementation", "--abi",
    "--upgrade-strategy", "--progress-bar", "--src", "--log", "--cache-dir", "--trusted-host",
    "--timeout", "--retries", "--proxy", "--cert", "--client-cert", "--exists-action",
    "-C", "--config-settings", "--global-option", "--report", "--python",
}


def repo_root(path):
    """The checkout a workflow runs in: the directory holding `.github/workflows/`."""
    here = os.path.dirname(os.path.abspath(path))
    if os.path.basename(here) == "workflows" and os.path.basename(os.path.dirname(here)) == ".github":
        return os.path.dirname(os.path.dirname(here))
    return os.getcwd()


def pip_installs(run):
    """The argument lists of the `pip install` commands of a `run:` script."""
    script = run.replace("\\\n", " ")
    for line in re.split(r"\n|&&|\|\||;|\|", script):
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            words = line.split()
        for i, word in enumerate(words[:-1]):
            if re.fullmatch(r"pip(3(\.\d+)?)?", os.path.basename(word)) and words[i + 1] == "install":
                yield words[i + 2:]


def lock_problems(lock):
    """What makes a requirements file unfit for `--require-hashes`: a requirement without
    an exact version or without a hash."""
    found = []
    text = open(lock).read().replace("\\\n", " ")
    for line in text.splitlines():
        line = line.split(" #", 1)[0].strip()
        if not line or line.startswith("#") or line.startswith("-"):
            continue
        name = line.split()[0]
        if "==" not in name:
            found.append(f"{lock}: {name}: pin an exact version (==)")
        if "--hash=" not in line:
            found.append(f"{lock}: {name}: no --hash (generate the file with pip-compile --generate-hashes)")
    return found


def pip_problems(path, where, args, directory):
    """A `pip install` (its arguments) that is not a hash-checked install of lock files."""
    found = []
    if "--require-hashes" not in args:
        found.append(f"{path}: {where}: pip install {' '.join(args)}: add --require-hashes "
                     "and install from a hash-locked requirements file")
    files = []
    i = 0
    while i < len(args):
        arg = args[i]
        option, eq, value = arg.partition("=")
        if arg in ("-r", "--requirement"):
            files.append(args[i + 1] if i + 1 < len(args) else "")
            i += 2
            continue
        if option == "--requirement" and eq:
            files.append(value)
        elif arg.startswith("-r") and len(arg) > 2:
            files.append(arg[2:])
        elif arg in ("-e", "--editable") or option == "--editable":
            found.append(f"{path}: {where}: pip install {arg}: an editable install cannot be hash-checked")
        elif arg in PIP_VALUE_OPTIONS:
            i += 1
        elif not arg.startswith("-"):
            found.append(f"{path}: {where}: pip install {arg}: name it in a hash-locked requirements file, "
                         "not on the command line")
        i += 1
    for name in files:
        lock = os.path.join(directory, name)
        if "${{" in name or not os.path.isfile(lock):
            found.append(f"{path}: {where}: pip install -r {name}: no such file in the repository")
        else:
            found.extend(lock_problems(lock))
    return found


def trust_problems(path, lines):
    """Each `role-to-assume:` with no `# trust-policy:` line in the comment block right
    above it (or on its own line) that pins the role to main."""
    found = []
    for n, line in enumerate(lines, 1):
        if not re.match(r"\s*role-to-assume\s*:", line):
            continue
        block = [line[line.index("#"):]] if "#" in line else []
        above = n - 2
        while above >= 0 and lines[above].strip().startswith("#"):
            block.append(lines[above].strip())
            above -= 1
        if not any(TRUST_MARKER.match(c) for c in block):
            found.append(
                f"{path}:{n}: role-to-assume without a `# trust-policy:` comment right above it naming what "
                "pins the role to main (token.actions.githubusercontent.com:job_workflow_ref or :ref = "
                "…refs/heads/main in the role's trust policy, or `environment deployment branches: main only`): "
                "in an environment the OIDC subject is the same from every branch")
    return found


def problems_of(path):
    text = open(path).read()
    doc = yaml.safe_load(text)
    lines = text.splitlines()
    found = []
    for n, line in enumerate(lines, 1):
        m = re.search(r"uses:\s*(\S+)(.*)", line)
        if m and not (SHA.match(m.group(1)) and re.search(r"#\s*v?\d", m.group(2))):
            found.append(f"{path}:{n}: pin `{m.group(1)}` to a full commit SHA with its tag in a comment")
    found.extend(trust_problems(path, lines))
    if "id-token" in (doc.get("permissions") or {}):
        found.append(f"{path}: id-token at the workflow level: only the deploy job may have it")
    concurrency = doc.get("concurrency") or {}
    if not isinstance(concurrency, dict) or "${{" in str(concurrency.get("group", "${{")) \
            or concurrency.get("cancel-in-progress") is not False:
        found.append(f"{path}: one fixed concurrency group, cancel-in-progress: false")
    root = repo_root(path)
    for name, job in (doc.get("jobs") or {}).items():
        steps = job.get("steps") or []
        for k, s in enumerate(steps, 1):
            where = f"job {name}, step {s.get('name') or k}"
            directory = os.path.join(root, s.get("working-directory") or "")
            for args in pip_installs(str(s.get("run") or "")):
                found.extend(pip_problems(path, where, args, directory))
        credentials = [s for s in steps if "configure-aws-credentials" in str(s.get("uses", ""))]
        token = (job.get("permissions") or {}).get("id-token") == "write"
        if credentials and not token:
            found.append(f"{path}: job {name} configures AWS credentials without its own id-token permission")
        if credentials and not job.get("environment"):
            found.append(f"{path}: job {name} holds AWS credentials outside a GitHub environment")
        for s in credentials:
            if not (s.get("with") or {}).get("role-to-assume"):
                found.append(f"{path}: job {name} configures AWS credentials without role-to-assume (OIDC)")
        if token:
            if not job.get("environment"):
                found.append(f"{path}: job {name} can mint an OIDC token outside a GitHub environment")
            if "refs/heads/main" not in str(job.get("if", "")):
                found.append(f"{path}: job {name} can mint an OIDC token on refs other than main")
            for s in steps:
                if re.search(r"\b(make|cargo|pytest|npm|sam build)\b", str(s.get("run", ""))):
                    found.append(f"{path}: job {name} holds deploy credentials and runs `{s.get('run')}`")
    return found


def main():
    problems = [p for path in sys.argv[1:] for p in problems_of(path)]
    for p in problems:
        print(p)
    if problems:
        sys.exit(1)
    print(f"check_workflows: {len(sys.argv) - 1} file(s), no problems")


if __name__ == "__main__":
    main()
