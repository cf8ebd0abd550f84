"""Issue 23: a `ts.Module` subclass with a DSPy-style sync ``forward`` works through every
entry point (it failed every batch item, evaluation and optimizer with NotImplementedError)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import typedspy as ts
from typedspy.testing import StandIn


class QA(ts.Module):
    def __init__(self) -> None:
        self.answer = ts.Predict("question -> answer")
        self.threads: set[int] = set()

    def forward(self, question: str) -> Any:
        self.threads.add(threading.get_ident())
        return self.answer(question=question)


def test_every_entry_point_runs_a_sync_forward_off_the_loop() -> None:
    with StandIn() as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-x")
        try:
            with ts.context(lm=lm):
                qa = QA()
                assert isinstance(qa(question="a").answer, str)
                batch = qa.batch([{"question": "b"}, {"question": "c"}])
                assert [type(item.result) for item in batch.items] == [ts.Prediction] * 2
                train = [ts.Example(question="q", answer="a").with_inputs("question")]
                report = ts.evaluate(qa, train, metric=lambda example, pred: 1.0)
                assert report.score == 1.0
                compiled = ts.optimize.LabeledFewShot(k=1).compile(QA(), trainset=train)
                assert compiled.answer.demos and compiled(question="d").answer
                streamed = list(qa.stream(question="e"))
                assert isinstance(streamed[-1], ts.Prediction)

                async def from_a_loop() -> Any:
                    return await qa.acall(question="f")

                assert asyncio.run(from_a_loop()).answer
        finally:
            lm.close()
    assert threading.get_ident() in qa.threads  # the direct call ran on the caller's thread
    assert len(qa.threads) > 1  # the others ran in worker threads, off the loop
