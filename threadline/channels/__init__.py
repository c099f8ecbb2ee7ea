"""Threadline channels."""
