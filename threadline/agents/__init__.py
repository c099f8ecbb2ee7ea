"""Threadline agents."""
