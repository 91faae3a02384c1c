#!/usr/bin/python3
"""Drives the tsum-fake-azure binary with Microsoft's own Python SDK, as Debian packages it (python3-azure:
azure-identity over MSAL, azure-mgmt-resource, -network and -compute, on azure-core): if the SDK gets a token
from the fake with a client secret, and the fake's resource groups, networks, VMs and public IPs, its
long-running operations (Azure-AsyncOperation and Location), tag filters, pages, errors and faults parse
into the SDK's models and pollers, the fake speaks ARM's shapes. Exit 0 when every check held."""
import os
import re
import subprocess
import sys
import tempfile
import time

FAKE = sys.argv[1]
SECRET = "tsum-azure-sdk-check~secret"
SCOPE = "https://management.azure.com/.default"
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def make_tls(d):
    """A throwaway CA and a server certificate for 127.0.0.1, as tests/support/test_tls.h makes them."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    run = lambda args: subprocess.run(["openssl"] + args, check=True, capture_output=True)
    with open(os.path.join(d, "server.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
                "keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n")
    p = lambda name: os.path.join(d, name)
    run(["req", "-x509"] + ec + ["-keyout", p("ca.key"), "-out", p("ca.pem"), "-days", "2", "-subj", "/CN=tsum check CA",
                                 "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign"])
    run(["req"] + ec + ["-keyout", p("server.key"), "-out", p("server.csr"), "-subj", "/CN=127.0.0.1"])
    run(["x509", "-req", "-in", p("server.csr"), "-CA", p("ca.pem"), "-CAkey", p("ca.key"), "-CAcreateserial",
         "-out", p("server.pem"), "-days", "2", "-extfile", p("server.ext")])
    return p("ca.pem"), p("server.pem"), p("server.key")


with tempfile.TemporaryDirectory() as d:
    ca, cert, key = make_tls(d)
    os.environ["REQUESTS_CA_BUNDLE"] = ca  # azure-core's and MSAL's requests trust the test CA
    from azure.core.exceptions import ClientAuthenticationError, HttpResponseError, ResourceNotFoundError
    from azure.identity import ClientSecretCredential
    from azure.mgmt.compute import ComputeManagementClient
    from azure.mgmt.network import NetworkManagementClient
    from azure.mgmt.resource import ResourceManagementClient

    fake = subprocess.Popen([FAKE, "--client-secret", SECRET, "--cert", cert, "--key", key, "--starting-s", "0.3",
                             "--page-size", "2", "--faults", "resourceGroups.get:429,virtualMachines.get:503"],
                            stdout=subprocess.PIPE, text=True)
    try:
        m = re.search(r"listening on (\S+) \(tenant (\S+), client (\S+), subscription (\S+)\)", fake.stdout.readline())
        url, tenant, client, sub = m.groups()
        cred = ClientSecretCredential(tenant, client, SECRET, authority=url, instance_discovery=False)
        token = cred.get_token(SCOPE)
        check(token.token and token.expires_on > time.time() + 3000, "a token that lasts an hour: %r" % (token.expires_on,))
        wrong = ClientSecretCredential(tenant, client, "not-the-secret", authority=url, instance_discovery=False)
        try:
            wrong.get_token(SCOPE)
            check(False, "a wrong client secret got a token")
        except ClientAuthenticationError as e:
            check("AADSTS7000215" in str(e), "a wrong secret is Entra ID's AADSTS7000215: %s" % e)

        kw = dict(base_url=url, credential_scopes=[SCOPE])
        rm = ResourceManagementClient(cred, sub, **kw)
        net = NetworkManagementClient(cred, sub, **kw)
        compute = ComputeManagementClient(cred, sub, **kw)

        for i in range(3):
            g = rm.resource_groups.create_or_update("tsum-check-%d" % i,
                                                    {"location": "westeurope", "tags": {"tsum": "check", "tsum-run": str(i)}})
            check(g.properties.provisioning_state == "Succeeded", "a new group has succeeded")
        rm.resource_groups.create_or_update("other", {"location": "westeurope", "tags": {"tsum": "someone-else"}})
        g = rm.resource_groups.get("tsum-check-0")  # first answer: 429 with Retry-After, which azure-core retries
        check(g.tags == {"tsum": "check", "tsum-run": "0"}, "tags round-trip: %r" % g.tags)
        check(g.location == "westeurope", "location: %s" % g.location)
        mine = [x.name for x in rm.resource_groups.list(filter="tagName eq 'tsum' and tagValue eq 'check'")]  # pages of two
        check(sorted(mine) == ["tsum-check-0", "tsum-check-1", "tsum-check-2"], "tag filter over nextLink pages: %r" % mine)
        try:
            rm.resource_groups.get("nope")
            check(False, "a missing group was found")
        except ResourceNotFoundError as e:
            check(e.error.code == "ResourceGroupNotFound", "ARM's error shape: %s" % e.error.code)

        vnet = net.virtual_networks.begin_create_or_update(
            "tsum-check-0", "check-vnet",
            {"location": "westeurope", "address_space": {"address_prefixes": ["10.0.0.0/16"]},
             "subnets": [{"name": "default", "address_prefix": "10.0.0.0/24"}]}, polling_interval=0.05).result()  # Azure-AsyncOperation
        check(vnet.provisioning_state == "Succeeded", "network provisioned: %s" % vnet.provisioning_state)
        subnet = "/subscriptions/%s/resourceGroups/tsum-check-0/providers/Microsoft.Network/virtualNetworks/check-vnet/subnets/default" % sub
        vm_params = {
            "location": "westeurope", "tags": {"tsum": "check"},
            "hardware_profile": {"vm_size": "Standard_B2s"},
            "storage_profile": {"image_reference": {"publisher": "Canonical", "offer": "0001-com-ubuntu-server-jammy",
                                                    "sku": "22_04-lts-gen2", "version": "latest"},
                                "os_disk": {"create_option": "FromImage", "delete_option": "Delete"}},
            "os_profile": {"computer_name": "vm0", "admin_username": "tsum", "custom_data": "I2Nsb3VkLWNvbmZpZwo=",
                           "linux_configuration": {"disable_password_authentication": True, "ssh": {"public_keys": [
                               {"path": "/home/tsum/.ssh/authorized_keys", "key_data": "ssh-rsa AAAAB3NzaC1yc2E check"}]}}},
            "network_profile": {"network_api_version": "2020-11-01", "network_interface_configurations": [{
                "name": "vm0-nic", "primary": True, "delete_option": "Delete",
                "ip_configurations": [{"name": "ipconfig1", "subnet": {"id": subnet},
                                       "public_ip_address_configuration": {"name": "vm0-ip", "sku": {"name": "Standard"},
                                                                           "delete_option": "Delete",
                                                                           "public_ip_allocation_method": "Static"}}]}]}}
        vm = compute.virtual_machines.begin_create_or_update("tsum-check-0", "vm0", vm_params, polling_interval=0.05).result()
        check(vm.provisioning_state == "Succeeded", "VM provisioned through the poller: %s" % vm.provisioning_state)
        check(vm.hardware_profile.vm_size == "Standard_B2s", "VM size: %s" % vm.hardware_profile.vm_size)
        time.sleep(0.5)
        vm = compute.virtual_machines.get("tsum-check-0", "vm0", expand="instanceView")  # first answer: 503, retried
        codes = [s.code for s in vm.instance_view.statuses]
        check("PowerState/running" in codes, "instance view statuses: %r" % codes)
        ips = [ip.ip_address for ip in net.public_ip_addresses.list("tsum-check-0")]
        check(len(ips) == 1 and ips[0].count(".") == 3, "the VM's public IP: %r" % ips)
        # The subscription-wide listings describe_many reads: statusOnly VMs with their instance views, all IPs.
        listed = list(compute.virtual_machines.list_all(status_only="true"))
        check([v.name for v in listed] == ["vm0"], "list_all(status_only): %r" % [v.name for v in listed])
        codes = [s.code for s in listed[0].instance_view.statuses] if listed and listed[0].instance_view else []
        check("PowerState/running" in codes and "ProvisioningState/succeeded" in codes,
              "list_all(status_only) instance view: %r" % codes)
        check("/resourceGroups/tsum-check-0/" in listed[0].id, "a listed VM's id names its group: %s" % listed[0].id)
        all_ips = [(ip.id, ip.ip_address) for ip in net.public_ip_addresses.list_all()]
        check(len(all_ips) == 1 and all_ips[0][1] == ips[0] and "/resourceGroups/tsum-check-0/" in all_ips[0][0],
              "public_ip_addresses.list_all: %r" % all_ips)
        again = compute.virtual_machines.begin_create_or_update("tsum-check-0", "vm0", vm_params, polling_interval=0.05).result()
        check(again.provisioning_state == "Succeeded", "a second PUT is an update")
        try:
            bad = dict(vm_params, hardware_profile={})
            compute.virtual_machines.begin_create_or_update("tsum-check-0", "vm1", bad, polling_interval=0.05).result()
            check(False, "a VM without a size was accepted")
        except HttpResponseError as e:
            check(e.status_code == 400 and e.error.code == "InvalidParameter", "a VM without a size: %s" % e)

        rm.resource_groups.begin_delete("tsum-check-0", polling_interval=0.05).result()  # 202 + Location, polled until 200
        check(not rm.resource_groups.check_existence("tsum-check-0"), "the deleted group is gone")
        left = sorted(x.name for x in rm.resource_groups.list(filter="tagName eq 'tsum' and tagValue eq 'check'"))
        check(left == ["tsum-check-1", "tsum-check-2"], "what is left: %r" % left)
    finally:
        fake.terminate()
        fake.wait(10)

print("fake_azure_sdk_check: %d failures" % len(failures))
sys.exit(1 if failures else 0)
