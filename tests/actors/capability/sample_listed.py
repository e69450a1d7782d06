"""A module that names its capabilities in ``CAPABILITIES`` (loaded in test_loader.py)."""

from tests.actors.capability.sample_capabilities import EchoCapability

CAPABILITIES = [EchoCapability]
