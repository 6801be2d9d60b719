# syntax=docker/dockerfile:1
# The CUDA image of tvmfork: TVM v0.26.0 with the patch series, built from source by the same
# `make wheel MODE=source VARIANT=cuda` a user runs, then installed into a slim runtime stage.
# Build it with scripts/docker-build.sh (it passes the labels' values from patches/lock.toml
# and the series); by hand:
#   docker build --build-arg TVM_COMMIT=<lock commit> --build-arg SERIES_DIGEST=<digest> .
# Offline / mirror: --build-arg TVM_SOURCE=<git URL or mirror>.

ARG CUDA_VERSION=13.0.1
ARG UBUNTU_VERSION=24.04

FROM nvidia/cuda:${CUDA_VERSION}-devel-ubuntu${UBUNTU_VERSION} AS build
ARG LLVM_VERSION=19
ARG CUDA_ARCHS=75-real;80-real;86-real;89-real;90-real;100-real;120
ARG TVM_SOURCE=
ARG JOBS=
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# g++-14: mlc-z3-static (TVM's Z3) needs GCC 14's libstdc++; LLVM static libs for the wheel.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      ca-certificates ccache g++-14 git make python3 python3-dev python3-venv \
      llvm-${LLVM_VERSION}-dev libpolly-${LLVM_VERSION}-dev libzstd-dev libxml2-dev zlib1g-dev \
 && rm -rf /var/lib/apt/lists/*
ENV CC=gcc-14 CXX=g++-14 PYTHON=python3 \
    TVMFORK_BUILD__LLVM_CONFIG=/usr/lib/llvm-${LLVM_VERSION}/bin/llvm-config \
    TVMFORK_BUILD__CUDA_ARCHITECTURES=${CUDA_ARCHS} \
    TVMFORK_BUILD__JOBS=${JOBS}
WORKDIR /src/tvmfork
COPY . .
# The same two commands as on a workstation: a checkout at the pin, then the wheel.
RUN --mount=type=cache,target=/root/.cache/tvmfork/ccache \
    make checkout TVM_SOURCE="${TVM_SOURCE}" \
 && make wheel MODE=source VARIANT=cuda

FROM nvidia/cuda:${CUDA_VERSION}-runtime-ubuntu${UBUNTU_VERSION} AS runtime
ARG TVM_COMMIT=unknown
ARG SERIES_DIGEST=unknown
LABEL org.opencontainers.image.title="tvmfork" \
      org.opencontainers.image.description="Apache TVM v0.26.0 with the tvmfork patch series (CUDA)" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.apache.tvm.commit="${TVM_COMMIT}" \
      dev.tvmfork.series-digest="${SERIES_DIGEST}"
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/tvmfork/out/apache_tvm-*.whl /tmp/wheel/
RUN python3 -m venv /opt/tvm \
 && /opt/tvm/bin/pip install --no-cache-dir /tmp/wheel/apache_tvm-*.whl \
 && rm -rf /tmp/wheel \
 && /opt/tvm/bin/python -c "import tvm; print(tvm.__version__)"
ENV PATH=/opt/tvm/bin:${PATH}
CMD ["python3"]
