"""A small HTTP client for /api/v1/ over urllib: Bearer key, Idempotency-Key on POST,
problem details turned into ``ApiError``."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def config_path() -> Path:
    explicit = os.environ.get("PORTALCTL_CONFIG")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "portalctl" / "config.json"


def load_config() -> dict[str, str]:
    path = config_path()
    data: dict[str, str] = {}
    if path.exists():
        data = json.loads(path.read_text())
    if os.environ.get("PORTAL_URL"):
        data["url"] = os.environ["PORTAL_URL"]
    if os.environ.get("PORTAL_API_KEY"):
        data["key"] = os.environ["PORTAL_API_KEY"]
    return data


def save_config(url: str, key: str) -> Path:
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"url": url.rstrip("/"), "key": key}, indent=2))
    path.chmod(0o600)
    return path


@dataclass
class ApiError(Exception):
    status: int
    code: str
    detail: str
    errors: list[dict[str, str]] = field(default_factory=list)
    body: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        lines = [f"error [{self.code}] (HTTP {self.status}): {self.detail}"]
        lines += [f"  {e.get('field') or '-'}: {e.get('message')}" for e in self.errors]
        return "\n".join(lines)


class Client:
    def __init__(self, url: str, key: str, *, language: str = "", timeout: float = 30.0) -> None:
        if not url or not key:
            raise ApiError(0, "not_configured", "Run: portalctl configure --url URL --key KEY")
        self.base = url.rstrip("/") + "/api/v1"
        self.key = key
        self.language = language or os.environ.get("PORTALCTL_LANG", "en")
        self.timeout = timeout

    def _request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: dict[str, Any] | None = None,
        raw: bool = False,
    ) -> Any:
        url = self.base + path
        if params:
            url += "?" + urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
        headers = {
            "Authorization": f"Bearer {self.key}",
            "Accept": "application/pdf" if raw else "application/json",
            "Accept-Language": self.language,
            "User-Agent": "portalctl/1",
        }
        data = None
        if method == "POST":
            headers["Idempotency-Key"] = str(uuid.uuid4())
            headers["Content-Type"] = "application/json"
            data = json.dumps(body or {}).encode()
        for attempt in range(5):
            request = urllib.request.Request(url, data=data, method=method, headers=headers)  # noqa: S310
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310
                    payload = response.read()
                    if raw:
                        return response.status, payload, dict(response.headers)
                    return json.loads(payload) if payload else None
            except urllib.error.HTTPError as exc:
                payload = exc.read()
                try:
                    problem = json.loads(payload) if payload else {}
                except ValueError:
                    problem = {}
                if exc.code == 429 and attempt < 4:  # same Idempotency-Key: safe to retry
                    time.sleep(min(int(exc.headers.get("Retry-After", "1")), 30))
                    continue
                raise ApiError(
                    exc.code,
                    problem.get("code", "http_error"),
                    problem.get("detail", exc.reason),
                    problem.get("errors", []),
                    problem,
                ) from None
            except urllib.error.URLError as exc:
                raise ApiError(0, "connection_failed", str(exc.reason)) from None
        raise AssertionError("unreachable")

    def get(self, path: str, **params: Any) -> Any:
        return self._request("GET", path, params=params)

    def post(self, path: str, body: Any = None) -> Any:
        return self._request("POST", path, body=body)

    def download(self, path: str) -> tuple[int, bytes, dict[str, str]]:
        result: tuple[int, bytes, dict[str, str]] = self._request("GET", path, raw=True)
        return result
