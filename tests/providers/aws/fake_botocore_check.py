#!/usr/bin/python3
"""The fake cloud against a real AWS SDK: botocore's EC2 and pricing clients (Debian's python3-botocore, with
its own service models and signer) drive tsum-fake-cloud. This checks that the fake verifies real SigV4
signatures, that its XML and JSON answers have the shapes AWS's models describe, and that its errors,
idempotency and pagination behave as EC2's do; then a fake of two regions: each region's own instances and spot
prices, and a region whose spot capacity ran out answering InsufficientInstanceCapacity as EC2 does.
(moto, the usual independent EC2, is not packaged in Debian 12: `apt-cache search python3-moto` finds nothing.)
Usage: fake_botocore_check.py <path to tsum-fake-cloud>
"""
import json
import subprocess
import sys
import time

try:
    import botocore.session
    from botocore.config import Config
    from botocore.exceptions import ClientError
except ImportError as e:
    sys.exit(f"FAIL: botocore is not importable ({e}); install python3-botocore (scripts/install-deps.sh)")

KEY, SECRET = "AKIDTSUMFAKE", "tsum-fake-secret-key"


def expect_error(code, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except ClientError as e:
        got = e.response["Error"]["Code"]
        assert got == code, f"expected {code}, got {got}"
        return
    raise AssertionError(f"expected {code}, got success")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    proc = subprocess.Popen([sys.argv[1], "--listen", "127.0.0.1:0", "--pending-s", "0.3", "--shutting-down-s", "0.3",
                             "--page-size", "2", "--faults", "DescribeInstanceTypes:503"],
                            stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert "listening on " in line, f"unexpected first line: {line!r}"
        url = line.split("listening on ")[1].split()[0]
        session = botocore.session.get_session()
        config = Config(retries={"max_attempts": 3, "mode": "standard"})
        ec2 = session.create_client("ec2", region_name="us-east-1", endpoint_url=url, aws_access_key_id=KEY,
                                    aws_secret_access_key=SECRET, config=config)
        spec = dict(ImageId="ami-0123", InstanceType="g4dn.xlarge", MinCount=1, MaxCount=3, ClientToken="tok-1",
                    UserData="#cloud-config\n", InstanceInitiatedShutdownBehavior="terminate",
                    TagSpecifications=[{"ResourceType": "instance", "Tags": [{"Key": "tsum", "Value": "check"}]}])
        first = ec2.run_instances(**spec)
        ids = [i["InstanceId"] for i in first["Instances"]]
        assert len(ids) == 3 and all(i["State"]["Name"] == "pending" for i in first["Instances"])
        again = ec2.run_instances(**spec)
        assert [i["InstanceId"] for i in again["Instances"]] == ids, "ClientToken must make the call idempotent"
        expect_error("IdempotentParameterMismatch", ec2.run_instances, **dict(spec, InstanceType="m5.large"))
        time.sleep(0.4)
        pages = ec2.get_paginator("describe_instances").paginate(
            Filters=[{"Name": "tag:tsum", "Values": ["check"]}], PaginationConfig={"PageSize": 5})
        found = [i for page in pages for r in page["Reservations"] for i in r["Instances"]]
        assert sorted(i["InstanceId"] for i in found) == sorted(ids), found
        assert all(i["State"]["Name"] == "running" and i["PublicIpAddress"] for i in found)
        types = [t for page in ec2.get_paginator("describe_instance_types").paginate() for t in page["InstanceTypes"]]
        assert len(types) == 9, len(types)  # after botocore retried the injected 503
        g4 = next(t for t in types if t["InstanceType"] == "g4dn.xlarge")
        assert g4["GpuInfo"]["Gpus"][0]["Name"] == "T4" and g4["VCpuInfo"]["DefaultVCpus"] == 4
        spot = ec2.describe_spot_price_history(InstanceTypes=["g4dn.xlarge"], ProductDescriptions=["Linux/UNIX"])
        assert {p["AvailabilityZone"] for p in spot["SpotPriceHistory"]} == {"us-east-1a", "us-east-1b"}
        gone = ec2.terminate_instances(InstanceIds=ids[:1])["TerminatingInstances"][0]
        assert gone["PreviousState"]["Name"] == "running" and gone["CurrentState"]["Name"] == "shutting-down"
        time.sleep(0.4)
        state = ec2.describe_instances(InstanceIds=ids[:1])["Reservations"][0]["Instances"][0]["State"]["Name"]
        assert state == "terminated", state
        expect_error("InvalidInstanceID.NotFound", ec2.describe_instances, InstanceIds=["i-0123456789abcdef0"])
        expect_error("InvalidInstanceID.Malformed", ec2.terminate_instances, InstanceIds=["i-xyz"])

        pricing = session.create_client("pricing", region_name="us-east-1", endpoint_url=url, aws_access_key_id=KEY,
                                        aws_secret_access_key=SECRET)
        filters = [{"Type": "TERM_MATCH", "Field": "instanceType", "Value": "m5.large"},
                   {"Type": "TERM_MATCH", "Field": "operatingSystem", "Value": "Linux"},
                   {"Type": "TERM_MATCH", "Field": "tenancy", "Value": "Shared"},
                   {"Type": "TERM_MATCH", "Field": "regionCode", "Value": "us-east-1"}]
        products = [json.loads(p) for page in pricing.get_paginator("get_products").paginate(
            ServiceCode="AmazonEC2", Filters=filters) for p in page["PriceList"]]
        assert len(products) == 1, products
        price = next(iter(next(iter(products[0]["terms"]["OnDemand"].values()))["priceDimensions"].values()))
        assert float(price["pricePerUnit"]["USD"]) == 0.096, price

        stranger = session.create_client("ec2", region_name="us-east-1", endpoint_url=url, aws_access_key_id=KEY,
                                         aws_secret_access_key="wrong", config=config)
        expect_error("SignatureDoesNotMatch", stranger.describe_instances)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    two_regions(sys.argv[1])
    print(f"botocore {botocore.__version__} against tsum-fake-cloud: all checks passed")


def two_regions(fake):
    import urllib.request
    proc = subprocess.Popen([fake, "--listen", "127.0.0.1:0", "--pending-s", "0.3", "--shutting-down-s", "0.3",
                             "--region", "us-east-1,us-west-2"], stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert "listening on " in line, f"unexpected first line: {line!r}"
        url = line.split("listening on ")[1].split()[0]
        session = botocore.session.get_session()
        ec2 = {r: session.create_client("ec2", region_name=r, endpoint_url=url, aws_access_key_id=KEY,
                                        aws_secret_access_key=SECRET) for r in ("us-east-1", "us-west-2")}
        price = {}
        for region, client in ec2.items():
            history = client.describe_spot_price_history(InstanceTypes=["m5.large"])["SpotPriceHistory"]
            assert {p["AvailabilityZone"] for p in history} == {region + "a", region + "b"}, history
            price[region] = min(float(p["SpotPrice"]) for p in history)
        assert price["us-west-2"] > price["us-east-1"], price
        spot = dict(ImageId="ami-0123", InstanceType="m5.large", MinCount=1, MaxCount=1,
                    InstanceMarketOptions={"MarketType": "spot", "SpotOptions": {"SpotInstanceType": "one-time"}})
        west = ec2["us-west-2"].run_instances(**spot)["Instances"][0]
        assert west["Placement"]["AvailabilityZone"] == "us-west-2a", west["Placement"]
        east_ids = [i["InstanceId"] for r in ec2["us-east-1"].describe_instances()["Reservations"] for i in r["Instances"]]
        assert west["InstanceId"] not in east_ids, "an instance of us-west-2 must not show in us-east-1"
        expect_error("InvalidInstanceID.NotFound", ec2["us-east-1"].describe_instances, InstanceIds=[west["InstanceId"]])
        # us-west-2's spot capacity runs out: its spot launches fail as EC2's do, on-demand and us-east-1 go on.
        req = urllib.request.Request(url + "/_fake/capacity/us-west-2?spot=0", method="POST")
        assert urllib.request.urlopen(req).status == 200
        no_retry = Config(retries={"max_attempts": 1})
        west_once = session.create_client("ec2", region_name="us-west-2", endpoint_url=url, aws_access_key_id=KEY,
                                          aws_secret_access_key=SECRET, config=no_retry)
        expect_error("InsufficientInstanceCapacity", west_once.run_instances, **spot)
        ec2["us-west-2"].run_instances(**dict(spot, InstanceMarketOptions={}))
        ec2["us-east-1"].run_instances(**spot)
        elsewhere = session.create_client("ec2", region_name="eu-west-1", endpoint_url=url, aws_access_key_id=KEY,
                                          aws_secret_access_key=SECRET, config=no_retry)
        expect_error("AuthFailure", elsewhere.describe_instances)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    main()
