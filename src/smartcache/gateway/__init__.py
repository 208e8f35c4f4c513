"""The gateway: an OpenAI-compatible caching proxy in front of the bundled engine or an upstream."""

from smartcache.gateway.app import create_app
from smartcache.gateway.auth import AuthPolicy, Identity, KeyRegistry, Principal, sign_session
from smartcache.gateway.controls import RequestControls, read_controls
from smartcache.gateway.docking import dock_history
from smartcache.gateway.service import ChatService, GatewaySettings

__all__ = ["AuthPolicy", "ChatService", "GatewaySettings", "Identity", "KeyRegistry", "Principal", "RequestControls",
           "create_app", "dock_history", "read_controls", "sign_session"]
