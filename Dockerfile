# syntax=docker/dockerfile:1
# The sluice CLI as an image, for the recipes in deploy/ (Kubernetes, Airflow), which name it by this tag:
#
#   docker build -t sluice:0.1.0 .
#   docker run --rm -v "$PWD:/work" sluice:0.1.0 run pipelines/company_profiles.yaml
#
# Push it where your cluster pulls from and put that name in the recipes. The tag is package.json's version; Node is
# a current LTS, the one CI also runs the tests on (.ci/run). test/deploy/recipes.test.ts holds the tag, the Node
# version, the user and the copies to what package.json, .ci/run and the recipes say; the tarball's exact file list
# and the two stages' steps (pack, then install the tarball with production dependencies only and run a pipeline from
# there) are proven without Docker by test/deploy/package.test.ts.

ARG NODE_VERSION=22

# 1. Build: every dependency, then `npm pack`, whose prepack compiles dist/. The tarball holds exactly what
#    package.json's `files` allows: the compiled CLI, the JSON Schema, the example pipelines and the sample files they
#    read; no sources, no tests, and never a `.env`, an output, run state or dead letters that sit in pipelines/
#    (.dockerignore keeps those out of the context as well).
FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY bin bin
COPY src src
COPY sinks sinks
COPY config config
COPY pipelines pipelines
RUN npm pack --pack-destination /tmp && mv /tmp/sluice-*.tgz /tmp/sluice.tgz

# 2. Run: the packed files alone (nothing else from the build stage or the context but the lockfile) and the
#    production dependencies it pins; no compiler, no dev tools, no npm cache.
#    Debian's glibc (not Alpine's musl) for DuckDB's prebuilt binding. Scripts stay off: dist/ is built already and
#    no production dependency needs an install script.
FROM node:${NODE_VERSION}-bookworm-slim
ENV NODE_ENV=production
WORKDIR /opt/sluice
COPY --from=build /tmp/sluice.tgz /tmp/sluice.tgz
COPY package-lock.json ./
RUN tar -xzf /tmp/sluice.tgz --strip-components=1 --no-same-owner \
 && rm /tmp/sluice.tgz \
 && npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && npm cache clean --force \
 && chmod 755 bin/sluice.js \
 && ln -s /opt/sluice/bin/sluice.js /usr/local/bin/sluice \
 && mkdir /work && chown 1000:1000 /work
# The image's `node` user, by number: Kubernetes' runAsNonRoot can check a number, not a name. /work is its own, for
# pipelines run without a volume mounted there.
USER 1000:1000
WORKDIR /work
ENTRYPOINT ["sluice"]
CMD ["--help"]
