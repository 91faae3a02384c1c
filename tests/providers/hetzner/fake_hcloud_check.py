#!/usr/bin/python3
"""Drives the tsum-fake-hetzner binary with Debian's python3-hcloud, Hetzner's own Python client: if the
fake's answers parse into hcloud's models and its lifecycle, labels, pagination, errors and faults behave
as the client expects, the fake speaks the real API's shapes. Exit 0 when every check held."""
import re
import subprocess
import sys
import time

from hcloud import APIException, Client
from hcloud.images.domain import Image
from hcloud.locations.domain import Location
from hcloud.server_types.domain import ServerType

TOKEN = "tsum-hcloud-check-token"
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def error_code(fn):
    try:
        fn()
    except APIException as e:
        return e.code
    return None


fake = subprocess.Popen([sys.argv[1], "--token", TOKEN, "--initializing-s", "0.2", "--starting-s", "0.2",
                         "--deleting-s", "0.2", "--page-size", "2", "--faults", "servers.get:429"],
                        stdout=subprocess.PIPE, text=True)
try:
    line = fake.stdout.readline()
    url = re.search(r"API at (\S+)\)", line).group(1)
    client = Client(token=TOKEN, api_endpoint=url, poll_interval=0.05)
    client._retry_wait_time = 0.05

    created = []
    for i in range(3):
        r = client.servers.create(name="tsum-check-%d" % i, server_type=ServerType(name="cx22"),
                                  image=Image(name="ubuntu-22.04"), location=Location(name="nbg1"),
                                  user_data="#cloud-config\n", labels={"tsum": "check", "tsum-run": str(i)})
        check(r.server.status == "initializing", "a new server is initializing: %s" % r.server.status)
        check(r.server.public_net.ipv4.ip.count(".") == 3, "a new server has an IPv4 address")
        check(r.server.datacenter.location.name == "nbg1", "the server is where it was asked to be")
        check(r.root_password, "without SSH keys Hetzner hands out a root password")
        created.append(r.server)
    client.servers.create(name="other", server_type=ServerType(name="cx22"), image=Image(name="debian-12"),
                          labels={"tsum": "someone-else"})

    time.sleep(0.5)
    s = client.servers.get_by_id(created[0].id)  # first answer: 429, which hcloud retries itself
    check(s.status == "running", "running after initializing and starting: %s" % s.status)
    check(s.labels == {"tsum": "check", "tsum-run": "0"}, "labels round-trip: %r" % s.labels)
    check(s.server_type.name == "cx22", "server type: %s" % s.server_type.name)

    mine = client.servers.get_all(label_selector="tsum==check")  # pages of two
    check(sorted(x.name for x in mine) == ["tsum-check-0", "tsum-check-1", "tsum-check-2"],
          "label_selector over pages: %r" % [x.name for x in mine])
    page = client.servers.get_list(label_selector="tsum==check", page=1, per_page=2)
    check(page.meta.pagination.next_page == 2 and page.meta.pagination.total_entries == 3,
          "meta.pagination: next %r of %r" % (page.meta.pagination.next_page, page.meta.pagination.total_entries))
    check(client.servers.get_by_name("tsum-check-1").id == created[1].id, "get by name")

    types = client.server_types.get_all()
    check(len(types) == 9, "every server type over the pages: %d" % len(types))
    cx32 = [t for t in types if t.name == "cx32"][0]
    fsn1 = [p for p in cx32.prices if p["location"] == "fsn1"][0]
    check(fsn1["price_hourly"]["net"] == "0.0109000000", "decimal price strings: %r" % fsn1)
    check(fsn1["price_hourly"]["gross"] == "0.0129710000000000", "gross = net + 19%%: %r" % fsn1)

    check(error_code(lambda: client.servers.create(name="tsum-check-0", server_type=ServerType(name="cx22"),
                                                   image=Image(name="ubuntu-22.04"))) == "uniqueness_error",
          "a taken name is a uniqueness_error")
    check(error_code(lambda: client.servers.create(name="x", server_type=ServerType(name="cx999"),
                                                   image=Image(name="ubuntu-22.04"))) == "invalid_input",
          "an unknown server type is invalid_input")

    action = client.servers.delete(created[0])
    check(action.command == "delete_server", "delete answers with a delete_server action")
    check(client.servers.get_by_id(created[0].id).status == "deleting", "deleting right after delete")
    time.sleep(0.4)
    check(error_code(lambda: client.servers.get_by_id(created[0].id)) == "not_found", "gone after deleting")
    check(len(client.servers.get_all(label_selector="tsum==check")) == 2, "the sweep no longer lists it")

    stranger = Client(token="wrong-token", api_endpoint=url)
    check(error_code(lambda: stranger.servers.get_all()) == "unauthorized", "a wrong token is unauthorized")
finally:
    fake.terminate()
    fake.wait(timeout=10)

print("fake_hcloud_check: %d failures" % len(failures))
sys.exit(1 if failures else 0)
