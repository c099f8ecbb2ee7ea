"""Matrix: one account on a homeserver, through matrix-nio (needs `threadline[matrix]`)."""

from threadline.channels.matrix.channel import MatrixChannel

__all__ = ["MatrixChannel"]
