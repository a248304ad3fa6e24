# One image for every component: `tas extender`, `tas controller`, `tas descheduler` (every
# package the `tas` command imports is copied; tests/test_deploy.py checks the list).
#   docker build -t telemetry-aware-scheduling:0.1.0 .
# It installs the BASE install only, what runs in a cluster: tas extender, controller,
# descheduler, validate and set-health. tas run needs the [demo] extra and tas simulate and
# tas sweep the [sim] extra (numpy, matplotlib, Dask); here they say so and exit 2. Every
# dependency comes from requirements.lock, pinned with hashes (make lock), and the project's
# own wheel brings none (--no-deps), so two builds of one commit install the same bits.
# The base image is pinned by digest, so a rebuild gets the same bits until the pin is moved on
# purpose: python:3.11-slim (Python 3.11.15, Debian trixie) as docker-library/repo-info recorded
# it (repos/python/remote/3.11-slim.md, commit 2477d553d2fd). scripts/pin-images.sh prints the
# digest the tag has now and, with --write, moves both FROM lines to it.
FROM python:3.11-slim@sha256:90744cff8f32887f075c47d747a173ff333e9e98801667af93c357fa9f5e28ff AS build
WORKDIR /src
# The build backend, pinned with hashes too (no build isolation fetching whatever is newest).
COPY requirements-build.lock ./
RUN pip install --no-cache-dir --require-hashes --no-deps -r requirements-build.lock
COPY pyproject.toml README.md ./
COPY tas ./tas
COPY tas_cli ./tas_cli
COPY tas_herd ./tas_herd
COPY tas_explain ./tas_explain
COPY tas_replay ./tas_replay
COPY tas_inmemory ./tas_inmemory
COPY tas_dashboard ./tas_dashboard
COPY tas_simulator ./tas_simulator
COPY extender ./extender
COPY policy_controller ./policy_controller
COPY descheduler ./descheduler
RUN pip wheel --no-cache-dir --no-deps --no-build-isolation --wheel-dir /wheels .

FROM python:3.11-slim@sha256:90744cff8f32887f075c47d747a173ff333e9e98801667af93c357fa9f5e28ff
# Numeric IDs, so Kubernetes can check runAsNonRoot without resolving a user name.
RUN groupadd --gid 10001 tas \
    && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin tas
COPY requirements.lock /tmp/requirements.lock
RUN pip install --no-cache-dir --require-hashes --no-deps -r /tmp/requirements.lock \
    && rm /tmp/requirements.lock
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-deps /wheels/*.whl && rm -rf /wheels
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
USER 10001:10001
ENTRYPOINT ["tas"]
CMD ["--help"]
