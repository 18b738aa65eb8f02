"""Ollama's native ``/api/chat`` history (the ``ollama`` package's ``Message``): tool calls
without ids, results that name their tool (``tool_name``), images as base64 strings beside the
text. Read so, each result pairs with its call, the summary shows what the tools returned, the
images are priced, and every message the Compactor and repair write is one the SDK accepts."""

from __future__ import annotations

import base64
import copy
import re
import struct
import zlib
from typing import Any

import pytest

import contextfold as cf


def png_base64(width: int, height: int, pad: int) -> str:
    """Base64 of a PNG whose header says ``width`` x ``height``, padded with ``pad`` bytes."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    png = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", len(ihdr)) + chunk + struct.pack(">I", zlib.crc32(chunk))
    return base64.b64encode(png + b"\0" * pad).decode()


def history(rounds: int = 8, image: bool = True) -> list[dict[str, Any]]:
    h: list[dict[str, Any]] = [{"role": "system", "content": "You run shell commands for the user."},
                               {"role": "user", "content": "Find why the build fails; never delete files."}]
    for i in range(rounds):
        # Two calls of one tool in one turn: the results answer them in order.
        h.append({"role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": "run", "arguments": {"cmd": f"make step{i}"}}},
            {"function": {"name": "run", "arguments": {"cmd": f"cat log{i}.txt"}}}]})
        h.append({"role": "tool", "tool_name": "run", "content": f"step {i}: error E{100 + i} in unit{i}.c " * 80})
        h.append({"role": "tool", "tool_name": "run", "content": f"log {i} says: missing header h{i}.h " * 80})
        h.append({"role": "assistant", "content": f"Step {i} fails on E{100 + i}."})
    last: dict[str, Any] = {"role": "user", "content": "And this screenshot?"}
    if image:
        last["images"] = [png_base64(800, 600, 60_000)]
    h.append(last)
    return h


def orphans(messages: list[dict[str, Any]]) -> list[int]:
    """Tool results not inside the results that follow an assistant turn with calls."""
    out, open_calls = [], 0
    for i, m in enumerate(messages):
        if m.get("role") == "assistant":
            open_calls = len(m.get("tool_calls") or [])
        elif m.get("role") == "tool":
            if open_calls == 0:
                out.append(i)
            open_calls = max(0, open_calls - 1)
        else:
            open_calls = 0
    return out


def test_results_that_name_their_tool_pair_with_its_calls_at_every_budget():
    h = history()
    before = copy.deepcopy(h)
    whole = cf.estimate(h, provider="ollama")
    checked = 0
    for share in [k / 40 for k in range(3, 40)]:
        r = cf.Compactor(budget=int(whole * share), provider="ollama").compact(h)
        assert orphans(list(r.messages)) == [], share
        assert r.tokens_after <= int(whole * share)
        checked += 1
    assert checked == 37
    assert h == before


def test_the_summary_shows_what_the_tools_returned():
    h = history(image=False)
    r = cf.Compactor(budget=cf.estimate(h, provider="ollama") // 10, provider="ollama").compact(h)
    assert r.summary is not None
    assert "no result in this span" not in r.summary
    assert "error E100 in unit0.c" in r.summary


def test_an_image_beside_the_text_is_priced_and_its_message_keeps_a_string_content():
    h = history()
    text_only = history(image=False)
    extra = cf.estimate(h, provider="ollama") - cf.estimate(text_only, provider="ollama")
    # The picture costs tokens, not its base64 length (80 kB of it here).
    assert 50 < extra < 4_000
    r = cf.Compactor(budget=cf.estimate(h, provider="ollama") // 4, provider="ollama").compact(h)
    last = r.messages[-1]
    assert last["images"] == h[-1]["images"] and isinstance(last["content"], str)


def test_every_message_written_is_one_the_ollama_sdk_accepts():
    ollama = pytest.importorskip("ollama")
    h = history()
    whole = cf.estimate(h, provider="ollama")
    for share in (0.15, 0.3, 0.6):
        for m in cf.Compactor(budget=int(whole * share), provider="ollama").compact(h).messages:
            # (The client turns base64 strings into its Image type before it validates.)
            images = [ollama.Image(value=i) for i in m.get("images", ())]
            ollama.Message.model_validate({**m, "images": images} if images else m)
    broken = [h[1], {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "run", "arguments": {}}}]},
              {"role": "user", "content": "well?"}]
    repaired = cf.repair(broken, provider="ollama")
    stand_in = repaired.messages[2]
    assert stand_in["role"] == "tool" and stand_in["tool_name"] == "run" and "interrupted" in stand_in["content"]
    for m in repaired.messages:
        ollama.Message.model_validate(m)


def test_a_recall_call_without_an_id_is_answered_by_the_tool_name():
    h = history(image=False)
    c = cf.Compactor(budget=cf.estimate(h, provider="ollama") // 4, provider="ollama", recoverable=True)
    r = c.compact(h)
    text = " ".join(str(m.get("content")) for m in r.messages)
    ids = re.findall(r"id=(cf[0-9a-f]+)", text)
    assert ids, text[:500]
    call = {"role": "assistant", "content": "",
            "tool_calls": [{"function": {"name": "contextfold_recall", "arguments": {"id": ids[0]}}}]}
    answer = c.answer(call, history=[*r.messages, call])
    assert answer["role"] == "tool" and answer["tool_name"] == "contextfold_recall"
    assert "tool_call_id" not in answer and ids[0] in answer["content"]


def test_shortened_arguments_stay_the_object_ollama_sends():
    ollama = pytest.importorskip("ollama")
    h: list[dict[str, Any]] = [{"role": "user", "content": "Write the files."}]
    for i in range(6):
        h.append({"role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": "write_file", "arguments": {"path": f"f{i}.py", "content": f"x = {i}\n" * 2000}}}]})
        h.append({"role": "tool", "tool_name": "write_file", "content": "ok"})
    h.append({"role": "user", "content": "Next."})
    whole = cf.estimate(h, provider="ollama")
    for share in (0.2, 0.4, 0.7):
        r = cf.Compactor(budget=int(whole * share), provider="ollama").compact(h)
        args = [c["function"]["arguments"] for m in r.messages for c in m.get("tool_calls") or []]
        assert args and all(isinstance(a, dict) for a in args), share
        # Shortened, and still the call's keys.
        assert sum(len(a["content"]) for a in args) < sum(len(c["function"]["arguments"]["content"])
                                                         for m in h for c in m.get("tool_calls") or [])
        for m in r.messages:
            ollama.Message.model_validate(m)


def screenshot_loop(turns: int = 6, per_result: int = 1) -> list[dict[str, Any]]:
    """A computer-use loop on Ollama's native API: each screenshot comes back in its tool
    result's ``images``, beside a string ``content``; the user shows one picture first."""
    h: list[dict[str, Any]] = [{"role": "user", "content": "Watch the build.", "images": [png_base64(640, 480, 200)]}]
    for k in range(turns):
        h.append({"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "screenshot", "arguments": {}}}]})
        h.append({"role": "tool", "tool_name": "screenshot", "content": f"shot {k}",
                  "images": [png_base64(1280, 800, 200 + j) for j in range(per_result)]})
        h.append({"role": "assistant", "content": f"Still building ({k})."})
    h.append({"role": "user", "content": "status?"})
    return h


@pytest.mark.parametrize("per_result", [1, 2])
def test_old_images_of_tool_results_are_masked_on_their_images_field(per_result):
    # The core planned the mask at `content[1]` of a message whose content is a string:
    # "cannot take the edit its repair or compaction needs" out of prune and compact.
    ollama = pytest.importorskip("ollama")
    h = screenshot_loop(per_result=per_result)
    before = copy.deepcopy(h)
    outs = [cf.prune(h, protect_tail_tokens=10, min_tail=1, provider="ollama")]
    whole = cf.estimate(h, provider="ollama")
    for strategy in ("mask", "hybrid"):
        for recoverable in (False, True):
            c = cf.Compactor(budget=whole // 2, provider="ollama", strategy=strategy, recoverable=recoverable)
            outs.append(list(c.compact(h).messages))
    assert h == before
    for out in outs:
        assert cf.estimate(out, provider="ollama") < whole
        masked = [m for m in out if m.get("role") == "tool" and m.get("images") == []]
        assert masked, out
        # Masked as a chat image part is: its size said in its place, after the result's text.
        for m in masked:
            assert re.fullmatch(rf"shot \d(\n\[[^\n]*image[^\n]*\]){{{per_result}}}", m["content"]) or \
                "contextfold:summary" in m["content"], m["content"]
        if out is not outs[0]:  # (the prune's tail here is the last message alone)
            assert out[-3]["images"] == h[-3]["images"], "the newest screenshot stays"
        assert orphans(out) == []
        for m in out:
            images = [ollama.Image(value=i) for i in m.get("images", ())]
            ollama.Message.model_validate({**m, "images": images} if images else m)


def test_an_old_picture_the_user_showed_is_masked_on_its_images_field():
    # (A plain user turn shows no format of its own: its images are Ollama's all the same.)
    h = [{"role": "user", "content": "Fix the build."}, {"role": "assistant", "content": "Which error?"},
         {"role": "user", "content": "Look.", "images": [png_base64(1280, 800, 200)]},
         {"role": "assistant", "content": "A build log."}, {"role": "user", "content": "And now?"},
         {"role": "assistant", "content": "Still building."}, {"role": "user", "content": "ok"}]
    out = cf.prune(h, protect_tail_tokens=10, min_tail=1, provider="ollama")
    assert out[2] == {"role": "user", "content": "Look.\n[image omitted: 1280x800]", "images": []}
    assert out[:2] == h[:2] and out[3:] == h[3:] and h[2]["images"]
