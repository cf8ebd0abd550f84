"""Image, audio and file inputs, sent as content parts, saved in demos, all offline.

Run: ``python examples/08_media_inputs.py``. Builds a tiny PNG in memory, asks the bundled
stand-in server for a caption, shows the content parts that went over the wire, saves a demo
holding the image as JSON and loads it back, and shows the typed error of a profile that takes
no audio.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import typedspy as ts
from typedspy.testing import StandIn

PNG = b"\x89PNG\r\n\x1a\n" + bytes(24)  # the signature is enough for the MIME check
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(16)


class Caption(ts.Signature):
    """Caption the photo in a few words."""

    photo: ts.Image = ts.InputField()
    caption: str = ts.OutputField()


class Transcribe(ts.Signature):
    """Transcribe the clip."""

    clip: ts.Audio = ts.InputField()
    text: str = ts.OutputField()


def main() -> None:
    with StandIn() as server, tempfile.TemporaryDirectory() as tmp:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="offline")
        caption = ts.Predict(Caption, lm=lm)
        image = ts.Image.from_bytes(PNG, detail="low")
        print("image:", image)
        pred = caption(photo=image)
        print("caption:", pred.caption)
        parts = server.requests[-1]["messages"][-1]["content"]
        print("content parts sent:", [p["type"] for p in parts])

        caption.demos = [{"photo": image, "caption": "a black square"}]
        caption.save(Path(tmp) / "caption.json")
        saved = json.loads((Path(tmp) / "caption.json").read_text())
        photo = saved["predictors"]["self"]["demos"][0]["photo"]
        print("saved demo photo keys:", sorted(k for k, v in photo.items() if v))
        restored = ts.Predict(Caption, lm=lm)
        restored.load(Path(tmp) / "caption.json")
        print("loaded demo equals the original:", restored.demos[0]["photo"] == image)

        local = ts.LM("standin-1", base_url=server.base_url, api_key="offline", profile="ollama")
        try:
            ts.Predict(Transcribe, lm=local)(clip=WAV)
        except ts.errors.MediaNotSupportedError as exc:
            print(f"{type(exc).__name__}: field={exc.field} kind={exc.kind} profile={exc.profile}")


if __name__ == "__main__":
    main()
