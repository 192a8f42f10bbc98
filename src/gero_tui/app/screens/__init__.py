"""The explorer's screens, one per module."""
