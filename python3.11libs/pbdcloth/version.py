"""The package version, in one place (read by the package, the CLI and the VRM exporter)."""

__version__ = "0.1.0"
