// Pure parts of the Azure adapter: the VM body, VM and operation parsing, retail price pages and their
// filtering, resource SKU pages, origins of URLs Azure hands back, names.
#include <doctest/doctest.h>

#include "providers/azure/azure_api.h"
#include "providers/azure/azure_catalog.h"
#include "providers/azure/azure_json.h"
#include "providers/azure/ssh_key.h"
#include "providers/http/codec.h"

using namespace tsum;
using namespace tsum::providers;
using namespace tsum::providers::azure;

TEST_CASE("the VM body: cloud-init as base64 customData, SSH key only, deleteOption Delete on disk, NIC and IP") {
  VmSpec s{.name = "tsum-7-abcd1234", .location = "westeurope", .size = "Standard_D2s_v5", .ssh_public_key = "ssh-rsa AAAA x",
           .user_data = "#cloud-config\n", .subnet_id = "/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/v/subnets/default",
           .tags = {{"tsum", "t"}, {"tsum-run", "7"}}};
  auto j = vm_body(s);
  const auto& p = j["properties"];
  CHECK(j["location"] == "westeurope");
  CHECK(j["tags"]["tsum-run"] == "7");
  CHECK(p["hardwareProfile"]["vmSize"] == "Standard_D2s_v5");
  CHECK(http::base64_decode(p["osProfile"]["customData"].get<std::string>()).value() == "#cloud-config\n");
  CHECK(p["osProfile"]["linuxConfiguration"]["disablePasswordAuthentication"] == true);
  CHECK_FALSE(p["osProfile"].contains("adminPassword"));
  CHECK(p["storageProfile"]["osDisk"]["deleteOption"] == "Delete");
  CHECK(p["storageProfile"]["imageReference"]["offer"] == "0001-com-ubuntu-server-jammy");
  const auto& nic = p["networkProfile"]["networkInterfaceConfigurations"][0];
  CHECK(p["networkProfile"]["networkApiVersion"] == "2020-11-01");
  CHECK(nic["properties"]["deleteOption"] == "Delete");
  const auto& ip = nic["properties"]["ipConfigurations"][0]["properties"];
  CHECK(ip["subnet"]["id"] == s.subnet_id);
  CHECK(ip["publicIPAddressConfiguration"]["properties"]["deleteOption"] == "Delete");
  CHECK(ip["publicIPAddressConfiguration"]["sku"]["name"] == "Standard");
}

TEST_CASE("a VM's provisioning and power state come from its instance view") {
  auto vm = parse_vm(nlohmann::json::parse(R"({"name":"v","properties":{"provisioningState":"Succeeded",
      "hardwareProfile":{"vmSize":"Standard_B2s"},"instanceView":{"statuses":[{"code":"ProvisioningState/succeeded"},
      {"code":"PowerState/running","displayStatus":"VM running"}]}},"tags":{"tsum":"x","n":1}})"));
  REQUIRE(vm.ok());
  CHECK(vm->provisioning_state == "Succeeded");
  CHECK(vm->power_state == "running");
  CHECK(vm->vm_size == "Standard_B2s");
  CHECK(vm->tags == Tags{{"tsum", "x"}});  // a non-string tag is left out
  auto creating = parse_vm(nlohmann::json::parse(R"({"name":"v","properties":{"provisioningState":"Creating"}})"));
  REQUIRE(creating.ok());
  CHECK(creating->power_state.empty());
  CHECK(parse_vm(nlohmann::json::parse(R"({"name":"v"})")).code() == Code::internal);
  CHECK(parse_vm(nlohmann::json::array()).code() == Code::internal);
  // A statusOnly listing's VM: the provisioning state only as a status, a failed one with its reason after it.
  auto listed = parse_vm(nlohmann::json::parse(R"({"name":"v","properties":{"instanceView":{"statuses":[
      {"code":"ProvisioningState/failed/AllocationFailed"},{"code":"PowerState/stopped"}]}}})"));
  REQUIRE(listed.ok());
  CHECK(listed->provisioning_state == "Failed");
  CHECK(listed->power_state == "stopped");
  auto starting = parse_vm(nlohmann::json::parse(R"({"name":"v","properties":{"instanceView":{"statuses":[
      {"code":"ProvisioningState/creating"}]}}})"));
  REQUIRE(starting.ok());
  CHECK(starting->provisioning_state == "Creating");
  CHECK(parse_vm(nlohmann::json::parse(R"({"name":"v","properties":{"instanceView":{"statuses":[
      {"code":"ProvisioningState/"}]}}})")).code() == Code::internal);
  CHECK(parse_vm(nlohmann::json::parse(R"({"name":"v","properties":{"instanceView":{"statuses":[
      {"code":"ProvisioningState//x"}]}}})")).code() == Code::internal);
  CHECK(group_of_id("/subscriptions/s/resourceGroups/TSUM-7-ab/providers/Microsoft.Compute/virtualMachines/x") ==
        "tsum-7-ab");
  CHECK(group_of_id("/subscriptions/s/providers/Microsoft.Compute/skus").empty());
  auto in_group = parse_vm(nlohmann::json::parse(R"({"name":"v","id":"/subscriptions/s/resourceGroups/G1/x",
      "properties":{"provisioningState":"Succeeded"}})"));
  REQUIRE(in_group.ok());
  CHECK(in_group->group == "g1");
  const auto ips = public_ips_by_group(nlohmann::json::parse(R"([
      {"id":"/subscriptions/s/resourceGroups/A/providers/Microsoft.Network/publicIPAddresses/a0","properties":{}},
      {"id":"/subscriptions/s/resourceGroups/A/providers/Microsoft.Network/publicIPAddresses/a1",
       "properties":{"ipAddress":"20.0.0.1"}},
      {"id":"/subscriptions/s/resourceGroups/b/providers/Microsoft.Network/publicIPAddresses/b0",
       "properties":{"ipAddress":"20.0.0.2"}},
      {"id":"/subscriptions/s/resourceGroups/b/providers/Microsoft.Network/publicIPAddresses/b1",
       "properties":{"ipAddress":"20.0.0.3"}}, "not an object"])").get<std::vector<nlohmann::json>>());
  CHECK(ips == std::map<std::string, std::string>{{"a", "20.0.0.1"}, {"b", "20.0.0.2"}});
  auto page = parse_page(nlohmann::json::parse(R"({"value":[1,2],"nextLink":"https://x/next"})"));
  CHECK(page.value.size() == 2);
  CHECK(page.next_link == "https://x/next");
  CHECK(parse_page(nlohmann::json::parse(R"({"value":"x"})")).value.empty());

  auto op = parse_async_status(nlohmann::json::parse(R"({"status":"Failed","error":{"code":"AllocationFailed","message":"no"}})"));
  REQUIRE(op.ok());
  CHECK(op->done());
  CHECK(op->error_code == "AllocationFailed");
  CHECK_FALSE(parse_async_status(nlohmann::json::parse(R"({"status":"InProgress"})"))->done());
  CHECK(parse_async_status(nlohmann::json::parse(R"({"name":"x"})")).code() == Code::internal);
  CHECK(first_public_ip(nlohmann::json::parse(R"({"value":[{"properties":{}},{"properties":{"ipAddress":"20.1.2.3"}}]})")) == "20.1.2.3");
  CHECK(first_public_ip(nlohmann::json::parse(R"({"value":"x"})")).empty());
}

TEST_CASE("retail prices: Linux on-demand per hour only; the cheapest per size; bad prices refused") {
  auto page = parse_retail_page(nlohmann::json::parse(R"({"Items":[
    {"armSkuName":"Standard_D2s_v5","armRegionName":"westeurope","productName":"Virtual Machines Dsv5 Series","skuName":"D2s v5","meterName":"D2s v5","serviceName":"Virtual Machines","type":"Consumption","unitOfMeasure":"1 Hour","currencyCode":"USD","retailPrice":0.115},
    {"armSkuName":"Standard_D2s_v5","armRegionName":"westeurope","productName":"Virtual Machines Dsv5 Series Windows","skuName":"D2s v5","meterName":"D2s v5","serviceName":"Virtual Machines","type":"Consumption","unitOfMeasure":"1 Hour","retailPrice":0.2},
    {"armSkuName":"Standard_D2s_v5","armRegionName":"westeurope","productName":"Virtual Machines Dsv5 Series","skuName":"D2s v5 Spot","meterName":"D2s v5 Spot","serviceName":"Virtual Machines","type":"Consumption","unitOfMeasure":"1 Hour","retailPrice":0.02},
    {"armSkuName":"Standard_D2s_v5","armRegionName":"westeurope","productName":"Virtual Machines Dsv5 Series","skuName":"D2s v5 Low Priority","meterName":"D2s v5 Low Priority","serviceName":"Virtual Machines","type":"Consumption","unitOfMeasure":"1 Hour","retailPrice":0.03},
    {"armSkuName":"Standard_D2s_v5","armRegionName":"westeurope","productName":"Virtual Machines Dsv5 Series","skuName":"D2s v5","meterName":"D2s v5","serviceName":"Virtual Machines","type":"Reservation","unitOfMeasure":"1 Year","retailPrice":500},
    {"armSkuName":"Standard_D2s_v5","armRegionName":"eastus","productName":"Virtual Machines Dsv5 Series","skuName":"D2s v5","meterName":"D2s v5","serviceName":"Virtual Machines","type":"Consumption","unitOfMeasure":"1 Hour","retailPrice":0.096},
    {"armSkuName":"Standard_B2s","armRegionName":"westeurope","productName":"Virtual Machines BS Series","skuName":"B2s","meterName":"B2s","serviceName":"Virtual Machines","type":"Consumption","unitOfMeasure":"1 Hour","retailPrice":0.0456},
    {"armSkuName":"Standard_B2s","armRegionName":"westeurope","productName":"Virtual Machines BS Series","skuName":"B2s","meterName":"B2s","serviceName":"Virtual Machines","type":"Consumption","unitOfMeasure":"1 Hour","retailPrice":0.05}
  ],"NextPageLink":"https://prices.azure.com:443/api/retail/prices?$skip=100","Count":8})"));
  REQUIRE(page.ok());
  CHECK(page->items.size() == 8);
  CHECK(page->next_page_link == "https://prices.azure.com:443/api/retail/prices?$skip=100");
  auto prices = on_demand_prices(page->items, "westeurope");
  REQUIRE(prices.size() == 2);
  CHECK(prices.at("Standard_D2s_v5").retail_price == 0.115);
  CHECK(prices.at("Standard_B2s").retail_price == 0.0456);
  CHECK(parse_retail_page(nlohmann::json::parse(R"({"Items":[{"armSkuName":"x","retailPrice":"0.1"}]})")).code() == Code::internal);
  CHECK(parse_retail_page(nlohmann::json::parse(R"({"Items":[{"armSkuName":"x","retailPrice":-1}]})")).code() == Code::internal);
  CHECK(parse_retail_page(nlohmann::json::parse(R"({"items":[]})")).code() == Code::internal);
  auto last = parse_retail_page(nlohmann::json::parse(R"({"Items":[],"NextPageLink":null})"));
  REQUIRE(last.ok());
  CHECK(last->next_page_link.empty());
}

TEST_CASE("resource SKUs: sizes offered in the location, their capabilities, restrictions") {
  auto page = parse_sku_page(nlohmann::json::parse(R"({"value":[
    {"resourceType":"virtualMachines","name":"Standard_NC4as_T4_v3","locations":["WestEurope"],
     "capabilities":[{"name":"vCPUs","value":"4"},{"name":"MemoryGB","value":"28"},{"name":"GPUs","value":"1"}],"restrictions":[]},
    {"resourceType":"virtualMachines","name":"Standard_E4s_v5","locations":["westeurope"],
     "capabilities":[{"name":"vCPUs","value":"4"},{"name":"MemoryGB","value":"32"}],
     "restrictions":[{"type":"Location","values":["westeurope"],"reasonCode":"NotAvailableForSubscription"}]},
    {"resourceType":"virtualMachines","name":"Standard_B1ls","locations":["eastus"],"capabilities":[{"name":"vCPUs","value":"1"}]},
    {"resourceType":"disks","name":"Premium_LRS","locations":["westeurope"]},
    {"resourceType":"virtualMachines","name":"Standard_B1s","locations":["westeurope"],"capabilities":[{"name":"MemoryGB","value":"0.5x"}]}
  ],"nextLink":"https://management.azure.com/next"})"), "westeurope");
  REQUIRE(page.ok());
  REQUIRE(page->items.size() == 3);
  CHECK(page->items[0].name == "Standard_NC4as_T4_v3");
  CHECK(page->items[0].gpus == 1);
  CHECK(page->items[0].memory_gib == 28);
  CHECK(page->items[1].restricted);
  CHECK(page->items[2].vcpus == 0);  // no vCPUs: no offer
  CHECK(page->next_link == "https://management.azure.com/next");
  std::map<std::string, RetailPrice> prices{{"Standard_NC4as_T4_v3", {.product_name = "NC", .retail_price = 0.5}},
                                            {"Standard_E4s_v5", {.retail_price = 0.3}}, {"Standard_B1s", {.retail_price = 0.01}}};
  auto offers = price_sizes(page->items, prices, "westeurope");
  REQUIRE(offers.size() == 1);
  CHECK(offers[0].gpu_type == "nvidia-t4");
  CHECK(offers[0].hourly_price == 0.5);
  CHECK(gpu_type_of("Standard_NC24ads_A100_v4") == "nvidia-a100");
  CHECK(gpu_type_of("Standard_D4s_v3").empty());
}

TEST_CASE("URLs Azure hands back are followed only on the endpoint's origin") {
  CHECK(same_origin("https://prices.azure.com:443/api/retail/prices?$skip=100", "https://prices.azure.com/api/retail/prices"));
  CHECK(same_origin("https://Management.Azure.com/subscriptions/x", "https://management.azure.com"));
  CHECK(same_origin("https://127.0.0.1:4443/a", "https://127.0.0.1:4443"));
  CHECK_FALSE(same_origin("https://127.0.0.1:4444/a", "https://127.0.0.1:4443"));
  CHECK_FALSE(same_origin("http://management.azure.com/x", "https://management.azure.com"));
  CHECK_FALSE(same_origin("https://management.azure.com.evil.example/x", "https://management.azure.com"));
  CHECK_FALSE(same_origin("https://evil.example/?https://management.azure.com", "https://management.azure.com"));
  CHECK_FALSE(same_origin("not a url", "https://management.azure.com"));
}

TEST_CASE("names and tag text") {
  CHECK(valid_group_name("tsum-7-abcd1234"));
  CHECK(valid_group_name("a(b)_c.d"));
  CHECK_FALSE(valid_group_name("ends."));
  CHECK_FALSE(valid_group_name("has space"));
  CHECK_FALSE(valid_group_name(std::string(91, 'a')));
  CHECK(valid_location("westeurope"));
  CHECK_FALSE(valid_location("West Europe"));
  CHECK(valid_tag_text("run-1.a_b"));
  CHECK_FALSE(valid_tag_text("it's"));
  CHECK_FALSE(valid_tag_text(""));
  CHECK(retail_url("https://p/api", "eastus").find("armRegionName%20eq%20%27eastus%27") != std::string::npos);
  CHECK(retail_url("https://p/api", "eastus", 200).ends_with("&$skip=200"));
}

TEST_CASE("the throwaway SSH key is an OpenSSH ssh-rsa line") {
  auto key = throwaway_ssh_public_key();
  REQUIRE(key.ok());
  CHECK(key->starts_with("ssh-rsa AAAAB3NzaC1yc2EAAAAD"));  // "\0\0\0\7ssh-rsa\0\0\0\3" + e = 65537
  CHECK(key->ends_with(" tsum-throwaway"));
  CHECK(*key != throwaway_ssh_public_key().value());
}
