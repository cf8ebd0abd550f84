from __future__ import annotations

import json
from pathlib import Path

import typedspy as ts
from served import served

PNG = b"\x89PNG\r\n\x1a\n" + bytes(24)
GIF = b"GIF89a" + bytes(24)


class Caption(ts.Signature):
    """Caption the picture in a word."""

    photo: ts.Image = ts.InputField()
    caption: str = ts.OutputField()


def test_image_examples_survive_jsonl_and_a_saved_optimized_program(tmp_path: Path) -> None:
    examples = [
        ts.Example(Caption, photo=PNG, caption="png"),
        ts.Example(Caption, photo=GIF, caption="gif"),
    ]
    assert isinstance(examples[0].photo, ts.Image)
    data = tmp_path / "pictures.jsonl"
    data.write_text("\n".join(json.dumps(ex.to_dict()) for ex in examples) + "\n")
    loaded = ts.evaluation.load_dataset(data, Caption)
    assert [ex.photo for ex in loaded] == [ex.photo for ex in examples]

    compiled = ts.optimize.LabeledFewShot(k=2, sample=False, verbose=False).compile(
        ts.Predict(Caption), loaded
    )
    path = tmp_path / "captioner.json"
    compiled.save(path)
    fresh = ts.Predict(Caption)
    fresh.load(path)
    assert fresh.demos == compiled.demos
    with served() as (server, _):
        server.enqueue('{"caption": "a"}', '{"caption": "a"}')
        compiled(photo=PNG)
        fresh(photo=PNG)
    first, second = server.requests
    assert first == second
    parts = [
        p["type"] for m in first["messages"] if isinstance(m["content"], list) for p in m["content"]
    ]
    assert parts.count("image_url") == 3  # two demo pictures and the query
