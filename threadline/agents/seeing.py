"""Images to a model that sees: the answered turn's pictures as image blocks, counted.

Only the images of the turn being answered travel as images; earlier turns show the line the
intake wrote (`[image NAME, WxH]`, which a model that cannot see gets for every image), so a long
chat does not resend every picture. An image costs what the provider counts for it
(`threadline.history.files.image_tokens`), added to the prompt's token figure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from threadline.history.file_store import FileStore
from threadline.history.files import files_of, image_tokens
from threadline.history.model import StoredMessage
from threadline.history.prompt import PromptImage, PromptMessage


async def with_images(messages: Sequence[PromptMessage], inbound: StoredMessage,
                      files: FileStore | None) -> tuple[list[PromptMessage], int]:
    """`messages` with the inbound turn's images on its last user message; their tokens."""
    shown = list(messages)
    pictures = [f for f in files_of(inbound.metadata.extra) if f.kind == "image" and f.kept]
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
