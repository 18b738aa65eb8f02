"""The hostile-input table of issue #14: one test per input, each over every public call.

Every call either returns or raises an ``Exception`` subclass of a documented type (never a
PanicException, never a crash or hang), and the caller's data deep-compares equal afterwards
(``reliability_support.call_all`` checks both). The README's "Reliability" table is this file.
"""

from __future__ import annotations

import base64
import json
import gc
import struct
import sys
import time
import zlib

import contextfold as cf
import pytest

from reliability_support import CALLS, ESTIMATE_CALLS, call_all



def user(text: str = "hi") -> dict:
    return {"role": "user", "content": text}


def with_message(m: object) -> list:
    return [{"role": "system", "content": "be brief"}, m]


def assistant_call(arguments: object, *, name: str = "f") -> dict:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": name, "arguments": arguments}}]}


def png(width: int, height: int) -> bytes:
    ihdr = struct.pack(">II", width, height) + bytes([8, 6, 0, 0, 0])
    chunk = b"IHDR" + ihdr
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + chunk + struct.pack(">I", zlib.crc32(chunk))


def image_message(url: str) -> dict:
    return {"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}


def returned(results: dict) -> None:
    failed = {k: v for k, v in results.items() if isinstance(v, BaseException)}
    assert not failed, failed


def all_invalid(results: dict, index: int, field: str) -> None:
    for name, r in results.items():
        assert isinstance(r, cf.InvalidMessageError), (name, r)
        assert (r.index, r.field) == (index, field), (name, r.index, r.field)


# -- the shape of the history ---------------------------------------------------------------------


@pytest.mark.parametrize("history", ["hello", {"role": "user", "content": "x"}, None, 42])
def test_a_history_that_is_not_a_list_is_a_type_error(history):
    for name, r in call_all(history).items():
        assert isinstance(r, TypeError), (name, r)


def test_bytes_as_a_history_is_a_sequence_of_non_messages():
    for name, r in call_all(b"ab").items():
        assert isinstance(r, (TypeError, cf.InvalidMessageError)), (name, r)


@pytest.mark.parametrize("message", [1, "just text", None, 3.5, ["role", "user"]])
def test_a_message_that_is_not_a_mapping_names_its_index(message):
    all_invalid(call_all([user(), message]), 1, "")


def test_none_content_is_an_empty_message():
    returned(call_all(with_message({"role": "assistant", "content": None})))


@pytest.mark.parametrize("content, field", [(5, "content"), (3.5, "content"), ([[{"type": "text", "text": "x"}]], "content[0]")])
def test_int_and_nested_list_content_name_the_field(content, field):
    all_invalid(call_all(with_message({"role": "user", "content": content})), 1, field)


def test_unknown_part_types_and_roles_are_priced_not_refused():
    ms = [
        {"role": "alien", "content": "x"},
        {"role": "user", "content": [{"type": "hologram", "data": "x" * 100}, {"type": "text", "text": "y"}]},
    ]
    results = call_all(ms)
    returned(results)
    assert results["estimate"] > 0


def test_tool_calls_that_are_not_a_list_name_the_field():
    all_invalid(call_all(with_message({"role": "assistant", "tool_calls": "f()"})), 1, "tool_calls")


def test_arguments_that_are_not_strings_are_priced_as_their_json():
    returned(call_all(with_message(assistant_call({"path": "a.py", "n": [1, 2]}))))


# -- text ------------------------------------------------------------------------------------------


def test_lone_surrogates_in_values_and_keys():
    ms = with_message({"role": "user", "content": "a\ud800b\udfff", "\ud800key": "v\udc00"})
    ms.append(assistant_call('{"p": "\\ud800"}'))
    results = call_all(ms)
    returned(results)
    # The shrunk arguments of a lone-surrogate escape parse with a strict parser too.
    assert cf.shrink_json('{"p":"\\ud800' + "x" * 200 + '"}', max_chars=64).count("\\ud800") == 0


def test_nul_bytes():
    returned(call_all(with_message({"role": "user", "content": "a\0b" * 100, "name": "n\0"})))


def test_a_100_megabyte_string_is_estimated_in_bounded_time():
    big = "x" * (100 << 20)
    ms = with_message({"role": "tool", "tool_call_id": "c1", "content": big})
    start = time.perf_counter()
    results = call_all(ms, ("estimate", "estimate_each", "find_tail_start", "prune"))
    returned(results)
    assert results["estimate"] > 1_000_000
    assert time.perf_counter() - start < 30
    # The pruned copy shares nothing it changed with the caller: the 100 MB string is intact.
    assert ms[1]["content"] is big


def test_a_million_messages():  # the slowest test here: ~1-3 s in a release build
    # Two distinct message objects repeated: the walk still reads 10^6 list items; a deep
    # snapshot of 10^6 dicts would cost more than the calls, so the check here is by value.
    a, b = {"role": "assistant", "content": "ok"}, {"role": "user", "content": "go on"}
    ms = [a, b] * 500_000
    start = time.perf_counter()
    total = cf.estimate(ms)
    assert total > 1_000_000
    assert 0 < cf.find_tail_start(ms, budget_tokens=1000) < len(ms)
    s = cf.Session()
    assert s.estimate(ms) == total
    ms.append(user("one more"))
    assert s.estimate(ms) > total
    assert time.perf_counter() - start < 60
    assert a == {"role": "assistant", "content": "ok"} and b == {"role": "user", "content": "go on"}
    assert len(ms) == 1_000_001


def test_json_nested_100_000_deep_in_arguments():
    deep = "[" * 100_000 + "]" * 100_000
    ms = with_message(assistant_call(deep))
    returned(call_all(ms, ESTIMATE_CALLS))
    out = cf.shrink_json(deep, max_chars=100)
    assert len(out) <= 100
    ms = ms + [{"role": "tool", "tool_call_id": "c1", "content": "done"}, user("next")]
    pruned = cf.prune(ms, protect_tail_tokens=0, protect_first_n=0, min_tail=1, arguments_max_chars=100)
    shrunk = pruned[1]["tool_calls"][0]["function"]["arguments"]
    assert len(shrunk) <= 100
    json.loads(shrunk)
    assert ms[1]["tool_calls"][0]["function"]["arguments"] is deep


def test_a_python_value_nested_100_000_deep_is_refused_with_its_path():
    v: list = []
    for _ in range(100_000):
        v = [v]
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "default": v}}}
    with pytest.raises(ValueError, match="deeper than"):
        cf.count([user()], model="gpt-4o", tools=[tool])
    with pytest.raises(ValueError, match="deeper than"):
        cf.estimate([user()], tools=[tool])


@pytest.mark.parametrize("arguments", ['{"x": NaN, "y": Infinity, "z": -Infinity}', '{"big": 1e400, "small": -1e400}', '{"x": 1, "x": 2}'])
def test_nan_infinity_huge_numbers_and_duplicate_keys_in_arguments(arguments):
    results = call_all(with_message(assistant_call(arguments * 50)))
    returned(results)


def test_nan_and_infinity_as_python_floats_in_a_tool_use_input():
    ms = with_message({"role": "assistant", "content": [
        {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": float("nan"), "b": float("inf"), "c": 1e308 * 10}}]})
    returned(call_all(ms, ESTIMATE_CALLS))


# -- images ----------------------------------------------------------------------------------------


HUGE_PNG = base64.b64encode(png(10**9, 10**9)).decode()


@pytest.mark.parametrize("url", [
    "data:image/png;base64," + HUGE_PNG[:10],  # truncated
    "data:image/png;base64,!!!not base64@@@",  # not base64
    "data:image/png;base64," + HUGE_PNG,  # claims 10^9 x 10^9 pixels
    "data:image/gif;base64," + HUGE_PNG,  # wrong MIME type
    "data:;base64,",  # nothing
    "data:image/png;base64," + "A" * (8 << 20),  # 8 MB of zeros
], ids=["truncated", "not-base64", "1e9x1e9", "wrong-mime", "empty", "8MB-zeros"])
def test_hostile_images_cost_a_bounded_token_count(url):
    results = call_all(with_message(image_message(url)))
    returned(results)
    for name in ("estimate", "count"):
        # One image never costs more than the largest tiling any provider bills (~6k tokens
        # for OpenAI's high detail at its size cap) plus the message around it.
        assert results[name] < 20_000, (name, results[name])


# -- objects ---------------------------------------------------------------------------------------


class RaisingContent:
    role = "user"

    @property
    def content(self):
        raise RuntimeError("SDK property failed")


def test_an_sdk_object_whose_attribute_raises_names_the_field_and_chains_the_cause():
    for name, r in call_all([user(), RaisingContent()]).items():
        assert isinstance(r, cf.InvalidMessageError), (name, r)
        assert (r.index, r.field) == (1, "content")
        assert isinstance(r.__cause__, RuntimeError)


def test_an_sdk_object_whose_attribute_raises_never_panics_nor_mutates():
    first, raising = user(), RaisingContent()
    history = [first, raising]
    kept = dict(first)
    for name, r in call_all(history).items():
        assert isinstance(r, Exception), name
        assert history == [kept, raising] and history[1] is raising, name


class Recorder(dict):
    """A dict subclass, as some frameworks pass."""


def test_dict_subclasses_are_read_as_dicts():
    plain = [user("hello"), assistant_call('{"a": 1}')]
    sub = [Recorder(m) for m in plain]
    a, b = call_all(plain), call_all(sub)
    for name in ("estimate", "estimate_each", "count", "count_each", "wire_bytes", "find_tail_start"):
        assert a[name] == b[name], name


class Everything:
    """An object whose every attribute is itself."""

    def __getattr__(self, name):
        return self


def test_an_object_whose_getattr_returns_itself_names_its_index():
    results = call_all([user(), Everything()])
    for name, r in results.items():
        assert isinstance(r, cf.InvalidMessageError) and r.index == 1, (name, r)


# -- cycles ----------------------------------------------------------------------------------------


def test_a_message_that_contains_itself_is_an_invalid_message_error():
    m: dict = {"role": "user"}
    m["content"] = [m]
    for name, r in call_all([user(), m]).items():
        assert isinstance(r, cf.InvalidMessageError) and r.index == 1, (name, r)


def test_a_message_that_contains_itself_never_hangs_nor_panics():
    m: dict = {"role": "user"}
    m["content"] = [m]
    for name, r in call_all([user(), m]).items():
        assert isinstance(r, ValueError) and "cycle" in str(r), (name, r)


def test_a_cycle_inside_a_part_names_message_and_path_in_wire_bytes():
    part: dict = {"type": "text", "text": "x"}
    part["self"] = part
    ms = with_message({"role": "user", "content": [part]})
    with pytest.raises(cf.InvalidMessageError) as e:
        cf.wire_bytes(ms)
    assert (e.value.index, e.value.field) == (1, "content[0].self")
    returned(call_all(ms, ("estimate", "count", "find_tail_start")))


def cyclic_tool() -> dict:
    params: dict = {"type": "object", "properties": {}}
    params["properties"]["again"] = params
    return {"type": "function", "function": {"name": "f", "parameters": params}}


def test_a_cyclic_tool_schema_names_the_path_in_count():
    with pytest.raises(ValueError, match=r"tools\[0\]\.function\.parameters\.properties\.again: .*cycle"):
        cf.count([user()], model="gpt-4o", tools=[cyclic_tool()])


def test_a_cyclic_tool_schema_names_tools_j_in_estimate():
    with pytest.raises(ValueError, match=r"tools\[0\]"):
        cf.estimate([user()], tools=[cyclic_tool()])


def test_a_cyclic_tool_schema_is_a_value_error_in_estimate_and_session():
    with pytest.raises(ValueError, match="cycle"):
        cf.estimate([user()], tools=[cyclic_tool()])
    with pytest.raises(ValueError, match="cycle"):
        cf.Session(tools=[cyclic_tool()])


def test_a_usage_that_contains_itself_is_an_invalid_usage_error_naming_the_path():
    s = cf.Session()
    s.estimate([user()])
    usage: dict = {}
    usage["usage"] = usage
    with pytest.raises(cf.InvalidUsageError, match="cycle") as e:
        s.record_usage(usage)
    assert e.value.path == "usage.usage"
    response: dict = {"model": "m", "usageMetadata": {}}
    response["usageMetadata"]["promptTokenCount"] = response
    with pytest.raises(cf.InvalidUsageError):
        s.record_usage(response)
    assert s.usages == 0


def test_a_usage_whose_attribute_raises_is_an_invalid_usage_error_with_the_cause():
    class Usage:
        @property
        def prompt_tokens(self):
            raise RuntimeError("lazy field failed")

    s = cf.Session()
    with pytest.raises(cf.InvalidUsageError) as e:
        s.record_usage(Usage())
    assert e.value.path == "usage.prompt_tokens" and isinstance(e.value.__cause__, RuntimeError)
    with pytest.raises(cf.InvalidUsageError):
        s.record_usage(Everything())


# -- callbacks that change what is being read -------------------------------------------------------


class Mutator:
    """Clears and refills the dict it sits in when converted to text or dumped."""

    def __init__(self, target: dict) -> None:
        self.target = target

    def _mutate(self) -> None:
        self.target.clear()
        self.target.update({f"k{i}": i for i in range(50)})

    def __str__(self) -> str:
        self._mutate()
        return "mutator"

    def model_dump(self, **kw):
        self._mutate()
        return {"dumped": True}


def mutating_tool() -> dict:
    params: dict = {"type": "object", "properties": {"a": {"type": "string"}}}
    params["x-extra"] = Mutator(params)
    params["zzz"] = 1
    return {"type": "function", "function": {"name": "f", "parameters": params}}


def test_a_tool_schema_whose_model_dump_changes_the_dict_being_read_never_panics():
    priced = errors = 0
    for call in (lambda t: cf.estimate([user()], tools=t), lambda t: cf.count([user()], model="gpt-4o", tools=t),
                 lambda t: cf.request_overhead(tools=t), lambda t: cf.Session(tools=t).estimate([user()]),
                 lambda t: cf.count_many([[user()]], model="gpt-4o", tools=t)[0]):
        # A typed error is a defined outcome; a PanicException (a BaseException) propagates and fails.
        try:
            value = call([mutating_tool()])
        except (ValueError, TypeError, RuntimeError):
            errors += 1
            continue
        assert value > 0
        priced += 1
    # Every entry point must either price the request or say why: at least one prices it, so a
    # loop where every call raised (and so checked nothing) fails.
    assert priced >= 1, (priced, errors)


def test_a_dict_key_whose_str_changes_the_dict_never_panics():
    params: dict = {"type": "object"}
    params[Mutator(params)] = "v"
    params["after"] = 1
    tool = {"type": "function", "function": {"name": "f", "parameters": params}}
    assert cf.estimate([user()], tools=[tool]) > 0
    assert cf.count([user()], model="gpt-4o", tools=[tool]) > 0


def test_a_tool_use_input_that_changes_itself_while_read_never_panics():
    # The caller's own object changes its dict (that is its code, not ours): only the absence
    # of a PanicException is checked.
    for name in ("estimate", "wire_bytes", "session", "count"):
        inp: dict = {"a": 1}
        inp["m"] = Mutator(inp)
        inp["z"] = 2
        ms = with_message({"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": inp}]})
        try:
            CALLS[name](ms)
        except BaseException as e:  # noqa: BLE001
            assert isinstance(e, Exception), f"{name}: {type(e).__name__}: {e}"


# -- recursive tool schemas (exponential $ref expansion) ---------------------------------------------


def recursive_tool(fanout: int) -> dict:
    node = {"type": "object", "properties": {f"c{i}": {"$ref": "#/$defs/Node"} for i in range(fanout)}}
    return {"type": "function", "function": {"name": "tree", "parameters": {
        "type": "object", "properties": {"root": {"$ref": "#/$defs/Node"}}, "$defs": {"Node": node}}}}


@pytest.mark.parametrize("fanout", [2, 50])
def test_a_definition_that_refers_to_itself_renders_within_a_bound(fanout):
    # Node{a: Node, b: Node} expanded 2^32 copies (a 6 GB allocation killed the process).
    start = time.perf_counter()
    n = cf.count([user()], model="gpt-4o", tools=[recursive_tool(fanout)])
    assert time.perf_counter() - start < 20
    # The render budget is 1 MiB of text: at most ~1 MiB / 2 bytes per token.
    assert 100 < n < 600_000
    assert cf.estimate([user()], tools=[recursive_tool(fanout)]) > 0


# -- options ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("budget", [0, 1, 10**30])
def test_zero_and_huge_budgets_are_defined(budget):
    ms = [user(f"m{i}") for i in range(10)]
    assert 0 <= cf.find_tail_start(ms, budget_tokens=budget) <= 10
    assert len(cf.prune(ms, protect_tail_tokens=budget)) == 10


@pytest.mark.parametrize("call", [
    lambda v: cf.find_tail_start([user()], budget_tokens=v),
    lambda v: cf.find_tail_start([user()], budget_tokens=5, min_tail=v),
    lambda v: cf.prune([user()], protect_tail_tokens=v),
    lambda v: cf.shrink_json("{}", max_chars=v),
    lambda v: cf.estimate_many([[user()]], threads=v),
    lambda v: cf.Session(context_window=v),
    lambda v: cf.Session().invalidate(v),
], ids=["tail-budget", "min_tail", "prune-budget", "max_chars", "threads", "context_window", "invalidate"])
def test_bools_and_negative_counts_are_refused_with_typed_errors(call):
    with pytest.raises(TypeError):
        call(True)
    with pytest.raises(ValueError):
        call(-1)


def test_a_huge_min_tail_means_nothing_to_summarize():
    ms = [user(f"m{i}") for i in range(10)]
    assert cf.find_tail_start(ms, budget_tokens=5, min_tail=2**64 - 1) == 1
    assert cf.find_tail_start(ms, budget_tokens=5, min_tail=10**40) == 1


@pytest.mark.parametrize("usage", [True, -1, {"prompt_tokens": True}, {"prompt_tokens": -3}, {"prompt_tokens": float("inf")},
                                   {"prompt_tokens": "12"}, 10**30])
def test_bad_usage_counts_are_refused_and_record_nothing(usage):
    s = cf.Session()
    s.estimate([user()])
    with pytest.raises((TypeError, ValueError)):
        s.record_usage(usage)
    assert s.usages == 0 and s.last_usage is None


def test_estimate_many_names_the_history_of_a_bad_message():
    with pytest.raises(cf.InvalidMessageError) as e:
        cf.estimate_many([[user()], [user()], [user(), {"role": "user", "content": 5}]])
    assert (e.value.history, e.value.index, e.value.field) == (2, 1, "content")
    assert "history 2" in str(e.value)


def test_every_call_is_in_the_table():
    # A public call added to the package must be added to CALLS (one line) to be covered here.
    assert {"estimate", "estimate_each", "estimate_many", "count", "count_each", "count_many", "wire_bytes",
            "find_tail_start", "prune", "session"} <= set(CALLS)
    assert gc.isenabled() and sys.getrecursionlimit() >= 1000
