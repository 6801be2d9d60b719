"""tvmfork: a downstream Apache TVM fork kept as a patch series, and its build tool."""

__version__ = "0.1.0"
