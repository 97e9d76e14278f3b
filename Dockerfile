# syntax=docker/dockerfile:1
# The kubectl-gpu admission webhook image (deployed by charts/kubectl-gpu-webhook).
#
#   docker buildx build --platform linux/amd64 \
#     --build-arg SOURCE_DATE_EPOCH=$(git log -1 --format=%ct) \
#     --output type=image,name=ghcr.io/kubectl-gpu/kubectl-gpu-webhook:0.1.0,rewrite-timestamp=true,push=true \
#     --metadata-file meta.json .
#   scripts/release --image-metadata meta.json    # the released chart pins this image's digest
#
# Reproducible: both base images are pinned by digest, and every dependency comes from
# requirements-webhook.lock with its sha256 (pip --require-hashes; regenerate the lock with
# scripts/lock-webhook-deps after changing pyproject.toml).  The lock is for linux/amd64.
# SOURCE_DATE_EPOCH (the last commit's time) fixes the image's and its files' timestamps
# (BuildKit >= 0.13, rewrite-timestamp) and makes the compiled bytecode hash-checked instead of
# timestamped; PYTHONHASHSEED makes its contents the same on every build.  The same commit then
# gives the same image digest, which the chart pins (image.digest).
#
# Minimal: the builder (Debian 12 and its python3) makes a virtualenv; the image that runs is
# distroless Python (the same Debian 12 python3), which has no shell, no package manager and no
# pip: only the interpreter, the virtualenv and the license.

ARG BUILD_IMAGE=debian:12-slim@sha256:ccb33c3ac5b02588fc1d9e4fc09b952e433d0c54d8618d0ee1afadf1f3cf2455
ARG RUNTIME_IMAGE=gcr.io/distroless/python3-debian12@sha256:2fdb05402a2cf21cf78fdb3ba4c5db167241e9e498140f5bf689d7efb773731f

FROM ${BUILD_IMAGE} AS build
ARG SOURCE_DATE_EPOCH
ENV SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-0} \
    PYTHONHASHSEED=0
RUN apt-get update \
    && apt-get install --yes --no-install-recommends --no-install-suggests python3-venv \
    && python3 -m venv /opt/venv
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY requirements-webhook.lock ./
RUN /opt/venv/bin/pip install --require-hashes --no-deps --only-binary=:all: -r requirements-webhook.lock
# Only what the distribution is built from (.dockerignore keeps the rest out of the context).
COPY pyproject.toml README.md LICENSE ./
COPY kubectl_gpu ./kubectl_gpu
COPY webhook ./webhook
# Its dependencies (with the [webhook] extra) are installed above, from the lock; nothing else is fetched.
RUN /opt/venv/bin/pip install --no-deps --no-index --no-build-isolation . \
    && /opt/venv/bin/pip uninstall --yes pip setuptools wheel

FROM ${RUNTIME_IMAGE}
LABEL org.opencontainers.image.title="kubectl-gpu-webhook" \
      org.opencontainers.image.description="Admission webhook moving GPU workloads from device plugins to Kubernetes DRA" \
      org.opencontainers.image.source="https://github.com/kubectl-gpu/kubectl-gpu" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /opt/venv /opt/venv
COPY LICENSE /usr/share/doc/kubectl-gpu/LICENSE
# Bytecode was compiled at install time; the root filesystem is read-only at run time.
ENV PATH=/opt/venv/bin:/usr/bin:/bin \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# Numeric (distroless' nonroot), so that runAsNonRoot can verify it; the chart runs the pod as the same user.
USER 65532:65532
EXPOSE 8443
ENTRYPOINT ["kgpu-webhook", "serve"]
