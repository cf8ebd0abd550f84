from __future__ import annotations

import pickle

import typedspy as ts


@ts.tool
def lookup_city(city: str) -> str:
    """Find the country a city is in.

    Args:
        city: The city's name.
    """
    return {"Paris": "France"}.get(city, "unknown")


class Answer(ts.Signature):
    """Answer with the tools."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


def test_a_decorated_module_level_tool_pickles_by_reference() -> None:
    # @ts.tool rebinds `lookup_city` to the Tool, so its function cannot pickle by name.
    restored = pickle.loads(pickle.dumps(lookup_city))
    assert restored is lookup_city
    assert restored(city="Paris") == {"result": "France"}


def test_a_react_agent_holding_a_decorated_tool_pickles() -> None:
    agent = ts.ReAct(Answer, tools=[lookup_city])
    restored = pickle.loads(pickle.dumps(agent))
    assert restored.tools.get("lookup_city") is lookup_city


def test_a_tool_of_a_local_function_refuses_to_pickle_naming_it() -> None:
    def local(x: int) -> int:
        return x

    made = ts.Tool.from_function(local)
    try:
        pickle.dumps(made)
    except (pickle.PicklingError, AttributeError) as exc:
        assert "local" in str(exc)  # a local function has no importable name: pickle says so
    else:  # pragma: no cover - would mean local functions became picklable
        raise AssertionError("a local function pickled")
