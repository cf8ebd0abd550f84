"""Prices of replies, for `Budget(cost=...)`, from the ``genai-prices`` package (an extra)."""

from __future__ import annotations

from decimal import Decimal

from typedspy._types import Usage
from typedspy.errors import ConfigurationError

__all__ = ["price_of"]


def price_of(usage: Usage, model: str, endpoint: str | None) -> Decimal:
    """What ``usage`` of ``model`` costs in US dollars, per genai-prices' bundled price list.

    The endpoint's URL picks the provider when genai-prices knows it; otherwise the model
    name alone is looked up.

    Raises:
        ConfigurationError: genai-prices is not installed, or knows no price for the model.
    """
    try:
        from genai_prices import Usage as PriceUsage
        from genai_prices import calc_price
    except ImportError as exc:
        raise ConfigurationError(
            'Budget(cost=...) needs genai-prices: pip install "typedspy[prices]"'
        ) from exc
    counted = PriceUsage(input_tokens=usage.prompt_tokens, output_tokens=usage.completion_tokens)
    try:
        return calc_price(counted, model_ref=model, provider_api_url=endpoint).total_price
    except LookupError:
        pass  # an endpoint genai-prices does not know (a proxy, a local server)
    try:
        return calc_price(counted, model_ref=model).total_price
    except LookupError as exc:
        raise ConfigurationError(
            f"Budget(cost=...): genai-prices knows no price for model {model!r}; "
            "use a token limit for this model instead"
        ) from exc
