"""Talking to Prometheus: its HTTP query API, PromQL label values, the configuration the
portal writes for a local Prometheus and the process ``make run`` and the tests start.

Every request has a timeout; an unreachable Prometheus, an error status or a body that is
not the API's JSON raises ``PrometheusUnavailable`` (measurements fail closed: a rule that
could not be evaluated is not a healthy node, it is an error staff see in the log)."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
from django.conf import settings


class PrometheusUnavailable(Exception):
    """Prometheus did not answer the query (down, timeout, error, or not configured)."""


@dataclass(frozen=True)
class Sample:
    labels: dict[str, str]
    value: float
    at: float  # epoch seconds


def telemetry_token() -> str:
    """The bearer token of the discovery endpoint and the simulated exporters."""
    if settings.PORTAL_TELEMETRY_TOKEN:
        return str(settings.PORTAL_TELEMETRY_TOKEN)
    return hmac.new(settings.SECRET_KEY.encode(), b"portal-telemetry", hashlib.sha256).hexdigest()


def label_regex(values: Sequence[str]) -> str:
    """A PromQL ``=~`` value matching exactly these strings (RE2-escaped, then quoted)."""
    alternatives = "|".join(re.escape(v) for v in sorted(set(values)))
    return quote(f"^(?:{alternatives})$") if values else quote("^$")


def quote(value: str) -> str:
    """A PromQL string literal."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def node_selector(hostnames: Sequence[str]) -> str:
    """The label selector of exactly these nodes (never empty: no node matches nothing)."""
    return f"node=~{label_regex(hostnames)}"


def _get(path: str, params: dict[str, Any]) -> Any:
    base = settings.PORTAL_PROMETHEUS_URL
    if not base:
        raise PrometheusUnavailable("PORTAL_PROMETHEUS_URL is not set")
    try:
        response = requests.get(
            base.rstrip("/") + path, params=params, timeout=settings.PORTAL_PROMETHEUS_TIMEOUT_S
        )
        body = response.json()
    except (requests.RequestException, ValueError) as exc:
        raise PrometheusUnavailable(f"{path}: {exc}") from exc
    if response.status_code != 200 or body.get("status") != "success":
        raise PrometheusUnavailable(f"{path}: {response.status_code} {body.get('error', '')}")
    return body["data"]


def query(promql: str, *, at: float | None = None) -> list[Sample]:
    params: dict[str, Any] = {"query": promql}
    if at is not None:
        params["time"] = at
    data = _get("/api/v1/query", params)
    if data.get("resultType") != "vector":
        raise PrometheusUnavailable(f"expected a vector, got {data.get('resultType')}")
    return [
        Sample(dict(row["metric"]), float(row["value"][1]), float(row["value"][0]))
        for row in data["result"]
    ]


def query_range(
    promql: str, *, start: float, end: float, step: float
) -> list[tuple[dict[str, str], list[tuple[float, float]]]]:
    data = _get("/api/v1/query_range", {"query": promql, "start": start, "end": end, "step": step})
    return [
        (dict(row["metric"]), [(float(t), float(v)) for t, v in row["values"]])
        for row in data["result"]
    ]


# --- a local Prometheus ----------------------------------------------------------------


@dataclass(frozen=True)
class PortalScrape:
    """The portal's own metrics in the same Prometheus: the web processes' ``/metrics``
    (``web``: host:port of each, scraped directly, not through the balancer) and the
    workers' metrics ports, listed by ``workers_discovery_url`` from their heartbeats; both
    with the metrics token."""

    web: Sequence[str]
    token: str
    workers_discovery_url: str = ""


def _portal_jobs(portal: PortalScrape, timeout: str, interval: str) -> list[dict[str, Any]]:
    auth = {"type": "Bearer", "credentials": portal.token}
    jobs: list[dict[str, Any]] = [
        {
            "job_name": "portal",
            "scrape_timeout": timeout,
            "metrics_path": "/metrics",
            "authorization": auth,
            "static_configs": [{"targets": list(portal.web)}],
        }
    ]
    if portal.workers_discovery_url:
        jobs.append(
            {
                "job_name": "portal-workers",
                "scrape_timeout": timeout,
                "metrics_path": "/metrics",
                "authorization": auth,
                "http_sd_configs": [
                    {
                        "url": portal.workers_discovery_url,
                        "refresh_interval": interval,
                        "authorization": auth,
                    }
                ],
            }
        )
    return jobs


def config_text(
    *, discovery_url: str, token: str, scrape_s: float, portal: PortalScrape | None = None
) -> str:
    """prometheus.yml: one job whose targets come from the portal's discovery endpoint
    (re-read every scrape interval), both authenticated with the telemetry token; and,
    with ``portal``, the jobs of the portal's own metrics."""
    interval = f"{max(int(scrape_s), 1)}s"
    timeout = f"{max(min(int(scrape_s) - 1, 10), 1)}s"
    config: dict[str, Any] = {
        "global": {"scrape_interval": interval, "evaluation_interval": interval},
        "scrape_configs": [
            {
                "job_name": "gpu-nodes",
                "scrape_timeout": timeout,
                "authorization": {"type": "Bearer", "credentials": token},
                "http_sd_configs": [
                    {
                        "url": discovery_url,
                        "refresh_interval": interval,
                        "authorization": {"type": "Bearer", "credentials": token},
                    }
                ],
            }
        ],
    }
    if portal is not None:
        config["scrape_configs"] += _portal_jobs(portal, timeout, interval)
    return json.dumps(config, indent=2)  # JSON is YAML


def prometheus_binary() -> str | None:
    return shutil.which("prometheus")


def prometheus_start(
    *,
    workdir: Path,
    port: int,
    discovery_url: str,
    token: str,
    scrape_s: float,
    retention: str,
    portal: PortalScrape | None = None,
) -> subprocess.Popen[bytes]:
    """Start Debian's prometheus as a plain process on 127.0.0.1:port."""
    binary = prometheus_binary()
    if binary is None:
        raise FileNotFoundError("prometheus is not installed (scripts/system_deps.sh)")
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "prometheus.yml"
    config.write_text(
        config_text(discovery_url=discovery_url, token=token, scrape_s=scrape_s, portal=portal)
    )
    return subprocess.Popen(  # noqa: S603
        [
            binary,
            f"--config.file={config}",
            f"--storage.tsdb.path={workdir / 'data'}",
            f"--storage.tsdb.retention.time={retention}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=(workdir / "prometheus.log").open("ab"),
    )
