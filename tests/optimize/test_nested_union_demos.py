"""Issue 20, item 1: a value of a union member that holds a union is a demo, a label, a
bootstrapped trace and saved state, like any other value of its field.

The signature module is written to a file so a fresh process can load the saved program. The
stand-in answers each ticket with its label (tagged JSON), so the teacher's own typed outputs
pass and become demos.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import typedspy as ts
from typedspy.testing import StandIn

SIGNATURE = '''
from pydantic import BaseModel
import typedspy as ts

class Refund(BaseModel):
    amount: float

class InvoiceCopy(BaseModel):
    invoice_id: str

class Billing(BaseModel):
    request: Refund | InvoiceCopy

class Bug(BaseModel):
    component: str

class Triage(ts.Signature):
    """Triage the ticket."""

    ticket: str = ts.InputField()
    triage: Billing | Bug = ts.OutputField()
'''


@pytest.fixture
def sig(tmp_path: Path) -> ModuleType:
    (tmp_path / "nested_sig.py").write_text(SIGNATURE)
    spec = importlib.util.spec_from_file_location("nested_sig", tmp_path / "nested_sig.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["nested_sig"] = module
    spec.loader.exec_module(module)
    yield module
    del sys.modules["nested_sig"]


def labels(sig: ModuleType) -> dict[str, Any]:
    return {
        "refund my order": sig.Billing(request=sig.Refund(amount=12.5)),
        "send the invoice": sig.Billing(request=sig.InvoiceCopy(invoice_id="F-7")),
        "the app crashes": sig.Bug(component="app"),
    }


def answer_by_label(sig: ModuleType) -> Any:
    tagged = {
        ticket: ts.signature.to_jsonable(value, sig.Triage.output_fields["triage"].annotation)
        for ticket, value in labels(sig).items()
    }

    def answer(body: dict[str, Any]) -> str:
        asked = body["messages"][-1]["content"]
        ticket = next(t for t in tagged if t in asked)
        return json.dumps({"triage": tagged[ticket]})

    return answer


def test_an_instance_nested_in_a_union_member_is_a_demo_and_a_label(sig: ModuleType) -> None:
    value = sig.Billing(request=sig.Refund(amount=3))
    predict = ts.Predict(sig.Triage, demos=[{"ticket": "refund me", "triage": value}])
    example = ts.Example(sig.Triage, ticket="refund me", triage=value)

    assert predict.demos[0]["triage"] == value
    assert example.triage == value and type(example.triage.request) is sig.Refund
    with pytest.raises(ts.ConfigurationError, match=r"triage\.request"):  # still checked
        ts.Predict(sig.Triage, demos=[{"ticket": "x", "triage": {"_type": "Billing"}}])


@pytest.mark.parametrize("optimizer", ["labeled", "bootstrap"])
def test_nested_union_demos_compile_save_and_load_in_a_fresh_process(
    sig: ModuleType, optimizer: str, tmp_path: Path
) -> None:
    train = [
        ts.Example(sig.Triage, ticket=t, triage=v).with_inputs("ticket")
        for t, v in labels(sig).items()
    ]
    with StandIn(answer=answer_by_label(sig)) as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-x")
        try:
            with ts.context(lm=lm):
                chosen = (
                    ts.optimize.LabeledFewShot(k=3)
                    if optimizer == "labeled"
                    else ts.optimize.BootstrapFewShot(
                        max_bootstrapped_demos=3, max_labeled_demos=0, verbose=False
                    )
                )
                compiled = chosen.compile(ts.Predict(sig.Triage), train)
                assert len(compiled.demos) == 3
                before = compiled(ticket="send the invoice").triage
        finally:
            lm.close()
        sent = json.dumps(server.requests[-1]["messages"])
        assert '\\"_type\\":\\"Refund\\"' in sent  # the nested member carries its tag
        path = tmp_path / "program.json"
        compiled.save(path)
        script = (
            "import sys, typedspy as ts\n"
            f"sys.path.insert(0, {str(tmp_path)!r})\n"
            "import nested_sig as sig\n"
            f"lm = ts.LM('standin-1', base_url={server.base_url!r}, api_key='sk-x')\n"
            "p = ts.Predict(sig.Triage, lm=lm)\n"
            f"p.load({str(path)!r})\n"
            "print(repr(p(ticket='send the invoice').triage))\n"
            "print(type(p.demos[0]['triage']).__name__)\n"
            "lm.close()\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
        )
    assert done.returncode == 0, done.stderr
    shown, demo_type = done.stdout.strip().splitlines()
    assert shown == repr(before) == "Billing(request=InvoiceCopy(invoice_id='F-7'))"
    assert demo_type in ("Billing", "Bug")
