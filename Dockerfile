# syntax=docker/dockerfile:1
# The kubectl-gpu admission webhook image (deployed by charts/kubectl-gpu-webhook).
#
#   docker build -t ghcr.io/kubectl-gpu/kubectl-gpu-webhook:0.1.0 .
#
# Two stages: the builder turns the project and every dependency into wheels; the final image
# only installs those wheels.  No compiler, no pip, no source tree and no build cache end up in
# the image that runs on the cluster.  For reproducible releases pin PYTHON_IMAGE by digest
# (python:3.12-slim@sha256:...).

ARG PYTHON_IMAGE=python:3.12-slim

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
# Only what the distribution is built from (.dockerignore keeps the rest out of the context).
COPY pyproject.toml README.md ./
COPY kubectl_gpu ./kubectl_gpu
COPY webhook ./webhook
# The webhook's server stack is the [webhook] extra (the kubectl plugin does not need it).
RUN python -m pip wheel --wheel-dir /wheels ".[webhook]"

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="kubectl-gpu-webhook" \
      org.opencontainers.image.description="Admission webhook moving GPU workloads from device plugins to Kubernetes DRA" \
      org.opencontainers.image.source="https://github.com/kubectl-gpu/kubectl-gpu" \
      org.opencontainers.image.licenses="Apache-2.0"
# The wheels are mounted for this one step, never copied into a layer; pip removes itself last.
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    python -m pip install --no-cache-dir --no-index --find-links=/wheels "kubectl-gpu[webhook]" \
    && python -m pip uninstall --yes pip \
    && rm -rf /root/.cache
# Bytecode was compiled at install time; the root filesystem is read-only at run time.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# Numeric, so that runAsNonRoot can verify it; the chart runs the pod as the same user.
USER 65532:65532
EXPOSE 8443
ENTRYPOINT ["kubectl-gpu-webhook", "serve"]
