"""WhatsApp: the Cloud API by webhook, through pywa (needs `threadline[whatsapp]`).

    from threadline.channels.whatsapp import WhatsAppChannel
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from threadline.plugs import lazy_exports

if TYPE_CHECKING:
    from threadline.channels.whatsapp.channel import WhatsAppChannel

__all__ = ["WhatsAppChannel"]

__getattr__ = lazy_exports(__name__, {
    "WhatsAppChannel": "threadline.channels.whatsapp.channel",
})
