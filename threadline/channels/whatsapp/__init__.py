"""WhatsApp: the Cloud API by webhook, through pywa (needs `threadline[whatsapp]`)."""

from threadline.channels.whatsapp.channel import WhatsAppChannel

__all__ = ["WhatsAppChannel"]
