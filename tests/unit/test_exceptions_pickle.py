"""Every exception the project defines survives pickling, so an error raised in a worker process (bench's
process pool, a Ray task) reaches the parent as the same one-line message, not as a `BrokenProcessPool`.

The classes are found by walking the packages: a new exception with a constructor this test cannot call
makes it fail until an example is added to EXAMPLES.
"""

from __future__ import annotations

import importlib
import inspect
import pickle
import pkgutil
from typing import Any

import pytest

from autoscaler.policy_loader import PolicyProblem

PACKAGES = ("autoscaler", "forecasting", "simulations")

# Constructor arguments for the classes whose __init__ takes more than a message.
EXAMPLES: dict[str, tuple[Any, ...]] = {
    "simulations.errors.SimulationInputError": ("trace.csv:17", "ContextTokens", "'x' is not a number",
                                                "use a whole number ≥ 1"),
    "autoscaler.targets.base.TargetBlocked": ("OwnedByHPA", "an HPA owns the replicas: delete it"),
    "autoscaler.sources.prom_api.SourceError": ("timeout", "no answer within 5 s"),
    "autoscaler.httpserve._BadRequest": (431, "request head over 8192 bytes"),
    "simulations.bench.JobError": ("diurnal: hpa search: ValueError: x", "Traceback ...", True),
    "autoscaler.policy_loader.PolicyError": ([PolicyProblem("p.yaml", 3, "spec.replicas.max", "must be ≥ 1"),
                                              PolicyProblem("p.yaml", None, "", "not a mapping")],),
}


def project_exceptions() -> list[type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for name in PACKAGES:
        package = importlib.import_module(name)
        for info in pkgutil.walk_packages(package.__path__, f"{name}."):
            if info.name.endswith("__main__"):
                continue
            module = importlib.import_module(info.name)
            for _, cls in inspect.getmembers(module, inspect.isclass):
                if issubclass(cls, BaseException) and cls.__module__ == module.__name__:
                    found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return [found[k] for k in sorted(found)]


def _instance(cls: type[BaseException]) -> BaseException:
    key = f"{cls.__module__}.{cls.__qualname__}"
    if key in EXAMPLES:
        return cls(*EXAMPLES[key])
    defines_init = next(c for c in cls.__mro__ if "__init__" in vars(c))
    if defines_init.__module__ == "builtins":  # a plain message, as ValueError("...") takes it
        return cls("something went wrong")
    pytest.fail(f"{key} has its own constructor: add example arguments to EXAMPLES")


def test_the_walk_finds_the_known_exceptions() -> None:
    names = {f"{c.__module__}.{c.__qualname__}" for c in project_exceptions()}
    assert set(EXAMPLES) <= names
    assert len(names) >= 8


@pytest.mark.parametrize("cls", project_exceptions(), ids=lambda c: c.__qualname__)
def test_exception_round_trips_through_pickle(cls: type[BaseException]) -> None:
    original = _instance(cls)
    copy = pickle.loads(pickle.dumps(original))
    assert type(copy) is cls
    assert str(copy) == str(original)
    assert vars(copy) == vars(original)  # the fields callers read (where, fix, kind, problems, ...)
