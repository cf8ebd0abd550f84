"""`KNNFewShot`: per input, the most similar training examples become the demos.

Embeddings come from the endpoint's ``/v1/embeddings`` (`LM.aembed`); the vector math is
numpy's (the ``typedspy[knn]`` extra, ADR-020).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from typedspy.adapter import render_value
from typedspy.errors import ConfigurationError
from typedspy.evaluation._example import Example
from typedspy.lm._base import BaseLM
from typedspy.modules import Module
from typedspy.optimize._base import Optimizer, Plan, check_trainset, fresh_copy
from typedspy.optimize._labeled import with_labeled
from typedspy.settings import resolve_lm

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["KNNFewShot", "KNNProgram"]


def _numpy() -> Any:
    try:
        import numpy
    except ImportError as exc:  # pragma: no cover - the knn extra is part of dev
        raise ConfigurationError("KNNFewShot needs numpy: pip install 'typedspy[knn]'") from exc
    return numpy


def embedding_text(inputs: Mapping[str, Any]) -> str:
    """The text embedded for a set of inputs: ``name: value`` lines, in field order."""
    return "\n".join(f"{name}: {render_value(value)}" for name, value in inputs.items())


class KNNProgram(Module):
    """A program that picks its demos per call: the ``k`` training examples nearest the input.

    Built by `KNNFewShot.compile`. Each call embeds the inputs (one ``/v1/embeddings``
    request), ranks the training examples by cosine similarity (ties: training-set order),
    and runs a copy of ``program`` with the ``k`` nearest, most similar first, as every
    predictor's demos.

    Attributes:
        program: The program run with the chosen demos (its own demos are replaced per call).
        examples: The training examples.
        k: Demos per call.
    """

    def __init__(
        self,
        program: Module,
        examples: Sequence[Example],
        vectors: npt.NDArray[np.float64],
        *,
        k: int,
        lm: BaseLM,
        embedding_model: str | None,
    ) -> None:
        self.program = program
        self.examples = list(examples)
        self.k = k
        self._vectors = vectors
        self._lm = lm
        self._embedding_model = embedding_model

    async def neighbours(self, inputs: Mapping[str, Any]) -> list[Example]:
        """The ``k`` training examples nearest ``inputs``, most similar first."""
        np_ = _numpy()
        [query] = await self._lm.aembed([embedding_text(inputs)], model=self._embedding_model)
        q = np_.asarray(query, dtype=float)
        norm = np_.linalg.norm(q)
        sims = self._vectors @ (q / norm if norm else q)
        order = np_.argsort(-sims, kind="stable")[: self.k]
        return [self.examples[int(i)] for i in order]

    async def aforward(self, **inputs: Any) -> Any:
        """Run ``program`` with the nearest examples as demos."""
        chosen = await self.neighbours(inputs)
        return await with_labeled(self.program, chosen).acall(**inputs)


class KNNFewShot(Optimizer):
    """Demos chosen per input by similarity: the nearest training examples.

    Example:
        ```python
        knn = ts.KNNFewShot(k=3, lm=embedder, embedding_model="text-embedding-3-small")
        program = knn.compile(ts.Predict(RouteTicket), trainset)
        ```

    Args:
        k: Demos per call.
        lm: The `LM` whose endpoint embeds (default: the configured LM).
        embedding_model: The embedding model name (default: the LM's model).
        verbose: Print the plan before compiling.
    """

    def __init__(
        self,
        k: int = 3,
        *,
        lm: BaseLM | None = None,
        embedding_model: str | None = None,
        verbose: bool = True,
    ) -> None:
        if k < 1:
            raise ConfigurationError("KNNFewShot: k must be >= 1")
        self.k, self.lm, self.embedding_model, self.verbose = k, lm, embedding_model, verbose

    async def acompile(
        self,
        program: Module,
        trainset: Sequence[Example],
        *,
        valset: Sequence[Example] | None = None,
    ) -> KNNProgram:
        """Embed the training inputs (one request) and return a `KNNProgram`."""
        items = check_trainset(trainset, "KNNFewShot")
        np_ = _numpy()
        texts = [embedding_text(ex.inputs()) for ex in items]
        self._announce(
            Plan(
                f"KNNFewShot(k={self.k})",
                [
                    f"embed the inputs of {len(items)} training examples in one request",
                    f"at each call: embed the input (1 request) and use the {self.k} "
                    "nearest examples as demos",
                ],
                max_calls=1,
                est_tokens=sum(len(t) for t in texts) // 4,
            )
        )
        lm = resolve_lm(self.lm)
        raw = np_.asarray(await lm.aembed(texts, model=self.embedding_model), dtype=float)
        norms = np_.linalg.norm(raw, axis=1, keepdims=True)
        vectors = raw / np_.where(norms == 0, 1.0, norms)
        return KNNProgram(
            fresh_copy(program),
            items,
            vectors,
            k=self.k,
            lm=lm,
            embedding_model=self.embedding_model,
        )
