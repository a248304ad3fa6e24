# One image for every component: `tas extender`, `tas controller`, `tas descheduler` (every
# package the `tas` command imports is copied; tests/test_deploy.py checks the list).
#   docker build -t telemetry-aware-scheduling:0.1.0 .
# The base image is pinned by digest, so a rebuild gets the same bits until the pin is moved on
# purpose: python:3.11-slim (Python 3.11.15, Debian trixie) as docker-library/repo-info recorded
# it (repos/python/remote/3.11-slim.md, commit 2477d553d2fd). scripts/pin-images.sh prints the
# digest the tag has now and, with --write, moves both FROM lines to it.
FROM python:3.11-slim@sha256:90744cff8f32887f075c47d747a173ff333e9e98801667af93c357fa9f5e28ff AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY tas ./tas
COPY tas_cli ./tas_cli
COPY extender ./extender
COPY policy_controller ./policy_controller
COPY descheduler ./descheduler
COPY embedded ./embedded
COPY dashboard ./dashboard
COPY simulator ./simulator
COPY benchmarks ./benchmarks
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim@sha256:90744cff8f32887f075c47d747a173ff333e9e98801667af93c357fa9f5e28ff
# Numeric IDs, so Kubernetes can check runAsNonRoot without resolving a user name.
RUN groupadd --gid 10001 tas \
    && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin tas
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
USER 10001:10001
ENTRYPOINT ["tas"]
CMD ["--help"]
