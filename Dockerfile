# One image for every Ongrid process: web (daphne), worker and beat (Celery), im and migrate; the
# command picks which (deploy/entrypoint.sh, docs/deploy.md). Build from the repository root:
#   docker build -t ongrid .
# PYTHON_IMAGE may name any Debian-based image whose `python3` is 3.11 (CI builds on its own base).
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# --- build: compilers and gettext live here only ---------------------------------------------
FROM ${PYTHON_IMAGE} AS build
SHELL ["/bin/sh", "-eu", "-c"]
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1
# Debian's versions are not pinned: the point release moves them, and pinned ones vanish from it.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev gettext \
 && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/venv
COPY requirements.txt /tmp/requirements.txt
# No bytecode and no pip in the venv that ships: together they are a third of its size (the size
# target is in docs/deploy.md); Python compiles what a process imports when it starts.
# Nor the packages' translation sources (the compiled .mo files stay) or Twisted's own tests.
RUN /opt/venv/bin/pip install --no-compile -r /tmp/requirements.txt \
 && /opt/venv/bin/pip uninstall -y -q pip setuptools \
 && find /opt/venv -name '*.po' -delete \
 && find /opt/venv/lib/python3.11/site-packages/twisted -type d -name test -prune -exec rm -rf {} +
WORKDIR /opt/ongrid
COPY . .
# Catalogs and static files are made once here, so the final image needs neither gettext nor a
# writable code tree. The key and data folder below exist for these two commands only.
RUN export SECRET_KEY=image-build-only ONGRID_DATA_DIR=/tmp/build-data \
           ONGRID_STATIC_ROOT=/opt/ongrid/staticfiles \
 && /opt/venv/bin/python manage.py compilemessages -v 0 --ignore .venv --ignore var \
 && /opt/venv/bin/python manage.py collectstatic --noinput -v 0 \
 && rm -rf /tmp/build-data

# --- final: the venv, the code, a user -----------------------------------------------------
FROM ${PYTHON_IMAGE}
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="Ongrid" \
      org.opencontainers.image.description="AIOps assistant for on-call engineers: web, worker, beat and IM in one image" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.licenses="NOASSERTION" \
      org.opencontainers.image.documentation="docs/deploy.md"
SHELL ["/bin/sh", "-eu", "-c"]
RUN groupadd --system --gid 10001 ongrid \
 && useradd --system --uid 10001 --gid ongrid --home-dir /var/lib/ongrid --no-create-home \
      --shell /usr/sbin/nologin ongrid \
 && install -d -o ongrid -g ongrid -m 0750 /var/lib/ongrid
COPY --from=build /opt/venv /opt/venv
COPY --from=build /opt/ongrid /opt/ongrid
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    ONGRID_DATA_DIR=/var/lib/ongrid \
    ONGRID_STATIC_ROOT=/opt/ongrid/staticfiles \
    ONGRID_PORT=8000
WORKDIR /opt/ongrid
USER 10001:10001
VOLUME ["/var/lib/ongrid"]
EXPOSE 8000
# Probes /healthz of the web command; the other commands have no HTTP port and pass (compose.yaml
# gives the worker a check of its own).
HEALTHCHECK --interval=30s --timeout=6s --start-period=40s --retries=3 \
  CMD ["/opt/ongrid/deploy/entrypoint.sh", "healthcheck"]
ENTRYPOINT ["/opt/ongrid/deploy/entrypoint.sh"]
CMD ["web"]
