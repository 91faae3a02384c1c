#!/bin/sh
# Runs a browser test in a network namespace of its own with only loopback in it, when it can make one (root).
# Chromium watches the host's interfaces and fails requests in flight with net::ERR_NETWORK_CHANGED when one
# appears or goes; the suites that run beside it under `ctest -j` add and remove veth pairs all the time. In its
# own namespace the browser sees no such change, and nothing it does can leave the machine.
if [ "$(id -u)" = 0 ] && unshare -n true 2>/dev/null; then
  exec unshare -n sh -c 'ip link set lo up && exec "$@"' own_netns "$@"
fi
exec "$@"
