# The workload image: the stock Debian 12 root the test guests boot (tsum-base:bookworm, `docker import` of
# scripts/guest-rootfs.sh's tarball) plus the self-contained trainer bundle (scripts/make-bundle.sh), which
# carries its own loader and libraries, so the image needs nothing installed.
#   scripts/docker-images.sh workload   (make workload-image) builds it as tsum-train:latest; the build context
#   is a directory holding only tsum-bundle.tar.gz.
#   docker run --rm --network none tsum-train:latest --help
ARG BASE_IMAGE=tsum-base:bookworm
FROM ${BASE_IMAGE}
# The sha256 of the bundle and of this file, so a change of either shows as a stale image (docker-images.sh
# compares them).
ARG BUNDLE_SHA256=unknown
ARG DOCKERFILE_SHA256=unknown
LABEL org.tsum.bundle-sha256=${BUNDLE_SHA256} org.tsum.dockerfile-sha256=${DOCKERFILE_SHA256}
# ADD unpacks a local tar.gz: /opt/tsum/bin/tsum-train, /opt/tsum/bin/tsum-gpustat, /opt/tsum/lib, ...
ADD tsum-bundle.tar.gz /opt/
ENV PATH=/opt/tsum/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ENTRYPOINT ["tsum-train"]
