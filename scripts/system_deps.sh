#!/usr/bin/env bash
# Install the Debian packages the product needs, only when missing:
# CJK fonts for PDFs, libharfbuzz-subset0 (WeasyPrint font subsetting: ~0.5 s a render
# instead of ~4 s), poppler-utils (pdftotext/pdftoppm for checking PDFs), gettext,
# chromium (the browser tests/e2e drive through Playwright; `playwright install` cannot
# download browsers here), openssh-server (tests/provisioning/test_ssh_runner.py starts
# its own sshd from a temporary folder on a free port of 127.0.0.1 to test the validation
# agent's SSH runner; the system's ssh service that the package installs is not wanted, so
# when this script installs the package it disables that service again), prometheus
# (Debian's 2.42: `make run` and tests/integration start it as a plain process on
# 127.0.0.1; its system service is disabled again like ssh's), haproxy (the load balancer
# of deploy/haproxy.cfg, which tests/integration/test_multihost.py starts inside a network
# namespace; its system service is disabled again too), and the servers it runs inside
# namespaces of its own: postgresql-15 (initdb, postgres) and redis-server.
set -euo pipefail
packages=(fonts-noto-cjk libharfbuzz-subset0 poppler-utils gettext libpango-1.0-0 libpangoft2-1.0-0 chromium openssh-server prometheus haproxy postgresql-15 redis-server)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "Installing Debian packages: ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
if [[ " ${missing[*]} " == *" openssh-server "* ]] && command -v systemctl >/dev/null; then
  $sudo systemctl disable --now ssh >/dev/null 2>&1 || true
fi
if [[ " ${missing[*]} " == *" prometheus "* ]] && command -v systemctl >/dev/null; then
  $sudo systemctl disable --now prometheus prometheus-node-exporter >/dev/null 2>&1 || true
fi
if [[ " ${missing[*]} " == *" haproxy "* ]] && command -v systemctl >/dev/null; then
  $sudo systemctl disable --now haproxy >/dev/null 2>&1 || true
fi
