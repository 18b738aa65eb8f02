"""A deterministic synthetic agent history for benchmarks.

Shape of a coding agent's history: ~2,300-character user and assistant turns, assistant turns
that fan out into 1-5 parallel tool calls, tool outputs of mixed size (some large), and a few
real base64 PNG screenshots (built in memory, valid headers, ~0.5-2 MB each).
"""

from __future__ import annotations

import base64
import json
import random
import struct
import zlib

_WORDS = (
    "the agent reads file error value return self import class def data line test path config "
    "request response token context window budget summary tool call output message history "
    "assert raise None True False for in if else while try except with open json parse"
).split()
_CODE = [
    "def handle(self, request):\n    return self.router.dispatch(request)\n",
    "for i, item in enumerate(items):\n    total += item.cost * weights[i]\n",
    "if not path.exists():\n    raise FileNotFoundError(path)\n",
    "result = json.loads(payload)['data'][0]['value']\n",
]


def _text(rng: random.Random, n: int) -> str:
    out: list[str] = []
    size = 0
    while size < n:
        if rng.random() < 0.25:
            s = rng.choice(_CODE)
        else:
            s = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(6, 18))) + ". "
        out.append(s)
        size += len(s)
    return "".join(out)[:n]


def _png(width: int, height: int, payload: int, rng: random.Random) -> str:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    noise = rng.randbytes(payload)
    raw = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", noise) + chunk(b"IEND", b"")
    return "data:image/png;base64," + base64.b64encode(raw).decode()


def synthetic_history(n: int, *, seed: int = 7, images: int = 3) -> list[dict]:
    """`n` messages of an agent history (OpenAI chat format), deterministic for a seed."""
    rng = random.Random(seed)
    msgs: list[dict] = [{"role": "system", "content": _text(rng, 3000)}]
    image_at = {int(n * (k + 1) / (images + 1)) for k in range(images)}
    turn = 0
    while len(msgs) < n:
        if len(msgs) in image_at:
            url = _png(rng.choice([1280, 1920, 2560]), rng.choice([720, 1080, 1440]), rng.randint(400_000, 1_500_000), rng)
            msgs.append({"role": "user", "content": [
                {"type": "text", "text": "Here is the screenshot of the failing page."},
                {"type": "image_url", "image_url": {"url": url, "detail": "high"}},
            ]})
            continue
        msgs.append({"role": "user", "content": _text(rng, rng.randint(1800, 2800))})
        calls = []
        for j in range(rng.randint(1, 5)):
            args = {"path": f"src/module_{turn}_{j}.py", "start": rng.randint(1, 500), "limit": 200}
            if rng.random() < 0.3:
                args["pattern"] = _text(rng, 60)
            calls.append({
                "id": f"call_{rng.getrandbits(96):024x}",
                "type": "function",
                "function": {"name": rng.choice(["read_file", "grep", "run_tests", "list_dir"]), "arguments": json.dumps(args)},
            })
        msgs.append({"role": "assistant", "content": _text(rng, rng.randint(100, 600)), "tool_calls": calls})
        for c in calls:
            size = rng.choice([300, 1500, 2300, 2300, 6000, 20000])
            msgs.append({"role": "tool", "tool_call_id": c["id"], "content": _text(rng, size)})
        msgs.append({"role": "assistant", "content": _text(rng, rng.randint(1500, 2800))})
        turn += 1
    return msgs[:n]
