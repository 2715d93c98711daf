"""The end-to-end drill's harness: the chart installed with helm, the controller as a local process with
the chart's ServiceAccount token, the emulator following the Deployment's ready pods, a real Prometheus,
and recorders of what the API server saw."""
