"""A feature's grounding block in an agent's prompt: its share of the budget held back from the
history, and the block put just before the answered turn.

The block is a feature part (`FeatureParts.grounding`, the knowledge feature's sections;
`threadline.turn.Grounding`). It is not a stage of the turn: the stages
(`threadline.stages`) decide who answers a turn before any prompt exists, and the block needs
the prompt itself (the budget the history is fitted to, the turns it shows before the
answered one, the place just before it), which only the agent's assembly has. So the agent
calls these two functions at those two points and knows nothing else of grounding.
"""

from __future__ import annotations

from dataclasses import replace

from threadline.errors import StoreError
from threadline.history.assembler import AssemblerOptions
from threadline.history.prompt import AssembledPrompt
from threadline.history.recall import RECALL_HEADER
from threadline.turn import Grounding, TurnContext


def held_back(grounding: Grounding | None, agent: str, options: AssemblerOptions, *,
              minimum: int) -> tuple[AssemblerOptions, int]:
    """(the options the history is assembled with, the tokens held back for the block): the
    block's share comes off the budget, which keeps at least `minimum` for the history."""
    reserved = grounding.reserve(agent, options.token_budget) if grounding is not None else 0
    if not reserved:
        return options, 0
    return replace(options, token_budget=max(minimum, options.token_budget - reserved)), reserved


async def ground_prompt(grounding: Grounding, context: TurnContext, prompt: AssembledPrompt, *,
                        room: int) -> None:
    """Put the grounding block just before the answered turn; a grounding that fails leaves
    the turn answered without it (a store that fails fails the prompt, as it would anyway)."""
    # The conversation the prompt shows before the answered turn (its summary, turns and the
    # immediate context), not the turns recall found for the question itself.
    earlier = [m.content for m in prompt.messages[:-1]
               if m.content and not m.content.startswith(RECALL_HEADER)]
    try:
        grounded = await grounding.ground(context, earlier, room=room)
    except StoreError:
        raise
    except Exception as exc:
        context.log.warning("agent.grounding_failed", error=f"{type(exc).__name__}: {exc}")
        prompt.notes.append("grounding failed; answered without it")
        return
    if grounded is None or not prompt.messages:
        return
    prompt.messages.insert(len(prompt.messages) - 1, grounded.message)
    prompt.token_count += grounded.tokens
    prompt.grounded = list(grounded.shown)
