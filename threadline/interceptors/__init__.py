"""Threadline interceptors."""
