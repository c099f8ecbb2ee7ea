"""Where conversations and everything beside them are kept: backends chosen by the store URL."""
