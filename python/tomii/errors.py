"""The exceptions of Tomii: one family under `TomiiError`, each class defined once, here.

The compiled binding raises these very classes (tomii-py/src/lib.rs imports them with
`import_exception!`), so `except tomii.GraphError` catches a bad graph whether the builder or the
runtime's parser found it. This module must never import the rest of the package: the binding
imports it when it first raises.
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "GraphError",
    "HangError",
    "KernelError",
    "NetworkIdleError",
    "PluginError",
    "SchedulerFault",
    "SessionBusy",
    "SessionClosed",
    "TomiiError",
]


class TomiiError(Exception):
    """Every error raised by Tomii."""


class GraphError(TomiiError, ValueError):
    """The graph is invalid (names the node, argument or field)."""


class PluginError(TomiiError):
    """A kernel library or scheduler could not be loaded or started."""


class KernelError(TomiiError):
    """A kernel failed; the message names the node, instance and frame."""


class SchedulerFault(TomiiError):
    """The scheduler broke its contract or stalled."""


class ConfigError(TomiiError):
    """A run option is invalid."""


class HangError(TomiiError):
    """A scheduler call or a kernel did not return within its limit; its thread stays stuck in
    the process."""


class NetworkIdleError(TomiiError):
    """A run of a network source heard no packet for `network_idle_timeout_ms` while frames were
    still expected; the message says after which frame and how many were taken."""


class SessionBusy(TomiiError):
    """Every slot of a session stayed busy for the whole timeout."""


class SessionClosed(TomiiError):
    """The session was closed, or its run ended."""


# Shown (in tracebacks, reprs and pickles) by their public names, `tomii.GraphError` and so on.
for _error in (
    TomiiError,
    GraphError,
    PluginError,
    KernelError,
    SchedulerFault,
    ConfigError,
    HangError,
    NetworkIdleError,
    SessionBusy,
    SessionClosed,
):
    _error.__module__ = "tomii"
del _error
