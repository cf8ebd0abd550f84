"""Hostile endpoints end in typed errors: a gzip bomb, a deeply nested body, a huge number, an
endpoint echoing the API key, a stream that is not one. Offline: a tiny local server answers.

Run: python examples/11_limits.py
"""

from __future__ import annotations

import gzip
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import typedspy as ts

KEY = "sk-example-secret-key-123456"

REPLIES: dict[str, tuple[int, dict[str, str], bytes]] = {
    "bomb": (200, {"content-encoding": "gzip"}, gzip.compress(bytes(32 << 20))),  # 32 MiB
    "deep": (200, {}, b'{"choices": ' + b"[" * 5000 + b"]" * 5000 + b"}"),
    "digits": (200, {}, b'{"choices": [], "usage": {"total_tokens": ' + b"9" * 5000 + b"}}"),
    "ignores-stream": (200, {}, json.dumps({"choices": []}).encode()),
}


class Hostile(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        name = self.path.split("/")[1]
        if name == "echo":  # a 401 quoting the key it was sent
            sent = self.headers["authorization"].removeprefix("Bearer ")
            status, headers = 401, {}
            body = json.dumps({"error": {"message": f"Incorrect API key provided: {sent}"}})
            data = body.encode()
        else:
            status, headers, data = REPLIES[name]
        self.send_response(status)
        for key, value in {"content-type": "application/json", **headers}.items():
            self.send_header(key, value)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


class Answer(ts.Signature):
    """Answer the question."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    for name in ("bomb", "deep", "digits", "echo", "ignores-stream"):
        lm = ts.LM(
            "any-model",
            base_url=f"http://127.0.0.1:{port}/{name}/v1",
            api_key=KEY,
            max_retries=0,
            max_response_bytes=8 << 20,  # 8 MiB: the bomb inflates to 32
        )
        try:
            with ts.context(lm=lm):
                if name == "ignores-stream":
                    list(ts.Predict(Answer).stream(question="2 + 2?"))
                else:
                    ts.Predict(Answer)(question="2 + 2?")
        except ts.LMError as exc:
            limit = getattr(exc, "limit", None)
            print(f"{name}: {type(exc).__name__} (limit={limit})")
            print(f"  {str(exc)[:150]}")
            assert KEY not in str(exc) and KEY not in str(exc.__cause__)
        finally:
            lm.close()
    server.shutdown()
    server.server_close()


if __name__ == "__main__":
    main()
