#!/usr/bin/env python3
"""The remote-agent contract in plain Python 3, standard library only (http.server, json, urllib).

Its built-in brain is the deterministic counter planner (not a model): it reads "add A then add B then get the
count", asks Gym to run increment_counter for each amount, then get_counter_value, then answers with the count.

A call that carries the rollout's model URL (header x-gym-model-base-url: a remote agent with model_server) is
answered by that model instead: the conversation goes to <url>/chat/completions as chat messages with the tools as
OpenAI tools, and the model's tool calls and text come back as the step. --model-url gives a model for calls without
the header (else those get the planner).

    python3 examples/python-stdlib/service.py --port 9000 [--host 0.0.0.0] [--incremental]
        [--model-url URL] [--model NAME] [--model-timeout SECONDS]

Replace `decide` with your own brain; everything else is the contract.
"""
import argparse
import http.client
import json
import os
import re
import secrets
import sys
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BRAIN_NAME = "counter-planner (python stdlib, deterministic, no model)"
INCREMENTAL = False
MODEL_BASE_URL_HEADER = "x-gym-model-base-url"
MODEL_NAME = None  # --model: sent as the chat body's `model`
# --model-url: the model for calls without the header, as (base URL, API key or None); None means the planner.
DEFAULT_MODEL = None
MODEL_TIMEOUT_S = 600.0
MAX_MODEL_ANSWER_BYTES = 8 * 1024 * 1024


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


ZERO_USAGE = {"input_tokens": 0, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 0,
              "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 0}


def function_call_item(name, arguments_text):
    """An unpaired ask: Gym runs it and calls us again with the result."""
    return {"type": "function_call", "id": new_id("fc"), "call_id": new_id("call"), "name": name,
            "arguments": arguments_text, "status": "completed"}


def message_item(text):
    return {"type": "message", "id": new_id("msg"), "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def planner_step(conversation, tool_names):
    kind, decision = decide(conversation, tool_names)
    if kind == "calls":
        for name, _ in decision:
            if name not in tool_names:
                raise RuntimeError(f"the brain asked for tool '{name}', which this request did not declare")
        return [function_call_item(name, json.dumps(args)) for name, args in decision]
    return [message_item(decision)]  # one assistant message ends the rollout


def build_response(params, model=None):
    """The step for one call: from `model` (base URL, API key) when given, else from the planner."""
    raw_input = params["input"]
    conversation = [{"role": "user", "content": raw_input}] if isinstance(raw_input, str) else raw_input
    tools = [tool for tool in params.get("tools") or [] if isinstance(tool, dict) and tool.get("type") == "function"]
    tool_names = {tool.get("name") for tool in tools}
    if model is None:
        output, usage, model_name = planner_step(conversation, tool_names), ZERO_USAGE, BRAIN_NAME
    else:
        instructions = params.get("instructions") if isinstance(params.get("instructions"), str) else None
        output, usage, model_name = model_step(model, conversation, tools, tool_names, instructions)
    return {
        "id": new_id("resp"), "object": "response", "created_at": int(time.time()), "model": model_name,
        "status": "completed", "error": None, "incomplete_details": None, "output": output,
        "parallel_tool_calls": True, "tool_choice": "auto", "tools": tools, "usage": usage,
    }


# ---------------------------------------------------------------------------------------------------
# A model as the brain: Responses items -> chat messages -> <url>/chat/completions -> Responses items

class ModelError(Exception):
    """The model could not give a usable step (unreachable, an HTTP error, an answer we cannot read): HTTP 502."""


def chat_messages(conversation, instructions):
    """Responses items as chat messages: a function call joins the assistant message before it, a result is a
    `tool` message; reasoning items have no chat form."""
    messages = [{"role": "system", "content": instructions}] if instructions else []
    for item in conversation:
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role", "user")
            messages.append({"role": role if role in ("user", "assistant") else "system",
                             "content": message_text(item)})
        elif kind == "function_call":
            arguments = item.get("arguments")
            call = {"id": str(item.get("call_id")), "type": "function",
                    "function": {"name": str(item.get("name")),
                                 "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments or {})}}
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant":
                last.setdefault("tool_calls", []).append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            output = item.get("output")
            messages.append({"role": "tool", "tool_call_id": str(item.get("call_id")),
                             "content": output if isinstance(output, str) else json.dumps(output)})
    return messages


def chat_tools(tools):
    return [{"type": "function", "function": {
        "name": tool.get("name"),
        **({"description": tool["description"]} if tool.get("description") else {}),
        "parameters": tool.get("parameters") or {"type": "object", "properties": {}},
    }} for tool in tools]


def post_json(url, body, headers):
    """POST `body` as JSON; the answer parsed, read at most MAX_MODEL_ANSWER_BYTES. Every failure is a ModelError."""
    request = urllib.request.Request(url, data=json.dumps(body).encode("utf-8"), method="POST",
                                     headers={"Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(request, timeout=MODEL_TIMEOUT_S) as answer:
            raw = answer.read(MAX_MODEL_ANSWER_BYTES + 1)
    except urllib.error.HTTPError as err:
        text = err.read(2000).decode("utf-8", "replace")
        raise ModelError(f"the model answered HTTP {err.code} at {url}: {excerpt(text)}") from None
    except (OSError, http.client.HTTPException) as err:  # refused, reset, timed out, cut off mid-answer
        reason = getattr(err, "reason", None) or err
        raise ModelError(f"the model call to {url} failed ({type(err).__name__}): {reason}") from None
    if len(raw) > MAX_MODEL_ANSWER_BYTES:
        raise ModelError(f"the model's answer at {url} is over {MAX_MODEL_ANSWER_BYTES} bytes")
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        text = raw.decode("utf-8", "replace")
        raise ModelError(f"the model's answer at {url} is not JSON: {excerpt(text)}") from None


def model_step(model, conversation, tools, tool_names, instructions):
    """Ask the model for this step: (output items, usage, the model's name)."""
    base, api_key = model
    body = {"messages": chat_messages(conversation, instructions)}
    if MODEL_NAME:
        body["model"] = MODEL_NAME  # a model server puts in its own; a plain server needs one
    if tools:
        body["tools"] = chat_tools(tools)
    url = f"{base}/chat/completions"
    answer = post_json(url, body, {"Authorization": f"Bearer {api_key}"} if api_key else {})
    choices = answer.get("choices") if isinstance(answer, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(message, dict):
        raise ModelError(f"the model's answer at {url} has no choices[0].message: {excerpt(json.dumps(answer))}")
    model_name = answer.get("model") if isinstance(answer.get("model"), str) else "chat model"
    return step_items(message, url, tool_names), chat_usage(answer.get("usage")), model_name


def step_items(message, url, tool_names):
    """The model's message as output items: its text as an assistant message, each tool call as an ask. Both go out
    unchanged (a trainer finds them there); a call's argument text too, so malformed JSON comes back from Gym as an
    error the model can read."""
    output = []
    if isinstance(message.get("content"), str) and message["content"]:
        output.append(message_item(message["content"]))
    calls = message.get("tool_calls")
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise ModelError(f"the model's answer at {url} has a tool call without a function name: "
                             f"{excerpt(json.dumps(call))}")
        if function["name"] not in tool_names:
            raise ModelError(f"the model asked for tool '{function['name']}', which this request did not declare")
        arguments = function.get("arguments")
        output.append(function_call_item(function["name"], arguments if isinstance(arguments, str) and arguments
                                         else "{}"))
    if not output:
        output.append(message_item(""))  # an empty answer still ends the rollout, visibly
    return output


def chat_usage(usage):
    """Chat usage as a complete Responses usage; a count that is missing or not a whole number is 0."""
    usage = usage if isinstance(usage, dict) else {}

    def count(value):
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0

    def detail(key, name):
        return count(usage[key].get(name)) if isinstance(usage.get(key), dict) else 0

    tokens_in, tokens_out = count(usage.get("prompt_tokens")), count(usage.get("completion_tokens"))
    return {"input_tokens": tokens_in,
            "input_tokens_details": {"cached_tokens": detail("prompt_tokens_details", "cached_tokens")},
            "output_tokens": tokens_out,
            "output_tokens_details": {"reasoning_tokens": detail("completion_tokens_details", "reasoning_tokens")},
            "total_tokens": tokens_in + tokens_out}


def excerpt(text):
    flat = " ".join(text.split())
    return flat if len(flat) <= 300 else flat[:300] + "…"


def model_for(headers):
    """The rollout's model URL from Gym's header when it is an http(s) URL (no key: the model server holds it),
    else the --model-url model, else None (the planner)."""
    url = (headers.get(MODEL_BASE_URL_HEADER) or "").strip()
    if re.fullmatch(r"https?://\S+", url):
        return (url.rstrip("/"), None)
    return DEFAULT_MODEL


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
            body = build_response(params, model_for(self.headers))
        except ModelError as err:  # the model failed, not this service: a 5xx, so Gym records a retryable failure
            return self.reply(502, {"detail": str(err)})
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
    global INCREMENTAL, MODEL_NAME, DEFAULT_MODEL, MODEL_TIMEOUT_S
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--incremental", action="store_true", help="ask for one increment per call")
    parser.add_argument("--model-url", help="OpenAI-compatible base URL (…/v1) for calls without Gym's model URL; "
                        "its key from $OPENAI_API_KEY, if set")
    parser.add_argument("--model", help="the model name sent (a model server behind Gym's URL puts in its own)")
    parser.add_argument("--model-timeout", type=float, default=MODEL_TIMEOUT_S, help="seconds for one model call")
    args = parser.parse_args()
    if args.model_url is not None and not re.fullmatch(r"https?://\S+", args.model_url):
        parser.error(f"--model-url must be an http(s) URL such as http://localhost:8000/v1, got '{args.model_url}'")
    if args.model_timeout <= 0:
        parser.error(f"--model-timeout must be a positive number of seconds, got {args.model_timeout}")
    INCREMENTAL = args.incremental
    MODEL_TIMEOUT_S = args.model_timeout
    MODEL_NAME = args.model
    if args.model_url:
        DEFAULT_MODEL = (args.model_url.rstrip("/"), os.environ.get("OPENAI_API_KEY") or None)
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    brain = f"python stdlib service (model at {args.model_url})" if args.model_url else BRAIN_NAME
    print(f"{brain} listening on http://{args.host}:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
