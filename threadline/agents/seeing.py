"""Images to a model that sees: the answered turn's pictures as image blocks, counted.

Only the images of the turn being answered travel as images; earlier turns show the line the
intake wrote (`[image NAME, WxH]`, which a model that cannot see gets for every image), so a long
chat does not resend every picture. An image costs what the provider counts for it
(`threadline.history.files.image_tokens`), added to the prompt's token figure.

Once a turn's images were seen, `describe_images` has the model write a short description of
each, once: kept with the file (the same picture sent again reuses it) and written into the
turn's line (`[image NAME, WxH: DESCRIPTION]`), so later prompts, a model that cannot see and
the search read what the picture showed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import structlog

from threadline.agents.llm import ModelProvider, ModelRequest
from threadline.errors import ThreadlineError
from threadline.history.file_store import FileStore
from threadline.history.files import TurnFile, files_of, image_tokens
from threadline.history.model import StoredMessage
from threadline.history.prompt import PromptImage, PromptMessage
from threadline.history.store import ConversationStore

log = structlog.get_logger("threadline.files")

DESCRIBE = ("Describe this image in one or two short sentences for someone who cannot see it: "
            "what it shows and any text, numbers or error messages in it. Only the description.")
DESCRIPTION_MAX_TOKENS = 160


def pictures_of(inbound: StoredMessage) -> list[TurnFile]:
    """The kept images of a turn (the ones a model that sees is shown)."""
    return [f for f in files_of(inbound.metadata.extra) if f.kind == "image" and f.kept]


def images_cost(inbound: StoredMessage) -> int:
    """The prompt tokens the turn's images will cost, as the provider counts them: the room
    the history leaves for them."""
    return sum(image_tokens(f.width, f.height) for f in pictures_of(inbound))


async def with_images(messages: Sequence[PromptMessage], inbound: StoredMessage,
                      files: FileStore | None) -> tuple[list[PromptMessage], int]:
    """`messages` with the inbound turn's images on its last user message; their tokens."""
    shown = list(messages)
    pictures = pictures_of(inbound)
    last_user = next((i for i in range(len(shown) - 1, -1, -1)
                      if shown[i].role == "user"), None)
    if files is None or not pictures or last_user is None:
        return shown, 0
    images: list[PromptImage] = []
    cost = 0
    for picture in pictures:
        data = await files.get(picture.sha256)
        if data is not None:
            images.append(PromptImage(media_type=picture.media_type, data=data))
            cost += image_tokens(picture.width, picture.height)
    shown[last_user] = replace(shown[last_user], images=tuple(images))
    return shown, cost


def without_images(messages: Sequence[PromptMessage]) -> list[PromptMessage]:
    """The same prompt with every image left out (for a model that refused one)."""
    return [replace(m, images=()) if m.images else m for m in messages]


async def describe_images(inbound: StoredMessage, *, files: FileStore | None,
                          store: ConversationStore, provider: ModelProvider,
                          model: str) -> int:
    """Write a description of each image of `inbound` that has none yet (see the module
    docstring); how many the model wrote. A failure leaves the plain line, and is logged."""
    pictures = pictures_of(inbound)
    if files is None or not pictures:
        return 0
    known = await files.descriptions(f.sha256 for f in pictures)
    written = 0
    content = inbound.content
    for picture in pictures:
        description = known.get(picture.sha256)
        if description is None:
            data = await files.get(picture.sha256)
            if data is None:
                continue
            try:
                response = await provider.complete(ModelRequest(
                    model=model, system="", max_tokens=DESCRIPTION_MAX_TOKENS,
                    messages=[PromptMessage("user", DESCRIBE, images=(
                        PromptImage(picture.media_type, data),))]))
            except ThreadlineError as exc:
                log.warning("files.description_failed", conversation_id=inbound.conversation_id,
                            file=picture.name, error=str(exc))
                continue
            description = " ".join(response.text.split())
            if not description:
                continue
            await files.describe(picture.sha256, description)
            written += 1
        content = content.replace(picture.prompt_line(), described_line(picture, description), 1)
    if content != inbound.content:
        await store.edit_message(inbound.conversation_id, inbound.id, content)
    return written


def described_line(picture: TurnFile, description: str) -> str:
    """The turn's line for an image, with what the model saw in it."""
    return f"{picture.prompt_line()[:-1]}: {description}]"
