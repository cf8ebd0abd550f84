"""`import typedspy` leaves the openai SDK (and jsonschema) unimported until they are needed."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from typedspy.testing import StandIn

# Run in a fresh interpreter: this test process has imported everything already.
CHILD = textwrap.dedent(
    """
    import sys

    import typedspy as ts
    from typedspy import adapter, lm, modules, parse, schema, signature, tools

    print("after import", "openai" in sys.modules, "jsonschema" in sys.modules)
    model = ts.LM("standin-1", base_url=sys.argv[1], api_key="unused")
    print("after LM()", "openai" in sys.modules)
    pred = ts.Predict("question -> answer: int", lm=model)(question="2 + 2?")
    print("after a call", "openai" in sys.modules, type(pred.answer).__name__)
    print("jsonschema after a valid reply", "jsonschema" in sys.modules)
    model.close()
    """
)


def test_import_typedspy_loads_openai_only_when_an_lm_sends() -> None:
    with StandIn() as server:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, server.base_url],
            capture_output=True,
            text=True,
            timeout=600,  # bounds a hang only
        )

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "after import False False",
        "after LM() False",
        "after a call True int",
        "jsonschema after a valid reply False",  # imported only to classify a failed reply
    ]
    assert len(server.requests) == 1
