"""Credentials for GetExtendedAgentCard, which A2A 1.0.1 requires.

The specification makes the extended card a MUST for authenticated callers
only (section 13.3), and the kit's own CARD-EXT-001 says the client MUST
authenticate the request with a scheme the public card declares. The kit
has no option to give it credentials, so run.sh loads this plugin
(-p agentsite_auth): with AGENTSITE_TCK_BEARER set (the node's operator
token), the kit's JSON-RPC and HTTP+JSON clients send it as the card's
bearer scheme on GetExtendedAgentCard, and on nothing else: every other
request stays as anonymous as the kit sends it.
"""
import os

from tck.transport.http_json_client import HttpJsonClient
from tck.transport.jsonrpc_client import JsonRpcClient


def _with_bearer(get_card):
    def call(self):
        token = os.environ.get("AGENTSITE_TCK_BEARER", "")
        if not token:
            return get_card(self)
        self._client.headers["Authorization"] = "Bearer " + token
        try:
            return get_card(self)
        finally:
            del self._client.headers["Authorization"]

    return call


def pytest_configure(config):
    for cls in (JsonRpcClient, HttpJsonClient):
        cls.get_extended_agent_card = _with_bearer(cls.get_extended_agent_card)
