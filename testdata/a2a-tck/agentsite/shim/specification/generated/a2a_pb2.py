"""Stand-in: see __init__.py. Every attribute is an inert class."""

from grpc import _Stub


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _Stub(name, (), {})
