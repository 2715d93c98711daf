"""Where benchmark runs execute: local worker processes (the default) or a Ray cluster.

`make_executor(workers, ray_address)` returns a `concurrent.futures.Executor` either way, so callers
submit and collect the same way and get the same results: each run is a pure function of its job.
Ray is an optional extra (`pip install -e '.[ray]'`). `ray_address` is what `ray.init` takes:
`local` starts a private Ray instance on this machine with `workers` CPUs, `auto` joins the cluster
this machine belongs to, and `ray://HOST:10001` connects a Ray client to a remote head (for example a
KubeRay `RayCluster`'s head service; see docs/ray.md). On a cluster, `workers` is ignored: the
cluster's CPUs set the parallelism.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

RAY_MISSING = "--ray needs Ray, an optional extra: pip install -e '.[ray]'"


class RayUnavailable(RuntimeError):
    """Ray is not installed or the address cannot be used; the message says which and how to fix it."""


class RayExecutor(Executor):
    """`submit(fn, *args)` runs `fn` as a Ray task; the future holds its result or the task's own
    exception (not Ray's wrapper), as a local process pool would."""

    def __init__(self, address: str, workers: int) -> None:
        try:
            import ray
        except ImportError:
            raise RayUnavailable(RAY_MISSING) from None
        self._ray = ray
        self._remotes: dict[Callable[..., Any], Any] = {}
        try:
            if address == "local":
                # address="local" always starts a new instance (a bare init would join a running cluster)
                ray.init(address="local", num_cpus=workers, include_dashboard=False, log_to_driver=False)
            else:
                ray.init(address=address, log_to_driver=False, runtime_env={"py_modules": _code_folders()})
        except Exception as e:  # Ray raises ConnectionError, RuntimeError, ValueError... for a bad address
            detail = str(e).strip().splitlines()[0] if str(e).strip() else ""
            raise RayUnavailable(f"--ray {address}: cannot start or reach Ray ({type(e).__name__}: {detail})"
                                 ) from None

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        remote = self._remotes.get(fn)
        if remote is None:
            remote = self._remotes[fn] = self._ray.remote(fn)
        out: Future[Any] = Future()
        out.set_running_or_notify_cancel()

        def settle(f: Future[Any]) -> None:
            e = f.exception()
            if e is None:
                out.set_result(f.result())
            else:  # a RayTaskError carries the task's exception as `cause`
                out.set_exception(getattr(e, "cause", None) or e)

        remote.remote(*args, **kwargs).future().add_done_callback(settle)
        return out

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._ray.shutdown()


def _code_folders() -> list[str]:
    """This checkout's packages as folders, shipped to a cluster (the Ray client cannot send module
    objects) so it runs exactly the code that runs here; its image must still provide the third-party
    dependencies (numpy, scipy, pandas, pydantic, ...)."""
    import autoscaler
    import forecasting
    import simulations

    return [str(Path(m.__file__).parent) for m in (autoscaler, forecasting, simulations) if m.__file__]


def make_executor(workers: int, ray_address: str | None) -> Executor:
    """Local processes unless `ray_address` names a Ray cluster (or `local` / `auto`)."""
    if ray_address is None:
        return ProcessPoolExecutor(max_workers=workers)
    return RayExecutor(ray_address, workers)
