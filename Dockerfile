# Three stages: plotly.js's cartesian bundle comes from npm and wheels are built where
# compilers live; the runtime image only installs and copies them.
FROM node:20-bookworm-slim AS js
WORKDIR /src
# As scripts/ensure-js.sh installs it for `make install`.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

FROM python:3.11-slim-bookworm AS builder
WORKDIR /src
RUN pip install --no-cache-dir --upgrade pip
COPY pyproject.toml README.md ./
# Every package pyproject.toml includes (tests/test_dockerfile.py keeps the two lists equal).
COPY fleetscope ./fleetscope
COPY inventory ./inventory
COPY queries ./queries
COPY dashboard ./dashboard
COPY slo ./slo
COPY triage ./triage
COPY capacity ./capacity
COPY blindspots ./blindspots
COPY audit ./audit
COPY fleetsim ./fleetsim
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    FLEETSCOPE_VAR_DIR=/app/var \
    FLEETSCOPE_APP_DIR=/app
RUN groupadd --system fleetscope && useradd --system --gid fleetscope --home /app fleetscope
WORKDIR /app
COPY --from=builder /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
COPY manage.py ./
COPY templates ./templates
COPY static ./static
COPY deploy/bin ./bin
# Served as static/vendor/plotly.min.js (fleetscope/staticfinders.py).
COPY --from=js /src/node_modules/plotly.js-cartesian-dist-min/plotly-cartesian.min.js ./node_modules/plotly.js-cartesian-dist-min/
# collectstatic needs settings to load; these throwaway values never reach a running container.
RUN SECRET_KEY=collectstatic-only DATABASE_URL=sqlite:////tmp/build.sqlite3 \
    python manage.py collectstatic --noinput \
    && mkdir -p /app/var && chown -R fleetscope:fleetscope /app/var
USER fleetscope
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD python -c "import urllib.request,sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4).status != 200)"
CMD ["bin/web"]
