"""The local AWS of call-ingest, for `make run`, the tests and `make chaos`.

    devstack.dynamodb    moto's DynamoDB server behind the fault layer
                         (python -m devstack.dynamodb --port 8000)
    devstack.faults      the fault and fidelity layer: refuses what DynamoDB refuses and moto
                         accepts, and injects DynamoDB's failures on command
    devstack.gateway     the local API Gateway: template.yaml's routes, in front of several
                         instances of each function binary (python -m devstack.gateway --bin DIR)
    devstack.stack       all of it started together and seen as a client sees it (Stack), for
                         the HTTP tests (tests/e2e) and `make chaos`
    devstack.dev_setup   the development workspace, agent and API key of `make run`, through
                         callctl (python -m devstack.dev_setup ...)

`make venv` installs the package into .venv in editable mode (`-e .` in requirements-dev.txt):
it reads the repository it lives in (template.yaml, functions/, .venv, the cargo target
directory), so it is never installed any other way. Its own tests are in tests/devstack.
"""
