"""A user's own model instance is an input, also where the signature tags a copy of its class.

A model that holds a union or an open dict is rewritten (tagged) in the signature's models; its
instances were refused as inputs ("Input should be a valid dictionary or instance of Doc").
Inputs now follow the one value rule demos and labels follow (issue 20, `parse.field_value`).
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

import typedspy as ts
from typedspy.testing import StandIn


class Doc(BaseModel):
    title: str
    meta: dict[str, Any]


class Photo(BaseModel):
    url: str


class Note(BaseModel):
    text: str


class Post(BaseModel):
    body: Photo | Note


class Summarise(ts.Signature):
    """Summarise the document."""

    doc: Doc = ts.InputField()
    post: Post = ts.InputField()
    audience: str = ts.InputField(default="engineers")
    summary: str = ts.OutputField()


def test_instances_of_rewritten_models_are_inputs_and_reach_the_model() -> None:
    with StandIn() as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-x")
        try:
            predict = ts.Predict(Summarise, lm=lm)
            predict(doc=Doc(title="Q3", meta={"pages": 3}), post=Post(body=Note(text="hi")))
            as_dicts = {"doc": {"title": "Q3", "meta": {"pages": 3}}}
            predict(**as_dicts, post={"body": {"_type": "Note", "text": "hi"}})
        finally:
            lm.close()
    first, second = (r["messages"][-1]["content"] for r in server.requests)
    assert first == second  # an instance and its tagged JSON send the same prompt
    assert '{"title":"Q3","meta":{"pages":3}}' in first
    assert '"_type":"Note"' in first and "<audience>\nengineers\n</audience>" in first


def test_a_wrong_value_inside_an_instance_input_names_its_path() -> None:
    predict = ts.Predict(Summarise, lm=ts.LM("m", api_key="sk-x"))
    with pytest.raises(ts.InputError, match=r"post\.body"):
        predict(doc=Doc(title="t", meta={}), post={"body": {"_type": "Photo"}})


def _changed(url: object) -> Post:
    photo = Photo(url="x")
    photo.url = url  # type: ignore[assignment]  # no validate_assignment: it takes anything
    return Post(body=photo)


class Show(ts.Signature):
    """Describe the photo."""

    photo: Photo = ts.InputField()
    caption: str = ts.OutputField()


@pytest.mark.parametrize(
    ("signature", "inputs", "message"),
    [
        (Summarise, {"post": _changed(3)}, "post.body.url: Input should be a valid string"),
        (
            Summarise,
            {"post": _changed(object())},
            "post: Unable to serialize unknown type: <class 'object'>",
        ),
        (
            Summarise,
            {"post": Post.model_construct(body=Photo.model_construct())},
            "post: Photo.url is not set",
        ),
        (
            Show,
            {"photo": Photo.model_construct()},
            "input 'photo' cannot be sent: Photo.url is not set",
        ),
    ],
    ids=["wrong-type-set-later", "unwritable", "constructed-unset", "constructed-unset-plain"],
)
def test_an_instance_input_that_cannot_be_read_names_what_is_wrong(
    signature: type[ts.Signature], inputs: dict[str, Any], message: str
) -> None:
    """Instances bypass validation (set later, or `model_construct`): still an InputError."""
    predict = ts.Predict(signature, lm=ts.LM("m", api_key="sk-x"))
    doc = {"doc": Doc(title="t", meta={})} if signature is Summarise else {}
    with pytest.raises(ts.InputError) as caught:
        predict(**doc, **inputs)
    assert str(caught.value).endswith(message)


def test_an_instance_deep_in_a_wrong_input_is_reported_without_reading_it_tagged() -> None:
    """Models nested past 8 levels are not looked for (bounded): Pydantic's error stands."""
    nested: Any = int
    value: Any = Note(text="a")
    for _ in range(10):
        nested, value = list[nested], [value]
    sig = ts.make_signature("x: X -> y", types={"X": nested})
    with pytest.raises(ts.InputError) as caught:
        ts.Predict(sig, lm=ts.LM("m", api_key="sk-x"))(x=value)
    assert str(caught.value).endswith(f"x{'[0]' * 10}: Input should be a valid integer")
