"""The models Threadline picks when a config names none are ones the installed SDK still serves.

The SDK lists the models it knows are retiring, with their end-of-life dates: a default on that
list would leave every deployment without a `model:` line answering with errors on that date.
"""

from anthropic.resources.messages.messages import DEPRECATED_MODELS

from threadline.agents.anthropic_provider import DEFAULT_MODEL, DEFAULT_SUMMARY_MODEL


def test_no_default_model_is_retiring() -> None:
    for model in (DEFAULT_MODEL, DEFAULT_SUMMARY_MODEL):
        assert model not in DEPRECATED_MODELS, (
            f"{model} reaches end of life on {DEPRECATED_MODELS[model]}: move the default on")
