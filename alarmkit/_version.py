"""The package's version, in the floor so that every wing may read it."""

__version__ = "0.1.0"
