"""Stand-in for grpcio, which this run leaves out.

AgentSite serves no gRPC binding, so the kit never builds its gRPC client
(it builds clients only for the bindings the agent card declares); its
modules only need their imports to resolve. Every attribute is an inert
class, so annotations, isinstance checks and enum look-ups at import time
work and anything that would really talk gRPC fails loudly.
"""


class _Stub(type):
    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Stub(name, (), {})

    def __call__(cls, *args, **kwargs):
        raise RuntimeError("gRPC is not available in this run of the A2A TCK (AgentSite serves no gRPC)")


class RpcError(Exception):
    pass


class Call:
    pass


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _Stub(name, (), {})
