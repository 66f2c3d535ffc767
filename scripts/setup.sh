#!/usr/bin/env bash
# Installs every build and test dependency of ipucc from Debian's archive (python3-onnx: e2e tests
# write small ONNX models; python3-torch and python3-torchvision: tests/e2e/test_resnet.sh exports
# torchvision's ResNet-18 and checks ipurun's logits against torch's; chromium:
# tests/e2e/test_report.sh loads the HTML report headless; clang-format and clang-tidy:
# scripts/lint.sh; openmpi-bin: mpirun, which ipurun --instances starts; clang and its sanitizer
# and libFuzzer runtimes: scripts/test.sh's sanitizer build and the fuzzers, with libomp-14-dev
# for the omp.h that oneDNN's headers include, and llvm and lld, whose tools (llvm-ar, ld.lld, ...)
# CMake's clang configuration takes when present, so every machine builds that tree alike; ccache:
# scripts/test.sh compiles the release and runtime-only builds' shared files once). Idempotent.
set -euo pipefail
"$(dirname "$0")/apt-install.sh" \
  cmake ninja-build g++ pkg-config ccache \
  libprotobuf-dev protobuf-compiler \
  libonnx-dev \
  libcli11-dev \
  libtbb-dev \
  libzstd-dev \
  zlib1g-dev \
  libssl-dev \
  nlohmann-json3-dev \
  doctest-dev \
  libopenblas-pthread-dev \
  libsleef-dev \
  libdnnl-dev \
  libcurl4-openssl-dev nginx-light \
  libopenmpi-dev openmpi-bin \
  dataset-fashion-mnist \
  python3 \
  python3-onnx \
  python3-torch python3-torchvision \
  chromium \
  clang-format clang-tidy python3-yaml \
  clang libclang-rt-14-dev libomp-14-dev llvm lld
