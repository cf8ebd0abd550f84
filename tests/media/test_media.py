"""Media inputs: values, checks, content parts on the wire, saved demos and the profile gate."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import respx
from pydantic import ValidationError

import typedspy as ts
from typedspy.testing import chat_completion
from wire import BASE_URL, make_lm, sent

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + b"\x00" * 16
PDF = b"%PDF-1.4\n%fake\n"


class Describe(ts.Signature):
    """Caption the photo."""

    photo: ts.Image = ts.InputField()
    note: str = ts.InputField()
    caption: str = ts.OutputField()


class Transcribe(ts.Signature):
    """Transcribe the clip and summarise the document."""

    clip: ts.Audio = ts.InputField()
    doc: ts.File = ts.InputField()
    text: str = ts.OutputField()


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE_URL, assert_all_called=True) as mock:
        yield mock


def ok(data: object) -> httpx.Response:
    return httpx.Response(200, json=chat_completion(json.dumps(data)))


def test_bytes_give_base64_a_sniffed_type_and_the_content_hash() -> None:
    image = ts.Image.from_bytes(PNG)
    assert image.mime_type == "image/png"
    assert image.data == base64.b64encode(PNG).decode()
    assert image.sha256 == hashlib.sha256(PNG).hexdigest()
    assert image.url is None
    assert "<32 bytes>" in repr(image)  # no base64 in reprs and logs


@pytest.mark.parametrize(
    ("kind", "data", "mime_type"),
    [
        (ts.Image, b"\xff\xd8\xff\xe0" + bytes(8), "image/jpeg"),
        (ts.Image, b"RIFF\x00\x00\x00\x00WEBPVP8 ", "image/webp"),
        (ts.Audio, b"ID3\x04\x00" + bytes(8), "audio/mpeg"),
    ],
)
def test_the_leading_bytes_name_the_type(kind: type[ts.Image], data: bytes, mime_type: str) -> None:
    assert kind.from_bytes(data).mime_type == mime_type


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"url": "data:image/png;base64,QQ==", "data": "QQ=="}, "needs exactly one source"),
        (
            {"url": "https://img.test/cat.png", "data": "QQ==", "mime_type": "image/png"},
            "needs exactly one source",
        ),
        ({"mime_type": "image/png"}, "needs exactly one source"),
        (5, "Input should be a valid dictionary or instance of Image"),
    ],
)
def test_a_mapping_with_two_sources_or_none_is_refused(value: object, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ts.Image.model_validate(value)


def test_path_and_url_sources(tmp_path: Path) -> None:
    path = tmp_path / "doc.pdf"
    path.write_bytes(PDF)
    doc = ts.File.from_path(path)
    assert (doc.mime_type, doc.filename) == ("application/pdf", "doc.pdf")
    remote = ts.Image.from_url("https://img.test/cat.jpg", detail="low")
    assert (remote.url, remote.mime_type, remote.data) == (
        "https://img.test/cat.jpg",
        "image/jpeg",
        None,
    )
    assert remote.content_part() == {
        "type": "image_url",
        "image_url": {"url": "https://img.test/cat.jpg", "detail": "low"},
    }


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: ts.Image.from_bytes(b"plain text"), "unknown content type"),
        (lambda: ts.Image.from_bytes(PDF), "does not take 'application/pdf'"),
        (lambda: ts.Audio.from_url("https://a.test/x.wav"), "cannot be sent by URL"),
        (lambda: ts.Image.from_url("ftp://x/y.png"), r"not an http\(s\) or data: URL"),
        (lambda: ts.File.from_path("/nonexistent/x.pdf"), "cannot read media file"),
        (lambda: ts.Image.from_url("data:image/png;base64,!!"), "not valid base64"),
        (lambda: ts.Image.from_url("data:image/png,cat"), "a data: URL must be base64"),
        (lambda: ts.Image.from_url("http://[::1/cat.png"), r"not an http\(s\) or data: URL"),
    ],
)
def test_bad_media_is_a_typed_error(build: object, message: str) -> None:
    with pytest.raises(ts.errors.MediaError, match=message):
        build()  # type: ignore[operator]


def test_too_big_is_refused_before_sending() -> None:
    class Tiny(ts.Image):
        max_bytes = 16

    with pytest.raises(ts.errors.MediaError, match="more than the 16 bytes accepted"):
        Tiny.from_bytes(PNG)


def test_base64_whose_padding_hides_a_byte_is_refused_and_max_bytes_still_holds() -> None:
    class Tiny(ts.Image):
        max_bytes = 2

    # Five characters, one of them padding after a full group: Python's strict decoder reads
    # three bytes from it, where the count of characters suggests two; it is no base64.
    with pytest.raises(ValidationError, match=r"'J1Y/=' is not valid base64: 1 '=' of padding"):
        Tiny.model_validate({"data": "J1Y/=", "mime_type": "image/png"})
    with pytest.raises(ValidationError, match="4 characters of base64 is more than the 2 bytes"):
        Tiny.model_validate({"data": "J1Y/", "mime_type": "image/png"})


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ("aGk===", r"3 '=' of padding where 1 belong"),
        ("aGk", r"0 '=' of padding where 1 belong"),
        ("YWJj=", r"1 '=' of padding where 0 belong"),
        ("aGk=aGk=", r"'=' at character 3 is padding inside the data"),
        ("aGk=\n", r"whitespace at character 4"),
        ("iVBO\nRw0K", r"whitespace at character 4"),
        ("a-_=", r"'-' at character 1 is the URL-safe alphabet"),
        ("aGk%3D", r"character 3 \('%'\) is not in the base64 alphabet"),
        ("Y", r"1 characters of data cannot be base64"),
    ],
)
def test_malformed_base64_is_a_media_error_naming_the_data_and_why(data: str, reason: str) -> None:
    with pytest.raises(
        ts.errors.MediaError,
        match=rf"^Image: data {re.escape(repr(data))} is not valid base64: {reason}",
    ):
        ts.Image.from_url(f"data:image/png;base64,{data}")


def test_long_malformed_base64_is_named_by_its_start_and_length() -> None:
    data = base64.b64encode(PNG).decode() + "="
    with pytest.raises(
        ts.errors.MediaError, match=rf"data '{data[:16]}'\.\.\. \({len(data)} characters\)"
    ):
        ts.Image.from_url(f"data:image/png;base64,{data}")


def test_empty_content_is_refused() -> None:
    with pytest.raises(ts.errors.MediaError, match=r"^Image: the content is empty \(0 bytes\)$"):
        ts.Image.from_url("data:image/png;base64,")
    with pytest.raises(ts.errors.MediaError, match=r"^File: the content is empty"):
        ts.File.from_bytes(b"", mime_type="text/plain")


def test_a_tampered_saved_image_fails_its_hash_naming_the_field() -> None:
    demo = {"photo": ts.Image.from_bytes(PNG), "note": "n", "caption": "c"}
    state = ts.Predict(Describe, demos=[demo]).dump_state()
    state["predictors"]["self"]["demos"][0]["photo"]["data"] = base64.b64encode(PNG + b"x").decode()
    with pytest.raises(ts.ConfigurationError, match=r"photo[\s\S]*does not match its sha256"):
        ts.Predict(Describe).load_state(state)


def test_an_image_input_reaches_the_wire_as_an_image_url_part(router: respx.MockRouter) -> None:
    route = router.post("/chat/completions").mock(return_value=ok({"caption": "a cat"}))
    pred = ts.Predict(Describe, lm=make_lm())(photo=PNG, note="be brief")
    assert pred.caption == "a cat"
    user = sent(route)[0]["messages"][-1]
    data_url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert user["content"] == [
        {"type": "text", "text": "<photo>"},
        {"type": "image_url", "image_url": {"url": data_url}},
        {"type": "text", "text": "</photo>\n<note>\nbe brief\n</note>"},
    ]


class Compare(ts.Signature):
    """Compare the photos."""

    photos: list[ts.Image] = ts.InputField()
    note: str | None = ts.InputField(default=None)
    verdict: str = ts.OutputField()


def test_a_list_of_images_is_one_part_each_and_an_input_not_given_is_left_out(
    router: respx.MockRouter,
) -> None:
    route = router.post("/chat/completions").mock(return_value=ok({"verdict": "same"}))
    ts.Predict(Compare, lm=make_lm())(photos=[PNG, PNG])
    data_url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    image = {"type": "image_url", "image_url": {"url": data_url}}
    assert sent(route)[0]["messages"][-1]["content"] == [
        {"type": "text", "text": "<photos>"},
        image,
        image,
        {"type": "text", "text": "</photos>"},
    ]


def test_audio_and_file_parts(router: respx.MockRouter, tmp_path: Path) -> None:
    (tmp_path / "r.pdf").write_bytes(PDF)
    route = router.post("/chat/completions").mock(return_value=ok({"text": "hi"}))
    ts.Predict(Transcribe, lm=make_lm())(clip=WAV, doc=tmp_path / "r.pdf")
    parts = sent(route)[0]["messages"][-1]["content"]
    assert parts[1] == {
        "type": "input_audio",
        "input_audio": {"data": base64.b64encode(WAV).decode(), "format": "wav"},
    }
    assert parts[3] == {
        "type": "file",
        "file": {
            "file_data": "data:application/pdf;base64," + base64.b64encode(PDF).decode(),
            "filename": "r.pdf",
        },
    }


def test_a_profile_without_the_kind_raises_before_sending(router: respx.MockRouter) -> None:
    route = router.post("/chat/completions").mock(return_value=ok({"text": "hi"}))
    predict = ts.Predict(Transcribe, lm=make_lm(profile="ollama"))
    with pytest.raises(ts.errors.MediaNotSupportedError) as info:
        predict(clip=WAV, doc=ts.File(file_id="file-1"))
    assert (info.value.kind, info.value.field, info.value.profile) == ("audio", "clip", "ollama")
    assert route.call_count == 0
    router.reset()
    # Allowed once the profile says so (assert_all_called needs the route used).
    lm = make_lm(profile=ts.Profile.named("ollama").derive(media=frozenset({"audio", "file"})))
    ts.Predict(Transcribe, lm=lm)(clip=WAV, doc=ts.File(file_id="file-1"))
    assert sent(route)[0]["messages"][-1]["content"][3] == {
        "type": "file",
        "file": {"file_id": "file-1"},
    }


def test_a_demo_with_an_image_saves_and_loads(router: respx.MockRouter, tmp_path: Path) -> None:
    demo = {"photo": ts.Image.from_bytes(PNG), "note": "n", "caption": "a square"}
    predict = ts.Predict(Describe, lm=make_lm(), demos=[demo])
    predict.save(tmp_path / "state.json")
    saved = json.loads((tmp_path / "state.json").read_text())
    photo = saved["predictors"]["self"]["demos"][0]["photo"]
    assert photo["sha256"] == hashlib.sha256(PNG).hexdigest()
    assert photo["data"] == base64.b64encode(PNG).decode()

    fresh = ts.Predict(Describe, lm=make_lm())
    fresh.load(tmp_path / "state.json")
    assert fresh.demos[0]["photo"] == demo["photo"]
    route = router.post("/chat/completions").mock(return_value=ok({"caption": "c"}))
    fresh(photo=ts.Image.from_url("https://img.test/b.png"), note="m")
    messages = sent(route)[0]["messages"]
    assert messages[1]["content"][1]["type"] == "image_url"  # the demo's user turn
    assert messages[-1]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "https://img.test/b.png"},
    }


def test_the_response_cache_keys_on_the_image_content(router: respx.MockRouter) -> None:
    route = router.post("/chat/completions").mock(return_value=ok({"caption": "x"}))
    predict = ts.Predict(Describe, lm=make_lm())
    with ts.context(cache=ts.cache.MemoryCache()):
        predict(photo=PNG, note="n")
        predict(photo=ts.Image.from_bytes(PNG), note="n")  # same content: a hit
        predict(photo=PNG + b"\x00", note="n")  # other content: sent
    assert route.call_count == 2


def test_a_react_agent_sends_an_image_input_as_a_content_part(router: respx.MockRouter) -> None:
    class Look(ts.Signature):
        """Describe the photo."""

        photo: ts.Image = ts.InputField()
        answer: str = ts.OutputField()

    finish = {"id": "c1", "name": "finish", "arguments": json.dumps({"answer": "a cat"})}
    route = router.post("/chat/completions").mock(
        return_value=httpx.Response(
            200, json=chat_completion(None, tool_calls=[finish], finish_reason="tool_calls")
        )
    )
    pred = ts.ReAct(Look, tools=[], lm=make_lm())(photo=PNG)
    assert pred.answer == "a cat"
    user = sent(route)[0]["messages"][1]
    assert user["content"][1]["type"] == "image_url"
    assert user["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")


@pytest.mark.parametrize(
    "head",
    [
        "data:image/png;name=a.png;base64",  # RFC 2397 parameters before ';base64'
        "data:image/png;BASE64",  # the token is case-insensitive
        "DATA:Image/PNG;charset=binary;Base64",
    ],
)
def test_a_data_url_with_parameters_or_upper_case_is_read(
    router: respx.MockRouter, head: str
) -> None:
    route = router.post("/chat/completions").mock(return_value=ok({"caption": "a cat"}))
    encoded = base64.b64encode(PNG).decode()
    image = ts.Image.from_url(f"{head},{encoded}")
    assert (image.mime_type, image.data) == ("image/png", encoded)
    assert ts.Predict(Describe, lm=make_lm())(photo=image, note="x").caption == "a cat"
    part = sent(route)[0]["messages"][-1]["content"][1]
    # Sent as OpenAI documents it: the type and base64, the parameters left out.
    assert part == {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{encoded}"}}
