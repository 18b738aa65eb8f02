"""Valid provider shapes found mishandled by building histories from the SDKs' own types
(anthropic, openai, google-genai, botocore's Converse model): what a user says beside tool
results, Bedrock's guardrail and citation blocks, a code interpreter's chart, and the media
whose billed size its own header says (a WAV's duration, a PDF's pages)."""

from __future__ import annotations

import base64
import json
import struct
import zlib
from typing import Any

import contextfold as cf

#: The tail these scenarios were sized with (the default before stop 83): their folds and their
#: summaries' rooms, and so which calls a summary lists and which turns stay whole, follow it.
SCENARIO_TAIL = 3


def png(width: int, height: int, pad: int = 20_000) -> bytes:
    """A PNG whose header says ``width`` x ``height``, padded with ``pad`` bytes."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", len(ihdr)) + chunk + struct.pack(">I", zlib.crc32(chunk)) + b"\0" * pad


def wav(seconds: int, rate: int, channels: int) -> bytes:
    byte_rate = rate * channels * 2
    data = byte_rate * seconds
    fmt = struct.pack("<HHIIHH", 1, channels, rate, byte_rate, channels * 2, 16)
    return b"RIFF" + struct.pack("<I", 36 + data) + b"WAVEfmt " + struct.pack("<I", 16) + fmt + b"data" + struct.pack("<I", data) + b"\0" * data


def pdf(pages: int) -> bytes:
    body = [b"%PDF-1.4", b"1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj",
            b"2 0 obj << /Type /Pages /Count %d >> endobj" % pages]
    body += [b"%d 0 obj << /Type /Page /Parent 2 0 R >> endobj" % (k + 3) for k in range(pages)]
    return b"\n".join(body) + b"\n%%EOF"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_a_rule_said_beside_tool_results_is_kept_by_the_summary() -> None:
    """Anthropic puts what the user says next in the turn that returns the tool results."""
    h: list[dict[str, Any]] = [{"role": "user", "content": "Run the deploy tests."}]
    for k in range(6):
        h.append({"role": "assistant", "content": [{"type": "text", "text": f"Step {k}."},
                                                   {"type": "tool_use", "id": f"t{k}", "name": "run_tests", "input": {"target": f"deploy_{k}"}}]})
        content: list[dict[str, Any]] = [{"type": "tool_result", "tool_use_id": f"t{k}", "content": f"deploy_{k}: 12 passed " + "ok line " * 150}]
        if k == 1:
            content.append({"type": "text", "text": "Never run the deploy against prod-eu-1; always use the staging cluster stg-7."})
        h.append({"role": "user", "content": content})
    h.append({"role": "assistant", "content": "All green."})
    h.append({"role": "user", "content": "Good, write the report."})
    r = cf.Compactor(provider="anthropic", budget=int(cf.estimate(h, provider="anthropic") * 0.3)).compact(h)
    assert r.summary and "prod-eu-1" in r.summary and "stg-7" in r.summary


def test_bedrock_guardrail_and_citation_blocks_are_read_as_what_they_wrap() -> None:
    image = png(800, 600, 400_000)
    plain = [{"role": "user", "content": [{"image": {"format": "png", "source": {"bytes": image}}}]}]
    guarded = [{"role": "user", "content": [{"guardContent": {"image": {"format": "png", "source": {"bytes": image}}}}]}]
    # An image by its pixels (about 640 tokens), not its 400 KB as text.
    assert cf.estimate(guarded, provider="anthropic") == cf.estimate(plain, provider="anthropic") < 1_000
    h: list[dict[str, Any]] = []
    for k in range(5):
        h.append({"role": "user", "content": [{"guardContent": {"text": {"text": f"Which deduction applies to invoice INV-{k}42? " + "Explain the rules in detail. " * 20}}}]})
        h.append({"role": "assistant", "content": [{"citationsContent": {
            "content": [{"text": f"Deduction DED-{k}00 applies to INV-{k}42. " + "It follows the policy. " * 20}],
            "citations": [{"title": "policy.pdf", "sourceContent": [{"text": "..."}], "location": {"documentPage": {"documentIndex": 0, "start": 1, "end": 1}}}]}}]})
    h.append({"role": "user", "content": [{"text": "Thanks, summarize."}]})
    r = cf.Compactor(provider="anthropic", budget=int(cf.estimate(h, provider="anthropic") * 0.5)).compact(h)
    assert r.summary and "INV-042" in r.summary and "DED-" in r.summary
    assert "0 user requests" not in r.summary


def test_a_code_interpreter_chart_is_priced_as_an_image() -> None:
    chart = "data:image/png;base64," + b64(png(1024, 1024, 600_000))
    item = {"type": "code_interpreter_call", "id": "ci_1", "container_id": "cntr_1", "status": "completed",
            "code": "import matplotlib\nplot(sales)", "outputs": [{"type": "logs", "logs": "mean 12.5"}, {"type": "image", "url": chart}]}
    tokens = cf.estimate([{"role": "user", "content": "Chart the sales."}, item], model="gpt-4o")
    # 765 for a 1024x1024 image at high detail, not the 800,000 characters of its base64.
    assert 700 < tokens < 1_000, tokens


def test_a_wav_is_priced_by_the_duration_its_header_says() -> None:
    per_rate = []
    for rate, channels in [(8_000, 1), (16_000, 1), (44_100, 2), (48_000, 2)]:
        part = {"type": "input_audio", "input_audio": {"data": b64(wav(10, rate, channels)), "format": "wav"}}
        per_rate.append(cf.estimate([{"role": "user", "content": [part]}], model="gpt-4o"))
    # 10 s of audio at 10 tokens a second (OpenAI), whatever the sample rate.
    assert max(per_rate) - min(per_rate) <= 1 and 100 <= per_rate[0] < 120, per_rate


def test_a_pdf_is_priced_by_its_pages() -> None:
    def doc(pages: int) -> list[dict[str, Any]]:
        return [{"role": "user", "content": [{"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": b64(pdf(pages))}},
                                             {"type": "text", "text": "Summarize."}]}]
    one, ten = (cf.estimate(doc(n), provider="anthropic") for n in (1, 10))
    # Small files: their size alone said one page each.
    assert ten - one > 8 * (one - 20), (one, ten)
    gemini = [{"role": "user", "parts": [{"inlineData": {"mimeType": "application/pdf", "data": b64(pdf(4))}}, {"text": "Summarize."}]}]
    # 258 tokens a page (Gemini API token counting).
    assert 4 * 258 <= cf.estimate(gemini, provider="gemini") < 4 * 258 + 40


def test_the_probed_shapes_compact_into_valid_histories() -> None:
    """The same blocks inside a longer history: compacted, nothing raised, pairs kept."""
    h: list[dict[str, Any]] = [{"role": "user", "content": [{"text": "Check the invoices."}]}]
    for k in range(8):
        h.append({"role": "assistant", "content": [{"toolUse": {"toolUseId": f"tu{k}", "name": "lookup", "input": {"invoice": f"INV-{k}"}}}]})
        h.append({"role": "user", "content": [{"toolResult": {"toolUseId": f"tu{k}", "content": [{"text": f"INV-{k}: " + "line item " * 200}]}},
                                              {"guardContent": {"text": {"text": f"Note {k}: keep invoice INV-{k} open."}}}]})
    h.append({"role": "assistant", "content": [{"text": "Done."}]})
    h.append({"role": "user", "content": [{"text": "And the totals?"}]})
    est = cf.estimate(h, provider="anthropic")
    for share in (0.3, 0.5, 0.7):
        r = cf.Compactor(provider="anthropic", budget=int(est * share)).compact(h)
        out = list(r.messages)
        for k, m in enumerate(out):
            uses = [b["toolUse"]["toolUseId"] for b in m["content"] if isinstance(b, dict) and "toolUse" in b]
            if uses:
                answered = [b["toolResult"]["toolUseId"] for b in out[k + 1]["content"] if isinstance(b, dict) and "toolResult" in b]
                assert sorted(uses) == sorted(answered), json.dumps(out[k:k + 2])[:300]
        assert r.tokens_after <= int(est * share)


def test_an_exact_count_prices_audio_and_files_it_cannot_tokenize() -> None:
    """`count` tokenizes text exactly; audio and files it estimates as the estimator prices them
    (they counted nothing, and `Compactor(exact=True)` kept a history far over its budget)."""
    audio = {"type": "input_audio", "input_audio": {"data": b64(wav(20, 16_000, 1)), "format": "wav"}}
    document = {"type": "file", "file": {"filename": "r.pdf", "file_data": "data:application/pdf;base64," + b64(pdf(12))}}
    msgs = [{"role": "user", "content": [{"type": "text", "text": "Transcribe and summarize."}, audio, document]}]
    counted = cf.count(msgs, model="gpt-4o")
    # 20 s at 10 tokens a second, 12 pages at about 100 tokens a page, and the text.
    assert 1_350 < counted < 1_500, counted
    assert abs(counted - cf.estimate(msgs, model="gpt-4o")) < 50


def test_a_long_text_beside_a_tool_call_is_cut_in_its_middle_to_fit() -> None:
    """An Anthropic turn of a long text and a `tool_use` whose result is kept: its text block is
    cut in the middle (the chat shape of the same turn already was); it raised
    `CompactionBudgetError` at half the history's size."""
    essay = " ".join(f"Finding {k}: the cache misses on shard {k % 7} under load." for k in range(400))
    h = [{"role": "user", "content": "Investigate the cache misses."},
         {"role": "assistant", "content": [{"type": "text", "text": essay},
                                           {"type": "tool_use", "id": "t1", "name": "rerun", "input": {"shard": 3}}]},
         {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "rerun: 0 misses"}]}]
    est = cf.estimate(h, provider="anthropic")
    r = cf.Compactor(provider="anthropic", budget=est // 2).compact(h)
    assert r.tokens_after <= est // 2
    out = list(r.messages)
    turn = next(m for m in out if m["role"] == "assistant" and isinstance(m["content"], list)
                and any(b.get("type") == "tool_use" for b in m["content"]))
    text = next(b["text"] for b in turn["content"] if b.get("type") == "text")
    assert text.startswith("Finding 0:") and "Finding 399:" in text and len(text) < len(essay) // 2
    assert out[-1]["content"][0]["tool_use_id"] == "t1"


def test_repair_drops_a_server_tool_call_whose_result_is_lost() -> None:
    """A `server_tool_use` is answered in its own turn by a result block of its kind: a client
    `tool_result` in the next user turn (what repair wrote) is refused by the API."""
    h = [{"role": "user", "content": "Search the web for the cache latency regression."},
         {"role": "assistant", "content": [{"type": "text", "text": "Searching."},
                                           {"type": "server_tool_use", "id": "srvtoolu_01AAA", "name": "web_search", "input": {"query": "cache latency"}}]},
         {"role": "user", "content": "Go on."},
         {"role": "assistant", "content": [{"type": "text", "text": "Listing issues."},
                                           {"type": "mcp_tool_use", "id": "mcptoolu_01BBB", "name": "list_issues", "server_name": "gh", "input": {}}]},
         {"role": "user", "content": "Thanks, summarise."}]
    r = cf.repair(h, provider="anthropic")
    dumped = json.dumps(r.messages)
    assert "srvtoolu_01AAA" not in dumped and "mcptoolu_01BBB" not in dumped
    assert "tool_result" not in dumped
    assert len(r.changes) == 2 and all("server tool call" in c for c in r.changes)
    assert [m["role"] for m in r.messages] == ["user", "assistant", "user", "assistant", "user"]


def test_gemini_code_execution_is_a_call_and_its_result_in_the_summary() -> None:
    """The code the model ran (`executableCode`) and what it returned (`codeExecutionResult`):
    shown as a call with its output, a failed run as an error, priced as their text."""
    h: list[dict[str, Any]] = []
    for i in range(6):
        h.append({"role": "user", "parts": [{"text": f"Now statistic {i}."}]})
        outcome = "OUTCOME_FAILED" if i == 3 else "OUTCOME_OK"
        output = "ZeroDivisionError: division by zero" if i == 3 else f"MEAN_{i} = {i + 1}\n" + "row value 0 region EU\n" * 60
        h.append({"role": "model", "parts": [
            {"text": f"I'll compute statistic {i}."},
            {"executableCode": {"language": "PYTHON", "code": f"vals = load('sales_{i}.csv')\nprint(mean(vals))"}},
            {"codeExecutionResult": {"outcome": outcome, "output": output}},
            {"text": "Done."}]})
    h.append({"role": "user", "parts": [{"text": "Summarize."}]})
    r = cf.Compactor(provider="gemini", budget=int(cf.estimate(h, provider="gemini") * 0.35), min_tail=SCENARIO_TAIL).compact(h)
    summary = r.summary or ""
    assert "code_execution(code=\"vals = load('sales_0.csv')" in summary, summary
    assert "MEAN_0 = 1" in summary and "1 errors" in summary and "ZeroDivisionError" in summary, summary
    # Kept turns are the caller's parts, untouched.
    kept = [json.dumps(m, sort_keys=True) for m in r.messages if m.get("role") == "model"]
    assert all(k in {json.dumps(m, sort_keys=True) for m in h} for k in kept[1:])


def gemini_search_turns(k: int, *, snake: bool) -> list[dict[str, Any]]:
    """Round ``k`` of a Gemini agent with server-side tool invocations returned: the model's turn
    holds the search it ran (`toolCall`), what came back (`toolResponse`) and a function call."""
    call, response, kind = ("tool_call", "tool_response", "tool_type") if snake else ("toolCall", "toolResponse", "toolType")
    fn_call, fn_response = ("function_call", "function_response") if snake else ("functionCall", "functionResponse")
    return [
        {"role": "model", "parts": [
            {call: {"id": f"tc{k}", kind: "GOOGLE_SEARCH_WEB", "args": {"queries": [f"ferry schedule pier {k}"]}},
             "thoughtSignature": "c2lnMTIz"},
            {response: {"id": f"tc{k}", kind: "GOOGLE_SEARCH_WEB",
                        "response": {"answer": f"FERRY_{k} leaves at 0{k}:15 from pier 9. " + "timetable row. " * 200}}},
            {fn_call: {"id": f"fc{k}", "name": "get_weather", "args": {"city": f"Juneau{k}"}}}]},
        {"role": "user", "parts": [{fn_response: {"id": f"fc{k}", "name": "get_weather", "response": {"output": f"rain {k}"}}}]},
        {"role": "model", "parts": [{"text": f"Noted step {k}."}]},
        {"role": "user", "parts": [{"text": f"Next step {k}, please."}]},
    ]


def test_gemini_server_side_tool_invocations_are_said_in_the_summary() -> None:
    """A search the model ran server-side (`toolCall` / `toolResponse`, returned with
    `includeServerSideToolInvocations`) is a call and its result: the summary says what was
    searched and found (it said "[unknown]"), and the turn holding them is never edited."""
    for snake in (False, True):
        h: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": "Plan my Alaska trip."}]}]
        for k in range(5):
            h += gemini_search_turns(k, snake=snake)
        r = cf.Compactor(provider="gemini", budget=int(cf.estimate(h, provider="gemini") * 0.3), min_tail=SCENARIO_TAIL).compact(h)
        summary = r.summary or ""
        assert "8 tool calls" in summary.splitlines()[0], summary
        assert "GOOGLE_SEARCH_WEB(queries=" in summary and "ferry schedule pier 0" in summary, summary
        assert "FERRY_0 leaves" in summary, summary
        assert "[unknown]" not in summary
        kept = {json.dumps(m, sort_keys=True) for m in h}
        assert all(json.dumps(m, sort_keys=True) in kept for m in r.messages if m.get("role") == "model"
                   and any(("toolCall" in p or "tool_call" in p) for p in m["parts"]))
        assert not cf.repair(h, provider="gemini").changes


def test_a_gemini_server_call_without_its_result_in_the_turn_awaits_none() -> None:
    """A server-side invocation (`toolCall`) or a code run (`executableCode`) whose result is not
    in the model's turn (a stream cut short) is answered by no later message: it compacts, and
    `repair` writes no `functionResponse` for it (it wrote one named `code_execution`, a part
    count the API checks); the summary still says what was run."""
    h: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": "Find the ferry times."}]}]
    for k in range(8):
        parts: list[dict[str, Any]] = [
            {"toolCall": {"id": f"tc{k}", "toolType": "GOOGLE_SEARCH_WEB", "args": {"queries": [f"ferry pier {k}"]}}}
            if k % 2 else {"executableCode": {"language": "PYTHON", "code": f"print(fares[{k}])"}}]
        parts.append({"text": f"Looked it up ({k}). " + "details " * 60})
        h += [{"role": "model", "parts": parts}, {"role": "user", "parts": [{"text": f"And then step {k}?"}]}]
    assert not cf.repair(h, provider="gemini").changes
    r = cf.Compactor(provider="gemini", budget=cf.estimate(h, provider="gemini") // 3, min_tail=SCENARIO_TAIL).compact(h)
    summary = r.summary or ""
    assert '[GOOGLE_SEARCH_WEB {"queries":["ferry pier' in summary and '[code_execution {"code":"print(fares[' in summary, summary


def test_gemini_media_resolution_prices_each_image_at_its_level() -> None:
    """Gemini 3 bills an image by its media resolution (caps 280 / 560 / 1,120 / 2,240 for low /
    medium / high / ultra high): set on a part (`mediaResolution: {level}`, either spelling,
    google-genai's typed `Part`) or for the request (`generationConfig.mediaResolution`, the
    SDK's config). Every level was priced as the default high: LOW 3.9x over, ULTRA_HIGH 2x under."""
    from google.genai import types

    data = b64(png(1024, 768))
    model = "gemini-3-flash-preview"

    def image_tokens(part: dict[str, Any], **kw: Any) -> int:
        return cf.estimate([{"role": "user", "parts": [part]}], provider="gemini", model=model, **kw) - \
            cf.estimate([{"role": "user", "parts": [{"text": ""}]}], provider="gemini", model=model, **kw)

    default = image_tokens({"inlineData": {"mimeType": "image/png", "data": data}})
    assert 1000 < default <= 1120
    for level, cap in (("LOW", 280), ("MEDIUM", 560), ("HIGH", 1120), ("ULTRA_HIGH", 2240)):
        name = f"MEDIA_RESOLUTION_{level}"
        camel = {"mediaResolution": {"level": name}, "inlineData": {"mimeType": "image/png", "data": data}}
        snake = {"media_resolution": {"level": name}, "inline_data": {"mime_type": "image/png", "data": data}}
        got = image_tokens(camel)
        assert got == image_tokens(snake) and abs(got - default * cap / 1120) <= 2, (level, got)
    # The request's level holds for images that set none; a part's own level wins over it.
    low = {"generationConfig": {"mediaResolution": "MEDIA_RESOLUTION_LOW"}}
    plain = [{"role": "user", "parts": [{"text": "look"}, {"inlineData": {"mimeType": "image/png", "data": data}}]}]
    assert cf.estimate_request({"model": model, "contents": plain, **low}) == \
        cf.estimate_request({"model": model, "contents": plain}) - default + image_tokens(
            {"mediaResolution": {"level": "MEDIA_RESOLUTION_LOW"}, "inlineData": {"mimeType": "image/png", "data": data}})
    high_part = [{"role": "user", "parts": [{"text": "look"}, {"mediaResolution": {"level": "MEDIA_RESOLUTION_HIGH"},
                                                               "inlineData": {"mimeType": "image/png", "data": data}}]}]
    assert cf.estimate_request({"model": model, "contents": high_part, **low}) == \
        cf.estimate_request({"model": model, "contents": high_part})
    # The SDK's typed parts and config say the same.
    sdk_part = types.Part.from_bytes(data=png(1024, 768), mime_type="image/png",
                                     media_resolution=types.MediaResolution.MEDIA_RESOLUTION_LOW)
    typed = [types.Content(role="user", parts=[types.Part(text="look"), sdk_part])]
    config = types.GenerateContentConfig(media_resolution=types.MediaResolution.MEDIA_RESOLUTION_LOW)
    assert cf.estimate(typed, provider="gemini", model=model) == \
        cf.estimate_request({"model": model, "contents": plain, "config": config}) == \
        cf.estimate_request({"model": model, "contents": plain, **low})
    # Before Gemini 3 the request's low is 64 tokens an image (the tiles otherwise).
    old = cf.estimate_request({"model": "gemini-2.5-flash", "contents": plain})
    assert cf.estimate_request({"model": "gemini-2.5-flash", "contents": plain, **low}) == old - 258 * 2 + 64
    # A session priced with the request's level keeps it across a saved state.
    s = cf.Session(provider="gemini", model=model, response_format=low["generationConfig"])
    first = s.estimate(plain)
    assert first == cf.estimate_request({"model": model, "contents": plain, **low})
    assert cf.Session.from_state(s.to_state()).estimate(plain) == first


def test_a_responses_item_reference_without_its_type_is_read_as_one() -> None:
    """The Responses input's item reference may leave out ``type`` (``{"id": "fc_..."}``): read
    as the typed reference, its output bound to it (it raised InvalidMessageError at every call)."""
    from openai.types.responses import ResponseInputItemParam
    from pydantic import TypeAdapter

    def h(typed: bool) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [{"role": "user", "content": "Look up the order status."}]
        for k in range(6):
            ref: dict[str, Any] = {"id": f"fc_{k}"}
            if typed:
                ref["type"] = "item_reference"
            out += [ref, {"type": "function_call_output", "call_id": f"call_{k}", "output": f"order {k}: shipped " * 200}]
        out.append({"role": "user", "content": "Which ones shipped?"})
        return out

    bare, typed = h(False), h(True)
    TypeAdapter(list[ResponseInputItemParam]).validate_python(bare)
    # (The same items, less the ``type`` key's few tokens each.)
    assert 0 <= cf.estimate(typed, provider="openai") - cf.estimate(bare, provider="openai") <= 6 * 8
    assert cf.repair(bare, provider="openai").changes == ()
    budget = cf.estimate(bare, provider="openai") // 3
    r = cf.Compactor(provider="openai", budget=budget).compact(bare)
    assert cf.estimate(r.messages, provider="openai") <= budget
    TypeAdapter(list[ResponseInputItemParam]).validate_python(r.messages)


def test_ollama_typed_images_are_priced_as_the_images_they_hold() -> None:
    """ollama's typed ``Message`` holds ``Image`` objects (a bare string is refused by the SDK):
    priced as the same image given as base64 text (they raised InvalidMessageError)."""
    import ollama

    image = png(1024, 768, 0)
    plain = [{"role": "user", "content": "What is on this screen?", "images": [b64(image)]}]
    typed = [ollama.Message(role="user", content="What is on this screen?", images=[ollama.Image(value=b64(image))])]
    raw = [ollama.Message(role="user", content="What is on this screen?", images=[ollama.Image(value=image)])]
    want = cf.estimate(plain, provider="ollama")
    assert want > 500
    assert cf.estimate(typed, provider="ollama") == want == cf.estimate(raw, provider="ollama")
    h: list[Any] = []
    for k in range(8):
        h += [ollama.Message(role="user", content=f"Screen {k}: what changed?", images=[ollama.Image(value=b64(image))]),
              ollama.Message(role="assistant", content=f"Screen {k} shows the login form with error E{k}42.")]
    h.append(ollama.Message(role="user", content="Summarize the errors."))
    budget = cf.estimate(h, provider="ollama") // 3
    r = cf.Compactor(provider="ollama", budget=budget).compact(h)
    assert cf.estimate(r.messages, provider="ollama") <= budget
    # The old screens are masked on their `images` field, as chat image parts are (no edit
    # reached them once, and a summary stood for the turns): the turns keep their words.
    assert r.strategy_used == "mask" and "E042" in str(r.messages)
    masked = [m for m in r.messages if isinstance(m, dict) and m.get("images") == []]
    assert masked and all("[image omitted: 1024x768]" in m["content"] for m in masked)
    for m in r.messages:
        ollama.Message.model_validate(m if not isinstance(m, dict) else {**m, "images": None})


def test_an_instruction_given_mid_history_is_kept_by_the_summary_whole() -> None:
    """A chat ``developer`` message (or Anthropic's mid-conversation ``system`` turn) that
    states a fact, not a rule, was kept only by its imperatives: folded, it was gone."""
    fact = "The customer upgraded to the enterprise plan; you may now query the billing database."
    for provider in ("openai", "anthropic"):
        h: list[dict[str, Any]] = [{"role": "user", "content": "Help me audit account ACME-4471."}]
        for k in range(8):
            page = f"page {k}: " + "entry ok; " * 150
            if provider == "openai":
                h.append({"role": "assistant", "content": None, "tool_calls": [
                    {"id": f"c{k}", "type": "function", "function": {"name": "read_ledger", "arguments": f'{{"page": {k}}}'}}]})
                h.append({"role": "tool", "tool_call_id": f"c{k}", "content": page})
            else:
                h.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"c{k}", "name": "read_ledger", "input": {"page": k}}]})
                h.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"c{k}", "content": page}]})
            if k == 2:
                if provider == "openai":
                    h.append({"role": "developer", "content": fact})
                else:
                    h += [{"role": "assistant", "content": "Pages 0-2 read."}, {"role": "system", "content": fact},
                          {"role": "user", "content": "Go on."}]
        h.append({"role": "assistant", "content": "Done with the pages."})
        h.append({"role": "user", "content": "What can you query now?"})
        r = cf.Compactor(provider=provider, strategy="summarize", budget=cf.estimate(h, provider=provider) // 4).compact(h)
        assert r.summary and f"[{'developer' if provider == 'openai' else 'system'}] {fact}" in r.summary, provider


def test_search_results_and_server_tool_results_are_said_in_the_summary() -> None:
    """Structured blocks that say something, folded: a search result (Anthropic
    ``search_result``, Bedrock ``searchResult``) and a file a server tool viewed are shown by what
    they say (the summary said ``[search_result]``), still priced by their JSON."""
    def anthropic(k: int) -> list[dict[str, Any]]:
        return [{"role": "assistant", "content": [{"type": "tool_use", "id": f"t{k}", "name": "kb_search", "input": {"q": f"q{k}"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{k}", "content": [
                    {"type": "search_result", "source": f"kb://refund-policy-{k}", "title": f"Refund policy v{k}",
                     "content": [{"type": "text", "text": f"Refunds within {10 + k} days. " + "Details follow. " * 120}]}]}]}]

    def bedrock(k: int) -> list[dict[str, Any]]:
        return [{"role": "assistant", "content": [{"toolUse": {"toolUseId": f"t{k}", "name": "kb_search", "input": {"q": f"q{k}"}}}]},
                {"role": "user", "content": [{"toolResult": {"toolUseId": f"t{k}", "content": [
                    {"searchResult": {"source": f"kb://refund-policy-{k}", "title": f"Refund policy v{k}",
                                      "content": [{"text": f"Refunds within {10 + k} days. " + "Details follow. " * 120}]}}]}}]}]

    for provider, rounds in (("anthropic", anthropic), ("bedrock", bedrock)):
        h: list[dict[str, Any]] = [{"role": "user", "content": [{"text": "What is the refund window?"}] if provider == "bedrock" else "What is the refund window?"}]
        for k in range(6):
            h += rounds(k)
        h += [{"role": "assistant", "content": [{"text": "Found it."}] if provider == "bedrock" else "Found it."},
              {"role": "user", "content": [{"text": "Which version applies?"}] if provider == "bedrock" else "Which version applies?"}]
        kw: dict[str, Any] = {"provider": "anthropic"}
        full = cf.estimate(h, **kw)
        assert full > 6 * 400  # priced by what they hold
        r = cf.Compactor(budget=full // 4, **kw).compact(h)
        assert r.summary and "Refund policy v0" in r.summary, provider
        assert "Refund policy v4 (kb://refund-policy-4): Refunds within" in r.summary, provider
        assert "[search_result]" not in r.summary and "[searchResult]" not in r.summary


def test_a_turn_that_adds_tools_mid_conversation_is_kept_where_it_stands() -> None:
    """Anthropic's ``tool_addition`` block (and Bedrock's ``toolAddition``) declares a tool that
    later calls name: folded like any turn, the kept calls named a tool declared nowhere."""
    schema = {"type": "object", "properties": {"sql": {"type": "string"}}}
    for provider in ("anthropic", "bedrock"):
        def text(t: str) -> Any:
            return [{"text": t}] if provider == "bedrock" else t
        added: dict[str, Any] = ({"toolAddition": {"tool": {"type": "tool", "name": "db_query"}}} if provider == "bedrock" else
                                 {"type": "tool_addition", "tool": {"type": "tool_definition",
                                                                    "definition": {"name": "db_query", "description": "Run SQL.", "input_schema": schema}}})
        first = {"text": "The warehouse is reachable now."} if provider == "bedrock" else {"type": "text", "text": "The warehouse is reachable now."}
        h: list[dict[str, Any]] = [{"role": "user", "content": text("Audit the warehouse.")},
                                   {"role": "assistant", "content": text("Waiting for access. " * 80)},
                                   {"role": "user", "content": text("Access is coming. " * 60)},
                                   {"role": "system", "content": [first, added]}]
        for k in range(6):
            if provider == "bedrock":
                h += [{"role": "assistant", "content": [{"toolUse": {"toolUseId": f"t{k}", "name": "db_query", "input": {"sql": f"select {k}"}}}]},
                      {"role": "user", "content": [{"toolResult": {"toolUseId": f"t{k}", "content": [{"text": f"rows {k}: " + "x, " * 300}]}}]}]
            else:
                h += [{"role": "assistant", "content": [{"type": "tool_use", "id": f"t{k}", "name": "db_query", "input": {"sql": f"select {k}"}}]},
                      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{k}", "content": f"rows {k}: " + "x, " * 300}]}]
        h += [{"role": "assistant", "content": text("Done.")}, {"role": "user", "content": text("One more query.")}]
        budget = cf.estimate(h, provider="anthropic") * 3 // 10
        r = cf.Compactor(provider="anthropic", budget=budget, min_tail=SCENARIO_TAIL).compact(h)
        assert r.summary, provider
        assert h[3] in r.messages, provider
        at = r.messages.index(h[3])
        calls = [i for i, m in enumerate(r.messages) if isinstance(m["content"], list)
                 and any("toolUse" in b or b.get("type") == "tool_use" for b in m["content"])]
        assert calls and min(calls) > at, provider
