#!/usr/bin/env python3
"""A NeMo Gym resources server in plain Python 3, standard library only — a template and tsgym's CI check that
Python environments run under `gym env start` exactly as under NeMo Gym.

It follows the reference's start-up contract: the resolved config arrives as YAML in NEMO_GYM_CONFIG_DICT and the
instance name in NEMO_GYM_CONFIG_PATH; the server listens on the host and port that config gives its instance, and,
like NeMo Gym's ServerClient, fetches the head server's /global_config_dict_yaml (a JSON string holding YAML) before
serving. Routes: GET / (liveness), POST /seed_session, POST /count_letters (the tool), POST /verify,
POST /aggregate_metrics; anything else answers 404 {"detail": "Not Found"}. State is per rollout, behind a session
cookie named <Class>___<instance> that every answer sets.

The task: "How many letters does <word> have?". Verify rewards 1.0 when the final assistant message contains the row's
`expected_answer`, and answers — like most NeMo Gym environments — only the fields its verify model declares:
responses_create_params, response, reward and `tool_calls` (how many times the rollout used the tool). The answer key
and every other dataset field are left out on purpose, so the rollout row does not carry them.
"""
import json
import os
import re
import secrets
import signal
import sys
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CLASS_NAME = "PythonStdlibExampleResourcesServer"
MAX_BODY_BYTES = 64 * 1024 * 1024


# ---------------------------------------------------------------------------------------------------
# Reading the config: the block mappings of the YAML gym env start writes (lists and block scalars are skipped;
# the server needs only mappings and scalars). PyYAML is not in the standard library.

KEY_LINE = re.compile(r'^("(?:[^"\\]|\\.)*"|\'(?:[^\']|\'\')*\'|[^\s:#][^:]*?)\s*:(?:\s+(.*))?$')


def yaml_scalar(text):
    text = text.strip()
    if text.startswith('"'):
        return json.loads(text)
    if text.startswith("'") and text.endswith("'") and len(text) >= 2:
        return text[1:-1].replace("''", "'")
    if text in ("null", "~", ""):
        return None
    if text in ("true", "True"):
        return True
    if text in ("false", "False"):
        return False
    if re.fullmatch(r"[-+]?\d+", text):
        return int(text)
    if re.fullmatch(r"[-+]?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?", text):
        return float(text)
    if text[:1] in "[{":
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def parse_config_yaml(text):
    root = {}
    stack = [(-1, root)]
    skip_deeper_than = None
    for raw in text.split("\n"):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#") or stripped == "---":
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        if skip_deeper_than is not None:
            if indent > skip_deeper_than:
                continue
            skip_deeper_than = None
        while indent <= stack[-1][0]:
            stack.pop()
        parent = stack[-1][1]
        if stripped.startswith("-"):
            skip_deeper_than = indent
            continue
        match = KEY_LINE.match(stripped)
        if not match:
            skip_deeper_than = indent
            continue
        key = yaml_scalar(match.group(1)) if match.group(1)[:1] in "\"'" else match.group(1)
        value = match.group(2)
        if value is None or value.strip() == "":
            child = {}
            parent[key] = child
            stack.append((indent, child))
        elif value.strip()[:1] in "|>":
            parent[key] = None
            skip_deeper_than = indent
        else:
            parent[key] = yaml_scalar(value)
    return root


def first_child(mapping):
    return next(iter(mapping.values())) if isinstance(mapping, dict) and mapping else None


def fail_start(message):
    sys.stderr.write(f"Error: {message}\n")
    sys.exit(1)


def load_instance():
    config_yaml = os.environ.get("NEMO_GYM_CONFIG_DICT")
    name = os.environ.get("NEMO_GYM_CONFIG_PATH")
    if not config_yaml or not name:
        fail_start("NEMO_GYM_CONFIG_DICT and NEMO_GYM_CONFIG_PATH must be set; start this server with gym env start.")
    config = parse_config_yaml(config_yaml)
    inner = first_child(first_child(config.get(name)))
    if not isinstance(inner, dict) or "port" not in inner:
        fail_start(f"the config in NEMO_GYM_CONFIG_DICT has no server instance '{name}' with a host and port.")
    return config, name, inner


def fetch_head_config(config):
    head = config.get("head_server") or {}
    url = f"http://{head.get('host', '127.0.0.1')}:{head.get('port', 11000)}/global_config_dict_yaml"
    try:
        with urllib.request.urlopen(url, timeout=10) as res:
            return parse_config_yaml(json.loads(res.read().decode("utf-8")))
    except (urllib.error.URLError, OSError, ValueError) as err:
        fail_start(f"Could not connect to the head server at {url} ({err}). Perhaps you are not running a server "
                   "or your head server is on a different port?")


# ---------------------------------------------------------------------------------------------------
# The environment

class Sessions:
    """Tool calls per rollout, keyed by the session cookie's id."""

    def __init__(self):
        self._lock = threading.Lock()
        self._tool_calls = {}

    def seed(self, session_id):
        with self._lock:
            self._tool_calls.setdefault(session_id, 0)

    def count_tool_call(self, session_id):
        with self._lock:
            self._tool_calls[session_id] = self._tool_calls.get(session_id, 0) + 1

    def tool_calls(self, session_id):
        with self._lock:
            return self._tool_calls.get(session_id, 0)


def final_text(response):
    texts = []
    for item in response.get("output") or []:
        if isinstance(item, dict) and item.get("type") == "message" and item.get("role") == "assistant":
            for part in item.get("content") or []:
                if isinstance(part, dict) and part.get("type") == "output_text":
                    texts.append(str(part.get("text", "")))
    return "\n".join(texts)


def aggregate(verify_responses):
    rewards = [float(r.get("reward", 0)) for r in verify_responses if isinstance(r, dict)]
    calls = [float(r.get("tool_calls", 0)) for r in verify_responses if isinstance(r, dict)]
    mean = (lambda values: sum(values) / len(values) if values else None)
    return {
        "group_level_metrics": [],
        "agent_metrics": {"mean/reward": mean(rewards), "mean/tool_calls": mean(calls)},
        "key_metrics": {"mean/reward": mean(rewards)},
    }


class Unprocessable(Exception):
    def __init__(self, field, message):
        super().__init__(message)
        self.detail = [{"type": "value_error", "loc": ["body", field], "msg": message}]


def make_handler(instance_name, sessions):
    cookie_name = f"{CLASS_NAME}___{instance_name}"

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format, *args):  # noqa: A002 - the base class's name
            pass  # no access log, as NeMo Gym's servers by default

        def session_id(self):
            for part in (self.headers.get("Cookie") or "").split(";"):
                name, _, value = part.strip().partition("=")
                if name == cookie_name and re.fullmatch(r"[A-Za-z0-9_-]{8,64}", value):
                    return value
            return secrets.token_urlsafe(16)

        def send_json(self, status, body, session_id=None):
            data = json.dumps(body).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if session_id is not None:
                self.send_header("Set-Cookie", f"{cookie_name}={session_id}; Path=/; HttpOnly; SameSite=lax")
            self.end_headers()
            self.wfile.write(data)

        def read_json(self):
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY_BYTES:
                raise Unprocessable("body", f"body larger than {MAX_BODY_BYTES} bytes")
            raw = self.rfile.read(length) if length > 0 else b""
            try:
                body = json.loads(raw.decode("utf-8")) if raw else {}
            except (UnicodeDecodeError, ValueError) as err:
                raise Unprocessable("body", f"JSON decode error: {err}")
            if not isinstance(body, dict):
                raise Unprocessable("body", "expected a JSON object")
            return body

        def do_GET(self):
            if self.path == "/":
                self.send_json(200, {"status": "ok"}, self.session_id())
            else:
                self.send_json(404, {"detail": "Not Found"}, self.session_id())

        def do_POST(self):
            session_id = self.session_id()
            routes = {
                "/seed_session": self.seed_session,
                "/count_letters": self.count_letters,
                "/verify": self.verify,
                "/aggregate_metrics": self.aggregate_metrics,
            }
            route = routes.get(self.path)
            try:
                body = self.read_json()
                if route is None:
                    self.send_json(404, {"detail": "Not Found"}, session_id)
                    return
                self.send_json(200, route(body, session_id), session_id)
            except Unprocessable as err:
                self.send_json(422, {"detail": err.detail}, session_id)
            except Exception as err:  # one request's failure never takes the server down
                sys.stderr.write(f"{self.path} failed: {err!r}\n")
                self.send_json(500, repr(err))

        def seed_session(self, body, session_id):
            sessions.seed(session_id)
            return {}

        def count_letters(self, body, session_id):
            word = body.get("word")
            if not isinstance(word, str):
                raise Unprocessable("word", "word: Input should be a valid string")
            sessions.count_tool_call(session_id)
            return {"word": word, "count": len(word)}

        def verify(self, body, session_id):
            for field in ("responses_create_params", "response"):
                if not isinstance(body.get(field), dict):
                    raise Unprocessable(field, f"{field}: Field required (an object)")
            expected = str(body.get("expected_answer", "")).strip()
            reward = 1.0 if expected and expected in final_text(body["response"]) else 0.0
            # Only the declared fields: the answer key and the other dataset fields stay out of the row.
            return {
                "responses_create_params": body["responses_create_params"],
                "response": body["response"],
                "reward": reward,
                "tool_calls": sessions.tool_calls(session_id),
            }

        def aggregate_metrics(self, body, session_id):
            responses = body.get("verify_responses")
            if not isinstance(responses, list):
                raise Unprocessable("verify_responses", "verify_responses: Field required (a list)")
            return aggregate(responses)

    return Handler


def stop_serving(signum, frame):
    raise KeyboardInterrupt  # SIGTERM stops like Ctrl-C (gym env start sends SIGINT)


def main():
    config, name, inner = load_instance()
    host, port = str(inner.get("host") or "127.0.0.1"), int(inner["port"])
    head_config = fetch_head_config(config)
    if name not in head_config:
        fail_start(f"the head server's config does not list '{name}'; is this the head server gym env start runs?")
    server = ThreadingHTTPServer((host, port), make_handler(name, Sessions()))
    server.daemon_threads = True
    signal.signal(signal.SIGTERM, stop_serving)
    print(f"{name}: python {sys.version.split()[0]} ({sys.executable}, prefix {sys.prefix})", flush=True)
    print(f"{name}: the head server's config lists this instance", flush=True)
    print(f"{name} listening on http://{host}:{port}", flush=True)
    with server:  # closes the listening socket however serving ends
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            return


if __name__ == "__main__":
    main()
