# syntax=docker/dockerfile:1
# The controller image: `inference-autoscaler run` as a non-root user on a read-only root filesystem.
#   docker build -t inference-autoscaler:dev .

FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
# Dependencies first (cached while only the source changes).
COPY pyproject.toml README.md ./
RUN mkdir -p autoscaler forecasting simulations \
 && touch autoscaler/__init__.py forecasting/__init__.py simulations/__init__.py \
 && pip install . \
 && pip uninstall -y inference-autoscaler
COPY autoscaler ./autoscaler
COPY forecasting ./forecasting
COPY simulations ./simulations
RUN pip install --no-deps . && python -m compileall -q /opt/venv

FROM python:3.11-slim
LABEL org.opencontainers.image.title="inference-autoscaler" \
      org.opencontainers.image.description="Predictive, cold-start-aware autoscaler for LLM inference on Kubernetes" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# A fixed numeric non-root user, so `runAsNonRoot` can be verified by the kubelet.
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["inference-autoscaler"]
CMD ["run"]
