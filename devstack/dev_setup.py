"""Development fixtures for `make run`, through callctl.

    python -m devstack.dev_setup CALLCTL API_URL FILE
        creates (or re-creates) a workspace, agent and key, writes FILE
    python -m devstack.dev_setup --curl FILE
        prints ready-to-paste curl commands for the endpoints

FILE keeps {api_url, workspace_id, agent_id, agent_remote_identifier, api_key}. The local
DynamoDB keeps nothing across restarts, so a later run re-creates the same agent and
imports the same key: the commands printed before keep working.
"""
import json
import os
import subprocess
import sys

REMOTE_ID = "dev-agent"
# The development key may do everything (send, read, erase, manage its event endpoints) so
# that every printed command works; in production give each backend only the scope it needs.
SCOPES = ("--scope", "send", "--scope", "read", "--scope", "erase", "--scope", "manage")


def ctl(callctl, *args, stdin=None):
    out = subprocess.run([callctl, "--json", *map(str, args)], capture_output=True, text=True, input=stdin)
    return out.returncode, (json.loads(out.stdout) if out.returncode == 0 and out.stdout.strip() else out.stderr.strip())


def must(callctl, *args, stdin=None):
    code, value = ctl(callctl, *args, stdin=stdin)
    if code != 0:
        sys.exit(f"callctl {' '.join(map(str, args))}: {value}")
    return value


def setup(callctl, api_url, path):
    prev = None
    if os.path.exists(path):
        with open(path) as f:
            prev = json.load(f)
    if prev:
        code, _ = ctl(callctl, "agent", "get", "--workspace", prev["workspace_id"], "--remote-id", prev["agent_remote_identifier"])
        if code == 0:
            print(f"Reusing the development workspace {prev['workspace_id']} from {path}.")
            return prev
    workspace = must(callctl, "workspace", "create", "--name", "development")
    ws = workspace["id"]
    if prev:
        agent = must(callctl, "agent", "create", "--workspace", ws, "--remote-id", prev["agent_remote_identifier"],
                     "--name", "Development agent", "--agent-id", prev["agent_id"])
        # The token goes through stdin: never on a command line (shell history, ps).
        must(callctl, "key", "create", "--workspace", ws, "--name", "development", *SCOPES, "--token-file", "-",
             stdin=prev["api_key"])
        key = prev["api_key"]
        print(f"Re-created the development workspace, agent and key of {path}.")
    else:
        agent = must(callctl, "agent", "create", "--workspace", ws, "--remote-id", REMOTE_ID, "--name", "Development agent")
        key = must(callctl, "key", "create", "--workspace", ws, "--name", "development", *SCOPES)["token"]
        print(f"Created a development workspace, agent and API key; saved in {path}.")
    dev = {"api_url": api_url, "workspace_id": ws, "agent_id": agent["id"],
           "agent_remote_identifier": agent["remote_id"], "api_key": key}
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        json.dump(dev, f, indent=2)
    return dev


def curl(path):
    with open(path) as f:
        dev = json.load(f)
    b = json.dumps({
        "call_id": "demo-call-1", "call_type": "phone_call",
        "start_timestamp": 1763700000000, "end_timestamp": 1763700042000,
        "recording_url": "https://recordings.example.com/demo-call-1.wav",
        "user_sentiment": "Positive",
        "transcript_with_tool_calls": [
            {"role": "agent", "text": "Hello, how can I help?", "start_ms": 0, "end_ms": 1800},
            {"role": "user", "text": "I would like to check my order.", "start_ms": 2300, "end_ms": 4100},
        ],
    })
    a = json.dumps({
        "agentId": dev["agent_id"], "callId": "demo-a-1",
        "startedAt": "2026-11-21T10:00:00Z", "endedAt": "2026-11-21T10:00:42Z",
        "transcript": [{"role": "agent", "content": "Hello!", "timestamp": "2026-11-21T10:00:01Z"},
                       {"role": "user", "content": "Hi, a question about my bill.", "timestamp": "2026-11-21T10:00:03Z"}],
        "metadata": {"durationSeconds": 42, "callDirection": "inbound", "outcome": "resolved"},
    })
    url = dev["api_url"]
    print("\nPaste these (the first run of each answers 201, the second 200 with the same id):\n")
    print(f"curl -i -X POST '{url}/api/v1/public/call?workspace_id={dev['workspace_id']}"
          f"&agent_remote_identifier={dev['agent_remote_identifier']}' \\\n"
          f"  -H 'Authorization: Bearer {dev['api_key']}' -H 'Content-Type: application/json' \\\n  -d '{b}'\n")
    print(f"curl -i -X POST '{url}/v1/calls' \\\n"
          f"  -H 'Authorization: Bearer {dev['api_key']}' -H 'Content-Type: application/json' \\\n  -d '{a}'\n")
    ws, auth = dev["workspace_id"], f"-H 'Authorization: Bearer {dev['api_key']}'"
    print("And read the first one back by its provider call id (or by id: GET /api/v1/public/call/<id>):\n")
    print(f"curl -i --compressed '{url}/api/v1/public/call?workspace_id={ws}&provider_call_id=demo-call-1' \\\n  {auth}\n")
    print("List the workspace's calls, newest first (then pass next_cursor as &cursor=…):\n")
    print(f"curl -s --compressed '{url}/api/v1/public/calls?workspace_id={ws}&limit=20' {auth}\n")
    print("With <id> from the answers above: a call's revisions, its body as received, and erasing it:\n")
    print(f"curl -s '{url}/api/v1/public/call/<id>/revisions?workspace_id={ws}' {auth}")
    print(f"curl -s '{url}/api/v1/public/call/<id>/revisions/1?workspace_id={ws}' {auth}")
    print(f"curl -s '{url}/api/v1/public/call/<id>/raw?workspace_id={ws}' {auth}")
    print(f"curl -s -X DELETE '{url}/api/v1/public/call/<id>?workspace_id={ws}' {auth}\n")
    callgen = os.path.join(os.environ.get("CARGO_TARGET_DIR") or "target", "debug", "callgen")
    print("A realistic 10-minute call (words, tools, node transitions, latencies) to look at:\n")
    print(f"{callgen} --minutes 10 --seed 7 | curl -s -X POST '{url}/api/v1/public/call?workspace_id={ws}"
          f"&agent_remote_identifier={dev['agent_remote_identifier']}' \\\n"
          f"  {auth} -H 'Content-Type: application/json' --data-binary @-\n")
    print(f"The call viewer: {url}/app/calls")
    print(f"  sign in with the development key {dev['api_key']}\n")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--curl":
        curl(sys.argv[2])
    elif len(sys.argv) == 4:
        setup(*sys.argv[1:])
    else:
        sys.exit(__doc__)
