"""Python functions as LLM tools: the schema a model is shown comes from the
signature and docstring, unsupported types are refused when the tool is made,
and a call checks the model's arguments before running the function."""

from __future__ import annotations

import asyncio
import enum
import json
from typing import Literal, Optional

import pytest

from a2ad.agents.llm_tools import ToolError, tool


class Unit(enum.Enum):
    CELSIUS = "c"
    FAHRENHEIT = "f"


def forecast(
    city: str,
    days: int,
    unit: Unit,
    detail: Literal["short", "long"] = "short",
    hours: list[int] | None = None,
    rain: bool = False,
    scale: float = 1.0,
    tags: dict[str, str] | None = None,
    note: Optional[str] = None,  # noqa: UP045 - the Optional spelling is what is tested
) -> dict[str, object]:
    """Tells the weather to come.

    More words that the model need not read.

    Args:
        city: where, e.g. Lyon
        days (int): how many days ahead
    """
    return {"city": city, "days": days, "unit": unit, "hours": hours, "scale": scale}


def test_the_schema_comes_from_the_signature_and_docstring() -> None:
    made = tool(forecast)
    assert made.spec() == {
        "type": "function",
        "function": {
            "name": "forecast",
            "description": "Tells the weather to come.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "where, e.g. Lyon"},
                    "days": {"type": "integer", "description": "how many days ahead"},
                    "unit": {"type": "string", "enum": ["c", "f"]},
                    "detail": {"type": "string", "enum": ["short", "long"]},
                    "hours": {
                        "anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}]
                    },
                    "rain": {"type": "boolean"},
                    "scale": {"type": "number"},
                    "tags": {
                        "anyOf": [
                            {"type": "object", "additionalProperties": {"type": "string"}},
                            {"type": "null"},
                        ]
                    },
                    "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                },
                "required": ["city", "days", "unit"],
            },
        },
    }


async def test_a_call_converts_the_models_arguments() -> None:
    result = await tool(forecast).call(
        json.dumps({"city": "Lyon", "days": 2, "unit": "f", "hours": [9, 12], "scale": 2})
    )
    assert result == {"city": "Lyon", "days": 2, "unit": "f", "hours": [9, 12], "scale": 2.0}


async def test_async_functions_are_awaited_and_sync_ones_run_off_the_loop() -> None:
    loop_thread: list[bool] = []

    async def fetch(url: str) -> str:
        await asyncio.sleep(0)
        return url.upper()

    def block(n: int) -> int:
        try:
            asyncio.get_running_loop()
            loop_thread.append(True)
        except RuntimeError:
            loop_thread.append(False)
        return n * 2

    assert await tool(fetch).call('{"url": "a"}') == "A"
    assert await tool(block).call('{"n": 4}') == 8
    assert loop_thread == [False]


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ('{"city": "Lyon", "unit": "c"}', "forecast: the parameter days is required"),
        ('{"city": "Lyon", "days": "2", "unit": "c"}', 'the parameter days can\'t be "2"'),
        ('{"city": "Lyon", "days": true, "unit": "c"}', "the parameter days can't be true"),
        ('{"city": "Lyon", "days": 2, "unit": "k"}', 'the parameter unit can\'t be "k"'),
        ('{"city": "Lyon", "days": 2, "unit": "c", "wind": 1}', "forecast: no parameter wind"),
        ("[1]", "forecast: the arguments must be a JSON object"),
        ("{city", "forecast: the arguments are not JSON"),
    ],
)
async def test_bad_arguments_are_refused_with_a_reason(arguments: str, said: str) -> None:
    with pytest.raises(ToolError) as caught:
        await tool(forecast).call(arguments)
    assert said in str(caught.value)


def test_an_unsupported_type_is_refused_when_the_tool_is_made() -> None:
    def when(at: complex) -> None: ...

    def loose(x) -> None: ...  # type: ignore[no-untyped-def]

    def many(*names: str) -> None: ...

    def keyed(m: dict[int, str]) -> None: ...

    def mixed(v: Literal["a", 1]) -> None: ...

    for fn, said in [
        (when, "tool when, parameter at: <class 'complex'> has no JSON Schema here"),
        (loose, "tool loose, parameter x: give it a type annotation"),
        (many, "tool many, parameter names: *args and **kwargs"),
        (keyed, "tool keyed, parameter m: a dict's keys must be str"),
        (mixed, "tool mixed, parameter v: a Literal or Enum needs values of one type"),
    ]:
        with pytest.raises(TypeError) as caught:
            tool(fn)
        assert said in str(caught.value)


def test_an_agent_refuses_two_tools_of_one_name() -> None:
    from a2ad.agents.llm_agent import LLMAgent

    def f(x: int) -> int:
        return x

    with pytest.raises(TypeError, match="two tools have the same name"):
        LLMAgent(model="m", base_url="http://127.0.0.1:9/v1", tools=[f, f])
