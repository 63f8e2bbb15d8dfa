#!/usr/bin/env bash
# `make run`: the local stack. DynamoDB (moto) on 127.0.0.1:$1, the tables, a development
# workspace, agent and API key (kept in .local/dev.json and re-created from it after a
# restart, so the same key keeps working), then every function (functions/) on
# http://127.0.0.1:$2 at its production paths, behind the local API Gateway
# (devstack.gateway), until interrupted, with $3 instances per function (default 8), each its
# own process, as Lambda runs many at once. The local DynamoDB (devstack.dynamodb) serves
# behind the fault layer (devstack.faults), which refuses what DynamoDB refuses; no fault is
# injected unless asked for. Stops what it started.
set -euo pipefail
cd "$(dirname "$0")/.."
DYNAMODB_PORT=${1:-8000}
API_PORT=${2:-9000}
INSTANCES=${3:-8}
EVENTS_PORT=${4:-9001}
export AWS_ENDPOINT_URL_DYNAMODB="http://127.0.0.1:${DYNAMODB_PORT}"
# moto serves S3 on the same port: the frames of large calls.
export AWS_ENDPOINT_URL_S3="http://127.0.0.1:${DYNAMODB_PORT}" FRAMES_BUCKET=${FRAMES_BUCKET:-frames}
# and SQS: S3 announces each pending call on a queue that commit-pending consumes.
export AWS_ENDPOINT_URL_SQS="http://127.0.0.1:${DYNAMODB_PORT}"
# and KMS: the key that seals webhook secrets (callctl tables create makes it).
export AWS_ENDPOINT_URL_KMS="http://127.0.0.1:${DYNAMODB_PORT}"
export AWS_REGION=${AWS_REGION:-us-east-1}
export AWS_ACCESS_KEY_ID=${AWS_ACCESS_KEY_ID:-local} AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:-local}
export CALLS_TABLE=${CALLS_TABLE:-calls} DIRECTORY_TABLE=${DIRECTORY_TABLE:-directory}
export RUST_LOG=${RUST_LOG:-info}
# The viewer's Content-Security-Policy lets recordings play from https: and, locally, from
# this machine too (a WAV served on localhost).
export VIEWER_MEDIA_SOURCES=${VIEWER_MEDIA_SOURCES:-http://127.0.0.1:* http://localhost:*}
# The key list cursors are signed with: one for every instance (AWS: a generated secret).
export CURSOR_SECRET=${CURSOR_SECRET:-$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')}
target=${CARGO_TARGET_DIR:-target}

if (exec 3<>"/dev/tcp/127.0.0.1/${DYNAMODB_PORT}") 2>/dev/null; then
  echo "port ${DYNAMODB_PORT} is in use; stop what runs there or set DYNAMODB_PORT" >&2
  exit 1
fi
.venv/bin/python -m devstack.dynamodb --port "${DYNAMODB_PORT}" >/dev/null &
dynamodb=$!
trap 'kill "$dynamodb" 2>/dev/null || true; wait 2>/dev/null || true' EXIT INT TERM
for _ in $(seq 50); do
  (exec 3<>"/dev/tcp/127.0.0.1/${DYNAMODB_PORT}") 2>/dev/null && break
  sleep 0.2
done

# callctl and every function (one crate each under functions/).
cargo build --quiet -p callctl -p callgen $(for f in functions/*/; do printf -- '-p %s ' "$(basename "$f")"; done)
callctl="${target}/debug/callctl"
"$callctl" tables create
.venv/bin/python -m devstack.dev_setup "$callctl" "http://127.0.0.1:${API_PORT}" .local/dev.json
.venv/bin/python -m devstack.dev_setup --curl .local/dev.json

# Events out: a receiver on loopback printing each event the development workspace's
# endpoint is sent, verified (EVENTS_ALLOW_LOOPBACK lets an endpoint be http to loopback:
# the local stack's only).
export EVENTS_ALLOW_LOOPBACK=true
.venv/bin/python -m devstack.receiver --port "${EVENTS_PORT}" --endpoint-file .local/events-endpoint.json &
receiver=$!
trap 'kill "$dynamodb" "$receiver" 2>/dev/null || true; wait 2>/dev/null || true' EXIT INT TERM
workspace=$(.venv/bin/python -c 'import json; print(json.load(open(".local/dev.json"))["workspace_id"])')
"$callctl" --json endpoint create --workspace "$workspace" --url "http://127.0.0.1:${EVENTS_PORT}/events" \
  > .local/events-endpoint.json
export EVENTS_QUEUE_URL="http://127.0.0.1:${DYNAMODB_PORT}/123456789012/${FRAMES_BUCKET}-EventDeliveriesQueue"
echo "Events of workspace ${workspace} go to http://127.0.0.1:${EVENTS_PORT}/events and are printed here."

echo "Serving the functions on http://127.0.0.1:${API_PORT}, ${INSTANCES} instances each (Ctrl-C stops everything)."
# The local API Gateway (devstack.gateway): API Gateway's events, base64 bodies and 6 MB
# event limit, in front of the binaries Lambda runs.
.venv/bin/python -m devstack.gateway --port "${API_PORT}" --instances "${INSTANCES}" --bin "${target}/debug"
