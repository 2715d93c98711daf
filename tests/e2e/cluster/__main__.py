"""Run a LocalCluster by hand:  cd tests && python -m e2e.cluster --gpu-nodes 2 --ready-delay 30

Prints the kubeconfig path and keeps the cluster up until Ctrl-C (or --for SECONDS).
"""

from __future__ import annotations

import argparse
import signal
import sys
import time

from .cluster import LocalCluster


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m e2e.cluster")
    ap.add_argument("--gpu-nodes", type=int, default=1)
    ap.add_argument("--gpus-per-node", type=int, default=8)
    ap.add_argument("--ready-delay", type=float, default=10.0, help="KWOK cold start, seconds")
    ap.add_argument("--workdir", help="keep certs/logs/etcd data here")
    ap.add_argument("--for", dest="duration", type=float, default=0, help="stop after N seconds")
    args = ap.parse_args(argv)

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with LocalCluster(workdir=args.workdir, ready_delay=args.ready_delay) as c:
        for i in range(args.gpu_nodes):
            c.add_gpu_node(f"gpu-{i}", gpus=args.gpus_per_node)
        print(f"cluster up in {c.startup_seconds:.1f}s: {c.server_url}")
        print(f"export KUBECONFIG={c.kubeconfig_path}")
        print(f"logs: {c.logs_dir}", flush=True)
        deadline = time.monotonic() + args.duration if args.duration else None
        try:
            while deadline is None or time.monotonic() < deadline:
                time.sleep(1)
                c.check_alive()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
