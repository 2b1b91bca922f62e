"""The Python client of the SynthOrg Memory REST API.

from synthorg_memory import MemoryClient
client = MemoryClient(base_url="http://127.0.0.1:8000", api_key=KEY)
client.memories.store(content="Billing deploys on Fridays.", category="semantic")
"""

from synthorg_memory._client import AsyncMemoryClient, MemoryClient
from synthorg_memory.errors import (
    AuthenticationError,
    AuthError,
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitedError,
    ServerError,
    SynthOrgError,
    UnavailableError,
    ValidationError,
)
from synthorg_memory.resources import UNSET

__version__ = "0.1.0"

__all__ = [
    "UNSET",
    "AsyncMemoryClient",
    "AuthError",
    "AuthenticationError",
    "ConflictError",
    "MemoryClient",
    "NotFoundError",
    "PermissionDeniedError",
    "RateLimitedError",
    "ServerError",
    "SynthOrgError",
    "UnavailableError",
    "ValidationError",
]
