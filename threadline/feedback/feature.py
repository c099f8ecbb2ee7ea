"""Feedback as a feature: 👍 / 👎 under each agent reply, on by a setting.

    features:
      feedback:
        buttons: true          # off by default
        agents: [support]      # only these agents' replies (default: every agent's)

It adds the `/feedback` command the buttons send (`command`), the stage that puts the buttons
under each posted reply (`offer`), and to `/metrics` `threadline_reply_feedback_total{agent,
vote}` (votes cast) and `threadline_reply_feedback_withdrawn_total{agent,vote}` (votes a
person's second press replaced): votes as they stand are the first minus the second. Votes
are kept by the backend's `feedback` part; without one the feature is off and says so.
"""

from __future__ import annotations

import structlog
from prometheus_client import Counter
from pydantic import Field

from threadline.errors import ConfigError
from threadline.features import Feature, FeatureContext, FeatureParts
from threadline.feedback.command import feedback_command
from threadline.feedback.offer import OfferFeedback
from threadline.feedback.votes import Vote, VoteValue
from threadline.settings_section import Section

log = structlog.get_logger("threadline.features")


class FeedbackSettings(Section):
    """`features: feedback:`: people rate agents' replies with buttons under them."""

    buttons: bool = False
    """Put 👍 and 👎 under each agent reply (a press is kept per person and reply)."""
    agents: list[str] = Field(default_factory=list)
    """Only these agents' replies get the buttons (empty: every agent's)."""


def _build(context: FeatureContext) -> FeatureParts | None:
    options = context.options
    if not isinstance(options, FeedbackSettings) or not options.buttons:
        return None
    unknown = sorted(set(options.agents) - set(context.settings.agents))
    if unknown:
        raise ConfigError(f"features.feedback.agents: no agent is named {', '.join(unknown)} "
                          f"(the agents: {', '.join(context.settings.agents)})")
    book = context.backend.feedback
    if book is None:
        log.warning("feature.off", feature="feedback", backend=context.backend.name,
                    detail="this backend keeps no votes, so no feedback buttons are shown")
        return None
    votes = Counter("threadline_reply_feedback", "Votes cast on agents' replies (a changed "
                    "vote counts again; see _withdrawn)", ("agent", "vote"),
                    registry=context.metrics.registry)
    for agent in context.settings.agents:
        for value in ("up", "down"):
            votes.labels(agent, value)  # shown as 0 before the first vote

    withdrawn = Counter("threadline_reply_feedback_withdrawn", "Votes on replies replaced by "
                        "the same person's other vote", ("agent", "vote"),
                        registry=context.metrics.registry)

    def counted(vote: Vote, earlier: VoteValue | None) -> None:
        if earlier == vote.vote:
            return
        votes.labels(vote.agent, vote.vote).inc()
        if earlier is not None:
            # Prometheus counters only rise: the replaced vote is counted as withdrawn.
            withdrawn.labels(vote.agent, earlier).inc()

    return FeatureParts(commands=(feedback_command(book, counted=counted),),
                        stages={"feedback": OfferFeedback(agents=options.agents)})


FEATURE = Feature(name="feedback", build=_build, settings=FeedbackSettings)
