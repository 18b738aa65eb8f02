"""A text agent's trajectory rewritten as a tool-calling agent's.

mini-swe-agent fences its command in the assistant's text and gets the observation back as a
user turn (``<returncode>N</returncode><output>...</output>``). Agents that call tools through
the API send the command as a ``terminal`` tool call and get a tool result, wrapped their own
way. The same real runs in those shapes check that what a compaction keeps does not depend on
the wrapper:

- ``"json"``: a JSON envelope ``{"output": ..., "exit_code": N, "error": null}`` (the shape of
  hermes-agent's ``terminal`` tool);
- ``"exit_line"``: the output, then a trailer line ``[Command finished with exit code N]``;
- ``"plain"``: the output alone (no verdict but its words);
- ``"read_tool"`` (``READ_TOOL_STYLE``): a coding agent's two tools, ``Read`` for the commands
  that print a file's lines (its result numbered ``     12→line``, as Claude Code's ``Read``
  numbers it) and ``Bash`` for the rest (the output alone);
- ``"read_tool_raw"``: the same, the file's lines returned unnumbered (as Gemini CLI's
  ``read_file`` returns them);
- ``"read_tool_json"``: hermes-agent's tools, ``terminal`` (the JSON envelope above),
  ``read_file`` for the commands that print a file's lines, its result a JSON record whose
  ``content`` numbers the lines ``12|line`` (the keys of hermes-agent's ``ReadResult.to_dict``:
  ``content``, ``total_lines``, ``file_size``, ``truncated``, ``is_binary``, ``is_image``), and
  ``search_files`` for a plain ``grep -n PATTERN PATH`` (its hits as hermes-agent's
  ``SearchResult.to_dict``: ``total_count`` and ``matches`` of ``path``, ``line``, ``content``).

The thought before the fence stays the assistant's text; the fence becomes the call.
"""

from __future__ import annotations

import json
import re
from typing import Any

STYLES = ("json", "exit_line", "plain")

#: A coding agent's tools (the shape of Claude Code's ``Read`` and ``Bash``): a command that
#: prints a file's lines (``cat X``, ``sed -n 'A,Bp' X``, ``nl -ba X | sed -n 'A,Bp'``) becomes a
#: ``Read`` call whose result numbers its lines (``     A→line``); any other command a ``Bash``
#: call with its output alone. A read that failed stays a ``Bash`` call, its error as printed.
READ_TOOL_STYLE = "read_tool"
#: The same, the file's lines unnumbered.
READ_TOOL_RAW_STYLE = "read_tool_raw"
#: hermes-agent's shape: ``read_file`` returning a JSON record, ``terminal`` a JSON envelope.
READ_TOOL_JSON_STYLE = "read_tool_json"
READ_TOOL_STYLES = (READ_TOOL_STYLE, READ_TOOL_RAW_STYLE, READ_TOOL_JSON_STYLE)

def _function_tool(name: str, description: str, **params: str) -> dict[str, Any]:
    """A chat-completions function tool whose parameters are ``params`` (name -> JSON type),
    the first one required."""
    properties = {k: {"type": t} for k, t in params.items()}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": properties, "required": [next(iter(params))]}}}


TERMINAL_TOOL = _function_tool("terminal", "Run a shell command and return its output and exit code.",
                               command="string")
READ_TOOL = _function_tool("Read", "Read a file; its lines come back numbered from `offset` (1 when absent).",
                           file_path="string", offset="integer", limit="integer")
BASH_TOOL = _function_tool("Bash", "Run a shell command and return what it printed.", command="string")
READ_FILE_TOOL = _function_tool("read_file", "Read a text file with line numbers, from `offset` for `limit` lines.",
                                path="string", offset="integer", limit="integer")
SEARCH_FILES_TOOL = _function_tool("search_files", "Search file contents for a regex pattern under a path.",
                                   pattern="string", path="string")


def tools_for(style: str) -> list[dict[str, Any]]:
    """The tools a history rewritten in ``style`` calls."""
    if style == READ_TOOL_JSON_STYLE:
        return [TERMINAL_TOOL, READ_FILE_TOOL, SEARCH_FILES_TOOL]
    return [READ_TOOL, BASH_TOOL] if style in READ_TOOL_STYLES else [TERMINAL_TOOL]


_FENCE = re.compile(r"```(?:bash|sh)\s*\n(.*?)\n```", re.S)
_CAT = re.compile(r"cat\s+([^\s|;&<>]+)")
_SED = re.compile(r"sed -n\s+'?(\d+),(\d+)p'?\s+([^\s|;&<>]+)")
_NL_SED = re.compile(r"nl -ba\s+([^\s|;&<>]+)\s*\|\s*sed -n\s+'?(\d+),(\d+)p'?")
_NUMBERED = re.compile(r"^\s*\d+\t", re.M)


def _read_call(command: str) -> dict[str, Any] | None:
    """The ``Read`` arguments of a command that only prints a file's lines (None: another)."""
    cmd = command.strip()
    if m := _CAT.fullmatch(cmd):
        return {"file_path": m.group(1)}
    if m := _SED.fullmatch(cmd):
        first, last = int(m.group(1)), int(m.group(2))
        return {"file_path": m.group(3), "offset": first, "limit": max(1, last - first + 1)}
    if m := _NL_SED.fullmatch(cmd):
        first, last = int(m.group(2)), int(m.group(3))
        return {"file_path": m.group(1), "offset": first, "limit": max(1, last - first + 1)}
    return None


_GREP = re.compile(r"grep((?:\s+-[a-zA-Z]+)*)\s+(\"[^\"]*\"|'[^']*'|[^\s\"'|;&<>]+)\s+([^\s|;&<>]+)")
_HIT = re.compile(r"(?:(.+?):)?(\d+):(.*)")


def _search_call(command: str) -> dict[str, Any] | None:
    """The ``search_files`` arguments of a plain ``grep -n[r] PATTERN PATH`` (its flags letters
    only, ``-n`` among them; None: another command)."""
    m = _GREP.fullmatch(command.strip())
    if m is None or "n" not in m.group(1) or any(c in m.group(1) for c in "ABClLcoqv"):
        return None
    return {"pattern": m.group(2).strip("'\""), "path": m.group(3)}


def _search_result(body: str, args: dict[str, Any]) -> str | None:
    """What hermes-agent's ``search_files`` returns for grep's hits ``body`` (``path:line:text``,
    or ``line:text`` in one file); None when a line is no hit."""
    matches = []
    for line in body.split("\n"):
        if not line.strip():
            continue
        hit = _HIT.fullmatch(line)
        if hit is None:
            return None
        matches.append({"path": hit.group(1) or args["path"], "line": int(hit.group(2)), "content": hit.group(3)})
    result: dict[str, Any] = {"total_count": len(matches)}
    if matches:
        result["matches"] = matches
    return json.dumps(result, ensure_ascii=False)


def _read_result(body: str, args: dict[str, Any], numbered: bool, style: str) -> str:
    """A read tool's result in ``style``: the file's lines (``nl -ba`` numbers dropped first),
    numbered from the call's offset (``     12→line``; ``12|line`` in a JSON record for
    ``read_tool_json``, whose ``total_lines`` is the last line shown: the run never printed the
    file's length), or as they are (``read_tool_raw``)."""
    if numbered:
        body = _NUMBERED.sub("", body)
    if style == READ_TOOL_RAW_STYLE:
        return body
    first = int(args.get("offset", 1))
    lines = body.split("\n")
    if style == READ_TOOL_JSON_STYLE:
        content = "\n".join(f"{first + k}|{line}" for k, line in enumerate(lines))
        return json.dumps({"content": content, "total_lines": first + len(lines) - 1,
                           "file_size": len(body.encode()), "truncated": False, "is_binary": False,
                           "is_image": False}, ensure_ascii=False)
    return "\n".join(f"{first + k:>6}\u2192{line}" for k, line in enumerate(lines))
_CODE = re.compile(r"<returncode>(-?\d+)</returncode>")
_TAGS = re.compile(r"</?output(?:_head|_tail)?>")


def _result(observation: str, style: str) -> tuple[str, int | None]:
    m = _CODE.match(observation)
    body = _TAGS.sub("", observation[m.end():] if m else observation).strip("\n")
    code = int(m.group(1)) if m else None
    if style == "json":
        return json.dumps({"output": body, "exit_code": -1 if code is None else code, "error": None},
                          ensure_ascii=False), code
    if style == "exit_line" and code is not None:
        return f"{body}\n[Command finished with exit code {code}]", code
    return body, code


def as_terminal_calls(messages: list[dict[str, Any]], style: str) -> tuple[list[dict[str, Any]], list[int | None]]:
    """The trajectory with each fenced command a ``terminal`` call and each observation its
    result in ``style``; also the exit code of each call, in order (None where the harness
    answered without one: a format complaint)."""
    if style not in (*STYLES, *READ_TOOL_STYLES):
        raise ValueError(f"style must be one of {(*STYLES, *READ_TOOL_STYLES)}, got {style!r}")
    reading = style in READ_TOOL_STYLES
    pending_read: dict[str, Any] | None = None
    pending_command = ""
    out: list[dict[str, Any]] = []
    codes: list[int | None] = []
    pending: str | None = None
    for m in messages:
        content = m.get("content")
        fence = _FENCE.search(content) if m["role"] == "assistant" and isinstance(content, str) else None
        if pending is not None:
            # The harness answers every command once, coded or not (a format complaint); an
            # assistant turn right after a command leaves it without output.
            answered = m["role"] != "assistant"
            hermes = style == READ_TOOL_JSON_STYLE
            observation = content if answered and isinstance(content, str) else ""
            # (The read tools' other calls return the output alone; hermes-agent's terminal, its envelope.)
            text, code = _result(observation, style if style in STYLES else "json" if hermes else "plain")
            printed = _result(observation, "plain")[0]
            call = out[-1]["tool_calls"][0]["function"]
            searched = _search_call(pending_command) if hermes and code in (0, 1) else None
            found = _search_result(printed, searched) if searched else None
            if searched is not None and found is not None:
                # (grep exits 1 when nothing matched: hermes-agent's search returns no hits.)
                call["name"], call["arguments"], text = "search_files", json.dumps(searched), found
            elif pending_read is not None and code == 0:
                name, path_key = ("read_file", "path") if hermes else ("Read", "file_path")
                args = {path_key: pending_read["file_path"], **{k: v for k, v in pending_read.items() if k != "file_path"}}
                call["name"], call["arguments"] = name, json.dumps(args)
                text = _read_result(printed, pending_read, pending_command.lstrip().startswith("nl "), style)
            out.append({"role": "tool", "tool_call_id": pending, "content": text})
            codes.append(code if answered else None)
            pending = None
            if answered:
                continue
        if fence is not None:
            pending = f"call_{len(codes) + 1:03d}"
            thought = re.sub(r"^THOUGHT:\s*", "", (content[:fence.start()] + content[fence.end():]).strip())
            pending_command = fence.group(1)
            pending_read = _read_call(pending_command) if reading else None
            out.append({"role": "assistant", "content": thought or None, "tool_calls": [{
                "id": pending, "type": "function",
                "function": {"name": "Bash" if reading and style != READ_TOOL_JSON_STYLE else "terminal",
                             "arguments": json.dumps({"command": pending_command})}}]})
        else:
            out.append(dict(m))
    if pending is not None:
        out.pop()  # a call the run never got an answer to: the history ends before it
    return out, codes
