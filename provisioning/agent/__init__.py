"""Node validation agent: measures a node for real and prints one JSON document.

Standard library plus optional numpy, torch and nvidia-ml-py; nothing from Django and
nothing outside this package, so that the package can be copied onto a node alone and
run as ``python -m provisioning.agent`` (or under any other package name). The agent
measures and reports (status completed, failed or skipped); the portal judges.
"""

__version__ = "1.0"
