#!/usr/bin/env bash
# Install Prometheus and promtool from Debian's packages, for the integration tests and the backtest.
#
# Idempotent: does nothing when both are already on PATH. Runs as root (no sudo). Debian's package
# ships a service that would listen on :9090; the tests start their own Prometheus on a free port, so
# any service the package started is stopped and disabled, and the policy-rc.d guard keeps apt from
# starting it in the first place where invoke-rc.d is used.
set -euo pipefail

have() { command -v "$1" >/dev/null 2>&1; }

if have prometheus && have promtool; then
  echo "prometheus and promtool already installed: $(prometheus --version 2>&1 | head -1)"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-prometheus.sh must run as root (apt-get install)" >&2
  exit 1
fi

# Keep apt from starting services during the install (honoured by invoke-rc.d / deb-systemd-invoke).
policy=/usr/sbin/policy-rc.d
created_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy"
  chmod +x "$policy"
  created_policy=1
fi
cleanup() { if [ "$created_policy" = 1 ]; then rm -f "$policy"; fi; }
trap cleanup EXIT

export DEBIAN_FRONTEND=noninteractive
echo "install-prometheus: installing Debian's prometheus package with apt-get (about 1-2 minutes) ..."
if ! apt-cache show prometheus >/dev/null 2>&1; then
  apt-get update -qq
fi
apt-get install -y -qq --no-install-recommends prometheus >/dev/null || {
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends prometheus >/dev/null
}

# Neutralize any service the package may have started (systemd or sysvinit), then any stray daemon
# listening as the packaged service (its pid file, never a broad process-name kill).
if have systemctl && [ -d /run/systemd/system ]; then
  systemctl stop prometheus.service 2>/dev/null || true
  systemctl disable prometheus.service 2>/dev/null || true
fi
if [ -x /etc/init.d/prometheus ]; then
  /etc/init.d/prometheus stop >/dev/null 2>&1 || true
fi
for pidfile in /run/prometheus/prometheus.pid /var/run/prometheus.pid; do
  if [ -s "$pidfile" ]; then
    kill "$(cat "$pidfile")" 2>/dev/null || true
  fi
done

for bin in prometheus promtool; do
  if ! have "$bin"; then
    # Debian puts both in /usr/bin; this covers an unusual PATH.
    if [ -x "/usr/bin/$bin" ]; then
      ln -sf "/usr/bin/$bin" "/usr/local/bin/$bin"
    else
      echo "$bin not found after installing Debian's prometheus package" >&2
      exit 1
    fi
  fi
done
echo "installed: $(prometheus --version 2>&1 | head -1)"
