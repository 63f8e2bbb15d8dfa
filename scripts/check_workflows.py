#!/usr/bin/env python3
"""`make lint`: the deploy workflow's supply chain and credentials rules, which actionlint
does not check.

    check_workflows.py .github/workflows/*.yml

- every `uses:` names a full 40-hex commit SHA, with the tag in a comment;
- no `id-token: write` at the workflow level; a job that has it runs in an `environment`,
  only on main, and runs no `make`, `cargo` or test step (a build script could mint the
  token); AWS credentials are configured in no other job;
- one fixed concurrency group, never cancelled half-way;
- `pip install` names exact versions.
"""
import re
import sys

import yaml

SHA = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")


def problems_of(path):
    text = open(path).read()
    doc = yaml.safe_load(text)
    found = []
    for n, line in enumerate(text.splitlines(), 1):
        m = re.search(r"uses:\s*(\S+)(.*)", line)
        if m and not (SHA.match(m.group(1)) and re.search(r"#\s*v?\d", m.group(2))):
            found.append(f"{path}:{n}: pin `{m.group(1)}` to a full commit SHA with its tag in a comment")
        for spec in re.findall(r"pip install ([^\n]+)", line):
            for package in spec.split():
                if not package.startswith("-") and "==" not in package:
                    found.append(f"{path}:{n}: pip install {package}: name an exact version (==)")
    if "id-token" in (doc.get("permissions") or {}):
        found.append(f"{path}: id-token at the workflow level: only the deploy job may have it")
    concurrency = doc.get("concurrency") or {}
    if not isinstance(concurrency, dict) or "${{" in str(concurrency.get("group", "${{")) \
            or concurrency.get("cancel-in-progress") is not False:
        found.append(f"{path}: one fixed concurrency group, cancel-in-progress: false")
    for name, job in (doc.get("jobs") or {}).items():
        steps = job.get("steps") or []
        uses_credentials = any("configure-aws-credentials" in str(s.get("uses", "")) for s in steps)
        token = (job.get("permissions") or {}).get("id-token") == "write"
        if uses_credentials and not token:
            found.append(f"{path}: job {name} configures AWS credentials without its own id-token permission")
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
