#!/usr/bin/env python3
"""The remote-agent contract in plain Python 3, standard library only (http.server, json).

Its brain is the deterministic counter planner (not a model): it reads "add A then add B then get the count",
asks Gym to run increment_counter for each amount, then get_counter_value, then answers with the count.

    python3 examples/python-stdlib/service.py --port 9000 [--host 0.0.0.0] [--incremental]

Replace `decide` with your own brain; everything else is the contract.
"""
import argparse
import json
import re
import secrets
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BRAIN_NAME = "counter-planner (python stdlib, deterministic, no model)"
INCREMENTAL = False


# ---------------------------------------------------------------------------------------------------
# The brain: conversation so far + declared tools -> ("calls", [(name, args)]) or ("final", text)

def message_text(item):
    content = item.get("content")
    if isinstance(content, list):
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""


def decide(conversation, tool_names):
    task = "\n".join(
        message_text(item) for item in conversation
        if item.get("type", "message") == "message" and item.get("role", "user") == "user"
    )
    adds = [int(n) for n in re.findall(r"\badd\s+(-?\d+)", task, flags=re.IGNORECASE)]
    outputs = {item.get("call_id"): item.get("output") for item in conversation
               if item.get("type") == "function_call_output"}
    calls = [item for item in conversation if item.get("type") == "function_call"]

    increments_asked = sum(1 for call in calls if call.get("name") == "increment_counter")
    if "increment_counter" in tool_names and increments_asked < len(adds):
        remaining = adds[increments_asked:]
        batch = remaining[:1] if INCREMENTAL else remaining
        return "calls", [("increment_counter", {"count": n}) for n in batch]

    last_increment = max((i for i, call in enumerate(calls) if call.get("name") == "increment_counter"), default=-1)
    reads = [call for call in calls[last_increment + 1:] if call.get("name") == "get_counter_value"]
    if not reads:
        if "get_counter_value" in tool_names:
            return "calls", [("get_counter_value", {})]
        return "final", "The counter planner cannot read the count: get_counter_value is not declared."
    result = outputs.get(reads[0].get("call_id"), "")
    try:
        return "final", str(json.loads(result)["count"])
    except (ValueError, KeyError, TypeError):
        return "final", f"get_counter_value returned {result}"


# ---------------------------------------------------------------------------------------------------
# The contract: request checks, output items in the exact shapes, complete usage

def new_id(prefix):
    return f"{prefix}_{secrets.token_hex(12)}"


def build_response(params):
    raw_input = params["input"]
    conversation = [{"role": "user", "content": raw_input}] if isinstance(raw_input, str) else raw_input
    tools = [tool for tool in params.get("tools") or [] if isinstance(tool, dict) and tool.get("type") == "function"]
    tool_names = {tool.get("name") for tool in tools}
    kind, decision = decide(conversation, tool_names)

    if kind == "calls":  # unpaired asks: Gym runs these and calls us again with the results
        for name, _ in decision:
            if name not in tool_names:
                raise RuntimeError(f"the brain asked for tool '{name}', which this request did not declare")
        output = [{"type": "function_call", "id": new_id("fc"), "call_id": new_id("call"), "name": name,
                   "arguments": json.dumps(args), "status": "completed"} for name, args in decision]
    else:  # one assistant message ends the rollout
        output = [{"type": "message", "id": new_id("msg"), "role": "assistant", "status": "completed",
                   "content": [{"type": "output_text", "text": decision, "annotations": []}]}]
    return {
        "id": new_id("resp"), "object": "response", "created_at": int(time.time()), "model": BRAIN_NAME,
        "status": "completed", "error": None, "incomplete_details": None, "output": output,
        "parallel_tool_calls": True, "tool_choice": "auto", "tools": tools,
        "usage": {"input_tokens": 0, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 0,
                  "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 0},
    }


def request_problem(params):
    """One line saying what is wrong with a request body, or None."""
    if not isinstance(params, dict):
        return f"request body must be a JSON object (the Responses create-params), got {type(params).__name__}"
    if "input" not in params:
        return "input: required (a string or a list of items)"
    if not isinstance(params["input"], (str, list)):
        return "input: expected a string or a list of items"
    if isinstance(params["input"], list):
        for index, item in enumerate(params["input"]):
            if not isinstance(item, dict):
                return f"input[{index}]: expected an object (a message or another item)"
    if params.get("tools") is not None and not isinstance(params["tools"], list):
        return "tools: expected a list of tool schemas"
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        if self.path != "/v1/responses":
            return self.reply(404, {"detail": "Not Found"})
        length = int(self.headers.get("Content-Length") or 0)
        try:
            params = json.loads(self.rfile.read(length) or b"null")
        except ValueError as err:
            return self.reply(400, {"detail": f"request body is not valid JSON: {err}"})
        problem = request_problem(params)
        if problem:
            return self.reply(422, {"detail": problem})
        try:
            body = build_response(params)
        except Exception as err:  # a 5xx becomes a retryable failure row on Gym's side
            return self.reply(500, {"detail": f"{type(err).__name__}: {err}"})
        self.reply(200, body)

    def reply(self, status, body):
        data = json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format, *args):  # one line per failed call, nothing for successes
        if len(args) > 1 and str(args[1]) not in ("200",):
            sys.stderr.write(f"{self.address_string()} {format % args}\n")


def main():
    global INCREMENTAL
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--incremental", action="store_true", help="ask for one increment per call")
    args = parser.parse_args()
    INCREMENTAL = args.incremental
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    print(f"{BRAIN_NAME} listening on http://{args.host}:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
