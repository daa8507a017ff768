# gputopo container image: a Debian 12 build, a Debian 12 slim runtime.
#
#   docker build -t gputopo:0.1.0 .
#   docker run --rm gputopo:0.1.0 --help
#
# The manifests (manifests/) run it as `gputopo serve ...` under uid 65532 with a read-only root
# filesystem.

# ---- build ------------------------------------------------------------------------------------
FROM debian:12 AS build
WORKDIR /src
# The dependency list alone first, so that the apt layer is reused while only sources change.
COPY scripts/install-deps scripts/install-deps
RUN scripts/install-deps --build-only && rm -rf /var/lib/apt/lists/*
COPY . .
# The gputopo binary and the kubectl plugin (kubectl-gputopo: copy it out of the image onto your
# PATH, e.g. docker cp); tests and benchmarks are not configured (they need GoogleTest data and
# ../shared fixtures that are not in the build context).
RUN cmake --preset release -DGPUTOPO_BUILD_TESTS=OFF -DGPUTOPO_BUILD_BENCH=OFF \
 && cmake --build --preset release --target gputopo kubectl-gputopo \
 && install -D -m 0755 build/release/src/gputopo /out/usr/local/bin/gputopo \
 && install -D -m 0755 build/release/src/kubectl-gputopo /out/usr/local/bin/kubectl-gputopo

# ---- runtime ----------------------------------------------------------------------------------
FROM debian:12-slim
# The Debian packages of the shared libraries the binary links (ldd build/release/src/gputopo):
#   libsimdjson.so.14 libsimdjson14 | libspdlog.so.1.10 libspdlog1.10 | libfmt.so.9 libfmt9
#   libcpp-httplib.so.0.11 libcpp-httplib0.11 | libssl.so.3, libcrypto.so.3 libssl3
#   libbrotlienc/dec/common.so.1 libbrotli1 | libz.so.1 zlib1g | libcurl.so.4 libcurl4
#   libyaml-cpp.so.0.7 libyaml-cpp0.7 (kubeconfig files) | libstdc++6, libgcc-s1, libc6 (base)
#   libgrpc++.so.1.51 libgrpc++1.51 | libgrpc.so.29 libgrpc29 (pulls libabsl, c-ares, re2, upb)
#   | libprotobuf.so.32 libprotobuf32 (the agent's kubelet APIs)
# ca-certificates: for an API server whose kubeconfig relies on the system trust store.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libsimdjson14 libspdlog1.10 libfmt9 libcpp-httplib0.11 libssl3 libbrotli1 zlib1g \
      libcurl4 libyaml-cpp0.7 libgrpc++1.51 libgrpc29 libprotobuf32 libstdc++6 libgcc-s1 \
      ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/ /
# Fail the build, naming the library, if the binary links something not installed above.
RUN if ldd /usr/local/bin/gputopo /usr/local/bin/kubectl-gputopo | grep 'not found'; then \
      echo "gputopo links a library the runtime image lacks: add its Debian package above" >&2; \
      exit 1; \
    fi \
 && /usr/local/bin/gputopo --help >/dev/null \
 && /usr/local/bin/kubectl-gputopo --help >/dev/null
# Non-root, numeric (so runAsNonRoot can verify it): the conventional "nonroot" uid.
RUN groupadd --system --gid 65532 nonroot \
 && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin nonroot
USER 65532:65532
EXPOSE 8888 8889
ENTRYPOINT ["/usr/local/bin/gputopo"]
CMD ["serve"]
