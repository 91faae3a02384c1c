# tsum: builds tsumd and tsum-train on Debian 12 with the same dependency script as `make test`,
# then ships them in a runtime image that has only what they need to run.
FROM debian:12 AS build
WORKDIR /src
COPY scripts/install-deps.sh scripts/install-deps.sh
RUN TSUM_DEPS=build sh scripts/install-deps.sh && rm -rf /var/lib/apt/lists/*
COPY . .
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTSUM_BUILD_TESTS=OFF \
 && cmake --build build -j "$(nproc)"

FROM debian:12
COPY scripts/install-deps.sh /tmp/install-deps.sh
# libtorch's runtime libraries come with libtorch-dev's dependency chain; runtime installs the dataset and tools.
RUN TSUM_DEPS=runtime-image sh /tmp/install-deps.sh && rm -rf /var/lib/apt/lists/* /tmp/install-deps.sh
COPY --from=build /src/build/bin/tsumd /src/build/bin/tsum-train /usr/local/bin/
RUN useradd --system --create-home tsum
USER tsum
WORKDIR /home/tsum
EXPOSE 8080
ENTRYPOINT ["tsumd"]
CMD ["serve", "--db", "/home/tsum/tsum.db", "--listen", "0.0.0.0:8080"]
