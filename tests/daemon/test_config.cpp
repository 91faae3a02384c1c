// The config file: every field checked by path, defaults, permissions of the file and of its key files.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <fstream>
#include <map>

#include "daemon/config/config.h"
#include "support/temp_dir.h"

using namespace tsum;
using namespace tsum::daemon;
using tsum::testing::TempDir;

namespace {

const char* kTwoHosts = R"({
  "providers": {"ssh": {
    "connect_timeout_s": 4,
    "hosts": [
      {"name": "box1", "address": "10.0.0.2", "user": "root", "key_file": "id_box", "cores": 4,
       "hourly_price": 0.12},
      {"name": "gpu-a", "address": "gpu.lan", "port": 2222, "user": "ml", "key_env": "GPU_KEY", "cores": 16,
       "gpus": 2, "gpu_type": "rtx4090", "memory_gib": 64, "hourly_price": 0.9, "billing": "per_hour",
       "power_on": "wakeonlan aa:bb", "power_off": "true", "work_dir": "/scratch/tsum"}
    ]}}})";

std::string write_config(const TempDir& d, const std::string& name, const std::string& text, mode_t mode) {
  std::string p = d.file(name);
  std::ofstream(p) << text;
  chmod(p.c_str(), mode);
  return p;
}

std::string config_error(const std::string& text) {
  auto c = parse_config(text, "/etc/tsum");
  return c ? std::string("(ok)") : c.error().detail;
}

std::string one_host(const std::string& extra) {
  return R"({"providers":{"ssh":{"hosts":[{"name":"h","address":"a","user":"u","key_file":"/k","cores":1,"hourly_price":1)" +
         extra + "}]}}}";
}

}  // namespace

TEST_CASE("a config with two ssh hosts: values, defaults and relative key paths") {
  auto c = parse_config(kTwoHosts, "/etc/tsum");
  REQUIRE(c);
  REQUIRE(c->ssh);
  const auto& o = *c->ssh;
  CHECK(o.connect_timeout == std::chrono::seconds(4));
  CHECK(o.alive_interval == std::chrono::seconds(5));
  REQUIRE(o.hosts.size() == 2);
  CHECK(o.hosts[0].port == 22);
  CHECK(o.hosts[0].key_file == "/etc/tsum/id_box");
  CHECK(o.hosts[0].billing == "step:1");
  CHECK(o.hosts[0].work_dir == "/var/tmp/tsum");
  CHECK(o.hosts[1].port == 2222);
  CHECK(o.hosts[1].gpus == 2);
  CHECK(o.hosts[1].billing == "per_hour");
  CHECK(o.hosts[1].key_file.empty());
  REQUIRE(c->ssh_env_keys.size() == 1);
  CHECK(c->ssh_env_keys[0].host == "gpu-a");
  CHECK(c->ssh_env_keys[0].variable == "GPU_KEY");
  CHECK_FALSE(parse_config("{}", "/")->ssh);
}

TEST_CASE("unknown fields, wrong types and bad values are errors naming the field") {
  CHECK(config_error(R"({"provider": {}})") == "config.provider: unknown field");
  CHECK(config_error(R"({"providers": {"gcp": {}}})") == "providers.gcp: unknown provider (known: ssh, slurm, kubernetes, byo, aws, gce, azure, hetzner, yandex)");
  CHECK(config_error(R"({"providers": {"ssh": {"hosts": []}}})") == "providers.ssh.hosts: must be a non-empty array of hosts");
  CHECK(config_error(R"({"providers": {"ssh": {"hosts": [{}], "x": 1}}})") == "providers.ssh.hosts[0].name: is required");
  CHECK(config_error(one_host(R"(,"prot":22)")) == "providers.ssh.hosts[0].prot: unknown field");
  CHECK(config_error(one_host(R"(,"port":0)")) == "providers.ssh.hosts[0].port: must be an integer from 1 to 65535");
  CHECK(config_error(one_host(R"(,"port":"22")")) == "providers.ssh.hosts[0].port: must be an integer from 1 to 65535");
  CHECK(config_error(one_host(R"(,"hourly_price":-1)")) == "providers.ssh.hosts[0].hourly_price: must be a number >= 0");
  CHECK(config_error(one_host(R"(,"billing":"per_fortnight")")).starts_with("providers.ssh.hosts[0].billing: "));
  CHECK(config_error(one_host(R"(,"work_dir":"relative")")).starts_with("providers.ssh.hosts[0].work_dir: "));
  CHECK(config_error(one_host(R"(,"key_env":"K")")) == "providers.ssh.hosts[0]: needs exactly one of key_file and key_env");
  CHECK(config_error(one_host(R"(,"remote_data":"data")")).starts_with("providers.ssh.hosts[0].remote_data: "));
  std::string bad_address = R"({"providers":{"ssh":{"hosts":[{"name":"h","address":"-oProxyCommand=x","user":"u","key_file":"/k","cores":1,"hourly_price":1}]}}})";
  CHECK(config_error(bad_address) == "providers.ssh.hosts[0].address: must be a host name or an IP address");
  std::string twice = R"({"providers":{"ssh":{"hosts":[)" + std::string(R"({"name":"h","address":"a","user":"u","key_file":"/k","cores":1,"hourly_price":1})") +
                      "," + R"({"name":"h","address":"b","user":"u","key_file":"/k","cores":1,"hourly_price":1})" + "]}}}";
  CHECK(config_error(twice) == "providers.ssh.hosts[1].name: 'h' is used twice");
  CHECK(config_error(R"({"providers":{"ssh":{"hosts":[{"name":"h"}]}}})") == "providers.ssh.hosts[0].address: is required");
  std::string zero = one_host("");
  zero.insert(zero.size() - 3, R"(,"connect_timeout_s":0)");
  CHECK(config_error(zero) == "providers.ssh.connect_timeout_s: must be an integer from 1 to 86400");
  CHECK(config_error("not json") == "config: not valid JSON");
}

TEST_CASE("load_config refuses loose permissions on the config and on key files") {
  TempDir d;
  std::string key = write_config(d, "id_box", "KEY", 0600);
  std::string plain = R"({"providers":{"ssh":{"hosts":[{"name":"h","address":"a","user":"u","key_file":"id_box","cores":1,"hourly_price":1}]}}})";
  CHECK(load_config(write_config(d, "ok.json", plain, 0644)));  // no secrets: may be world-readable
  auto writable = load_config(write_config(d, "w.json", plain, 0664));
  REQUIRE_FALSE(writable);
  CHECK(writable.error().detail.find("others may change the commands it runs") != std::string::npos);

  std::string with_power = R"({"providers":{"ssh":{"hosts":[{"name":"h","address":"a","user":"u","key_file":"id_box","cores":1,"hourly_price":1,"power_on":"ipmitool -P secret power on"}]}}})";
  auto readable = load_config(write_config(d, "p.json", with_power, 0644));
  REQUIRE_FALSE(readable);
  CHECK(readable.error().detail.find("has mode 0644") != std::string::npos);
  CHECK(readable.error().detail.find("chmod 600") != std::string::npos);
  CHECK(readable.error().detail.find("secret") == std::string::npos);  // the command is not repeated
  CHECK(load_config(write_config(d, "p2.json", with_power, 0600)));

  chmod(key.c_str(), 0644);
  auto loose_key = load_config(d.file("ok.json"));
  REQUIRE_FALSE(loose_key);
  CHECK(loose_key.error().detail.find("private key of ssh host h is readable by others") != std::string::npos);
  auto missing = load_config(d.file("nope.json"));
  REQUIRE_FALSE(missing);
  CHECK(missing.error().detail.find("nope.json") != std::string::npos);
}

TEST_CASE("a key from the environment is written to the state dir with mode 0600") {
  TempDir d;
  auto c = parse_config(kTwoHosts, "/etc/tsum");
  REQUIRE(c);
  c->ssh->state_dir = d.path().string();
  unsetenv("GPU_KEY");
  auto unset = materialize_env_keys(*c);
  REQUIRE_FALSE(unset);
  CHECK(unset.error().detail == "ssh host gpu-a: environment variable GPU_KEY (its key_env) is not set");
  setenv("GPU_KEY", "-----BEGIN KEY-----\nabc\n-----END KEY-----", 1);
  REQUIRE(materialize_env_keys(*c));
  std::string path = c->ssh->hosts[1].key_file;
  CHECK(path == d.file("ssh/keys/gpu-a"));
  struct stat st{};
  REQUIRE(stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  std::ifstream in(path);
  std::string text{std::istreambuf_iterator<char>(in), {}};
  CHECK(text == "-----BEGIN KEY-----\nabc\n-----END KEY-----\n");
  unsetenv("GPU_KEY");
}

// ---- the cloud sections ----

namespace {

const char* kFiveClouds = R"({"providers": {
  "aws": {"region": "eu-west-1", "image_id": "ami-1", "access_key_id": "AKID1", "secret_access_key_env": "T_AWS_SECRET",
          "security_group_ids": ["sg-1", "sg-2"], "ec2_endpoint": "https://127.0.0.1:1", "ca_file": "ca.pem",
          "cloud_init_dir": "/opt/t", "max_lifetime_min": 90, "attempt_timeout_s": 7, "catalog_ttl_s": 60},
  "gce": {"service_account_file": "sa.json", "zone": "europe-west4-a", "max_run_duration_s": 3600, "operation_poll_ms": 250},
  "azure": {"tenant_id": "t", "client_id": "c", "subscription_id": "s", "client_secret_file": "/etc/az", "location": "eastus"},
  "hetzner": {"token_env": "T_HCLOUD", "location": "hel1", "ssh_keys": ["me"]},
  "yandex": {"key_file": "yc.json", "folder_id": "f", "subnet_id": "sn", "image_id": "im", "currency": "USD"}}})";

}  // namespace

TEST_CASE("the five cloud sections: values, defaults, secrets named but not read by parse_config") {
  auto c = parse_config(kFiveClouds, "/etc/tsum");
  REQUIRE(c);
  const auto& cl = c->clouds;
  CHECK(cl.names() == std::vector<std::string>{"aws", "gce", "azure", "hetzner", "yandex"});
  const auto& aws = cl.aws->options;
  CHECK(aws.region == "eu-west-1");
  CHECK(aws.credentials.access_key_id == "AKID1");
  CHECK(aws.credentials.secret_access_key.empty());
  CHECK(cl.aws->secret_access_key.env == "T_AWS_SECRET");
  CHECK_FALSE(cl.aws->session_token.named());
  CHECK(aws.security_group_ids == std::vector<std::string>{"sg-1", "sg-2"});
  CHECK(aws.http.ca_file == "/etc/tsum/ca.pem");
  CHECK(aws.cloud_init.dir == "/opt/t");
  CHECK(aws.cloud_init.max_lifetime == std::chrono::minutes(90));
  CHECK(aws.attempt_timeout == std::chrono::seconds(7));
  CHECK(aws.catalog_ttl == std::chrono::seconds(60));
  CHECK(aws.pricing_endpoint.empty());  // the provider's own
  CHECK(cl.gce->service_account.file == "/etc/tsum/sa.json");
  CHECK(cl.gce->options.zone == "europe-west4-a");
  CHECK(cl.gce->options.max_run_duration == std::chrono::seconds(3600));
  CHECK(cl.gce->options.operation_poll == std::chrono::milliseconds(250));
  CHECK(cl.gce->options.cloud_init.dir == "/opt/tsum");
  CHECK(cl.azure->client_secret.file == "/etc/az");
  CHECK(cl.azure->options.credentials.subscription_id == "s");
  CHECK(cl.hetzner->options.location == "hel1");
  CHECK(cl.hetzner->options.ssh_keys == std::vector<std::string>{"me"});
  CHECK(cl.yandex->key.file == "/etc/tsum/yc.json");
  CHECK(cl.yandex->options.currency == "USD");
  CHECK(cl.yandex->options.zone == "ru-central1-a");
}

TEST_CASE("cloud sections: unknown fields, missing and doubled secrets, bad URLs are errors naming the field") {
  CHECK(config_error(R"({"providers":{"hetzner":{"token_env":"X","locaton":"hel1"}}})") == "providers.hetzner.locaton: unknown field");
  CHECK(config_error(R"({"providers":{"hetzner":{"context":"work","token_env":"T"}}})") ==
        "providers.hetzner.context: give context (the hcloud CLI's login) or token_env/token_file, not both");
  CHECK(config_error(R"({"providers":{"hetzner":{"token_env":"X","token_file":"/t"}}})") ==
        "providers.hetzner.token: give token_env or token_file, not both");
  CHECK(config_error(R"({"providers":{"hetzner":{"token_env":"X","endpoint":"ftp://x"}}})") ==
        "providers.hetzner.endpoint: must be an http:// or https:// URL");
  CHECK(config_error(R"({"providers":{"aws":{}}})") == "(ok)");  // the user's login, the image found
  CHECK(config_error(R"({"providers":{"aws":{"access_key_id":"A"}}})") ==
        "providers.aws.secret_access_key: needs secret_access_key_env or secret_access_key_file");
  CHECK(config_error(R"({"providers":{"aws":{"profile":"p","access_key_id":"A","secret_access_key_env":"S"}}})") ==
        "providers.aws.profile: give profile (a login) or access_key_id (keys), not both");
  CHECK(config_error(R"({"providers":{"aws":{"image_id":"a","image_parameter":"b"}}})") ==
        "providers.aws.image_parameter: give image_id (one AMI) or image_parameter (found per region), not both");
  CHECK(config_error(R"({"providers":{"aws":{"image_id":"i","access_key_id":"A","secret_access_key_env":"S","security_group_ids":"sg"}}})") ==
        "providers.aws.security_group_ids: must be an array of strings");
  CHECK(config_error(R"({"providers":{"gce":{"service_account_env":"G","cloud_init_dir":"opt"}}})") ==
        "providers.gce.cloud_init_dir: must be an absolute path of letters, digits, / _ . -");
  CHECK(config_error(R"({"providers":{"azure":{}}})") == "(ok)");  // the user's login (azure_login.h)
  CHECK(config_error(R"({"providers":{"azure":{"subscription_id":"s"}}})") == "(ok)");
  CHECK(config_error(R"({"providers":{"azure":{"client_id":"c","client_secret_env":"S"}}})") ==
        "providers.azure.tenant_id: is required");
  CHECK(config_error(R"({"providers":{"yandex":{"key_env":"K","folder_id":"f","subnet_id":"s","image_id":"i","operation_poll_ms":1}}})") ==
        "providers.yandex.operation_poll_ms: must be an integer from 10 to 60000");
  CHECK(config_error(R"({"providers":{"aws":[]}})") == "providers.aws: must be an object");
}

TEST_CASE("load_config reads cloud secrets from env and files, refuses loose secret files, never repeats a secret") {
  TempDir d;
  const std::string secret = "hcloud-Zq9-very-secret";
  write_config(d, "hz", secret + "\n", 0600);
  auto from_file = load_config(write_config(d, "f.json", R"({"providers":{"hetzner":{"token_file":"hz"}}})", 0644));
  REQUIRE(from_file);
  CHECK(from_file->clouds.hetzner->options.token == secret);  // the final newline dropped

  chmod(d.file("hz").c_str(), 0640);
  auto loose = load_config(d.file("f.json"));
  REQUIRE_FALSE(loose);
  CHECK(loose.error().detail.find("providers.hetzner.token") != std::string::npos);
  CHECK(loose.error().detail.find("chmod 600") != std::string::npos);
  CHECK(loose.error().detail.find(secret) == std::string::npos);

  unsetenv("T_AWS_SECRET");
  std::string aws = R"({"providers":{"aws":{"image_id":"i","access_key_id":"A","secret_access_key_env":"T_AWS_SECRET"}}})";
  auto unset = load_config(write_config(d, "a.json", aws, 0600));
  REQUIRE_FALSE(unset);
  CHECK(unset.error().detail.ends_with("providers.aws.secret_access_key: environment variable T_AWS_SECRET is not set"));
  setenv("T_AWS_SECRET", "aws-secret-value", 1);
  auto set = load_config(d.file("a.json"));
  REQUIRE(set);
  CHECK(set->clouds.aws->options.credentials.secret_access_key == "aws-secret-value");

  write_config(d, "sa.json", R"({"type":"service_account","client_email":"x@y"})", 0600);
  auto bad_key = load_config(write_config(d, "g.json", R"({"providers":{"gce":{"service_account_file":"sa.json"}}})", 0600));
  REQUIRE_FALSE(bad_key);
  CHECK(bad_key.error().detail.find("providers.gce.service_account: ") != std::string::npos);
}

TEST_CASE("make_cloud_providers makes one provider per configured cloud, named as configured") {
  TempDir d;
  setenv("T_HCLOUD", "tok", 1);
  auto c = load_config(write_config(d, "c.json", R"({"providers":{"hetzner":{"token_env":"T_HCLOUD"},
      "aws":{"image_id":"i","access_key_id":"A","secret_access_key_env":"T_HCLOUD"}}})", 0600));
  REQUIRE(c);
  auto made = make_cloud_providers(c->clouds);
  REQUIRE(made);
  std::vector<std::string> names;
  for (const auto& p : *made) names.emplace_back(p->name());
  CHECK(names == std::vector<std::string>{"aws", "hetzner"});
}

TEST_CASE("startup_deadline_s: per provider section, with each provider's default") {
  auto defaults = parse_config(kFiveClouds, "/etc/tsum");
  REQUIRE(defaults);
  using std::chrono::seconds;
  CHECK(defaults->startup_deadlines() == std::map<std::string, seconds>{{"aws", seconds(600)}, {"gce", seconds(600)},
                                                                          {"azure", seconds(900)}, {"hetzner", seconds(600)},
                                                                          {"yandex", seconds(600)}});
  CHECK(default_startup_deadline("local") == seconds(120));
  CHECK(default_startup_deadline("ssh") == seconds(900));
  CHECK(default_startup_deadline("nobody-knows") == seconds(600));
  CHECK(startup_deadline_field("hetzner") == "providers.hetzner.startup_deadline_s");
  CHECK(startup_deadline_field("local").empty());

  auto set = parse_config(R"({"providers":{"hetzner":{"token_env":"X","startup_deadline_s":45},
                                           "aws":{"image_id":"i","access_key_id":"A","secret_access_key_env":"S"},
                                           "ssh":{"startup_deadline_s":30,"hosts":[{"name":"h","address":"a","user":"u",
                                                  "key_file":"/k","cores":1,"hourly_price":1}]}}})",
                          "/etc/tsum");
  REQUIRE_MESSAGE(set, set.error().detail);
  CHECK(set->clouds.hetzner->startup_deadline == seconds(45));
  CHECK(set->startup_deadlines() ==
        std::map<std::string, seconds>{{"aws", seconds(600)}, {"hetzner", seconds(45)}, {"ssh", seconds(30)}});

  CHECK(config_error(R"({"providers":{"hetzner":{"token_env":"X","startup_deadline_s":0}}})") ==
        "providers.hetzner.startup_deadline_s: must be an integer from 1 to 86400");
  CHECK(config_error(R"({"providers":{"azure":{"tenant_id":"t","client_id":"c","subscription_id":"s","client_secret_env":"S",
                                          "startup_deadline_s":"10"}}})") ==
        "providers.azure.startup_deadline_s: must be an integer from 1 to 86400");
  CHECK(config_error(R"({"providers":{"ssh":{"startup_deadline_s":-1,"hosts":[{"name":"h","address":"a",
                 "user":"u","key_file":"/k","cores":1,"hourly_price":1}]}}})") ==
        "providers.ssh.startup_deadline_s: must be an integer from 1 to 86400");
}

TEST_CASE("providers.slurm: the login node, partition prices and rules, defaults, and errors naming the field") {
  auto c = parse_config(R"({"providers": {"slurm": {
      "login": {"name": "hpc", "address": "login.hpc", "user": "ml", "key_file": "keys/hpc"},
      "partitions": {"gpu": {"hourly_price": 1.2, "billing_rule": "step:60,min:900", "currency": "EUR"},
                     "cpu": {"hourly_price": 0.05}},
      "sbatch_args": ["--account=ml"], "cancel_timeout_s": 30, "startup_deadline_s": 7200}}})",
                        "/etc/tsum");
  REQUIRE_MESSAGE(c, c.error().detail);
  REQUIRE(c->slurm);
  const auto& o = *c->slurm;
  CHECK(o.login.address == "login.hpc");
  CHECK(o.login.port == 22);
  CHECK(o.login.key_file == "/etc/tsum/keys/hpc");
  CHECK(o.work_dir == "/var/tmp/tsum");
  REQUIRE(o.partitions.size() == 2);
  CHECK(o.partitions.at("gpu").hourly_price == 1.2);
  CHECK(o.partitions.at("gpu").billing_rule == "step:60,min:900");
  CHECK(o.partitions.at("gpu").currency == "EUR");
  CHECK(o.partitions.at("cpu").billing_rule == "per_second_60s_min");
  CHECK(o.partitions.at("cpu").currency == "USD");
  CHECK(o.sbatch_args == std::vector<std::string>{"--account=ml"});
  CHECK(o.cancel_timeout == std::chrono::seconds(30));
  CHECK(c->startup_deadlines().at("slurm") == std::chrono::seconds(7200));
  CHECK(parse_config(R"({"providers": {"slurm": {"login": {"address": "a", "user": "u", "key_file": "/k"}}}})", "/")
            ->startup_deadlines()
            .at("slurm") == std::chrono::seconds(3600));

  const std::string login = R"("login": {"address": "a", "user": "u", "key_file": "/k"})";
  auto slurm = [&](const std::string& rest) { return R"({"providers": {"slurm": {)" + login + rest + "}}}"; };
  CHECK(config_error(R"({"providers": {"slurm": {}}})") == "providers.slurm.login: is required (or slurmrestd)");
  CHECK(config_error(R"({"providers": {"slurm": {"login": {"address": "a", "user": "u"}}}})") ==
        "providers.slurm.login.key_file: is required");
  CHECK(config_error(slurm(R"(, "partitions": {"gpu": {"billing_rule": "per_hour"}})")) ==
        "providers.slurm.partitions.gpu.hourly_price: is required");
  CHECK(config_error(slurm(R"(, "partitions": {"gpu": {"hourly_price": 1, "billing_rule": "per_fortnight"}})"))
            .starts_with("providers.slurm.partitions.gpu.billing_rule: "));
  CHECK(config_error(slurm(R"(, "sbatch_args": ["-A ml"])")) ==
        "providers.slurm.sbatch_args: '-A ml' is not a long option (--name=value)");
  CHECK(config_error(slurm(R"(, "slurmrestd": {"url": "http://ctl:6820", "user": "ml"})")) ==
        "providers.slurm.slurmrestd: needs exactly one of token_env and token_file");
  CHECK(config_error(slurm(R"(, "slurmrestd": {"url": "ctl:6820", "user": "ml", "token_env": "T"})")) ==
        "providers.slurm.slurmrestd.url: must be an http:// or https:// URL");
  auto rest = parse_config(slurm(R"(, "slurmrestd": {"url": "http://ctl:6820", "user": "ml", "token_file": "jwt"})"), "/etc/tsum");
  REQUIRE(rest);
  CHECK(rest->slurm->rest_url == "http://ctl:6820");
  CHECK(rest->slurm->rest_user == "ml");
  CHECK(rest->slurm->rest_token.empty());  // read by load_config, not by the parser
  CHECK(rest->slurm_token.file == "/etc/tsum/jwt");
}

TEST_CASE("providers.kubernetes: credentials, prices, defaults, a kubeconfig read at load, errors naming the field") {
  auto c = parse_config(R"({"providers": {"kubernetes": {"api_url": "https://k8s:6443", "ca_file": "ca.crt",
      "token_file": "token", "namespace": "ml", "shapes": {"n1-standard-8": {"hourly_price": 0.38}},
      "prices": {"vcpu_hour": 0.03, "gib_hour": 0.004, "gpu_hour": 2.5, "billing_rule": "per_minute"},
      "active_deadline_s": 3600, "startup_deadline_s": 300}}})",
                        "/etc/tsum");
  REQUIRE(c);
  REQUIRE(c->kubernetes);
  CHECK(c->kubernetes->ca_file == "/etc/tsum/ca.crt");
  CHECK(c->kubernetes->token_file == "/etc/tsum/token");
  CHECK(c->kubernetes->namespace_ == "ml");
  CHECK(c->kubernetes->shapes.at("n1-standard-8").hourly_price == 0.38);
  CHECK(c->kubernetes->shapes.at("n1-standard-8").billing_rule == "step:1,min:0");
  CHECK(c->kubernetes->resources.billing_rule == "per_minute");
  CHECK(c->kubernetes->active_deadline == std::chrono::seconds(3600));
  CHECK(c->startup_deadlines().at("kubernetes") == std::chrono::seconds(300));
  CHECK(parse_config(R"({"providers": {"kubernetes": {"api_url": "https://k"}}})", "/")->startup_deadlines().at(
            "kubernetes") == std::chrono::seconds(900));

  auto k8s = [](const std::string& fields) { return config_error(R"({"providers": {"kubernetes": {)" + fields + "}}}"); };
  CHECK(parse_config(R"({"providers": {"kubernetes": {"namespace": "ml"}}})", "/"));  // the user's kubeconfig
  CHECK(k8s(R"("api_url": "ftp://k")") == "providers.kubernetes.api_url: must be an https:// URL");
  CHECK(k8s(R"("api_url": "https://k", "namespace": "ML_team")") ==
        "providers.kubernetes.namespace: is not a namespace name (lowercase letters, digits and '-')");
  CHECK(k8s(R"("api_url": "https://k", "client_cert_file": "c.pem")") ==
        "providers.kubernetes.client_cert_file: and client_key_file go together");
  CHECK(k8s(R"("api_url": "https://k", "token_file": "t", "client_cert_file": "c", "client_key_file": "k")") ==
        "providers.kubernetes.token_file: or a client certificate, not both");
  CHECK(k8s(R"("api_url": "https://k", "context": "dev")") ==
        "providers.kubernetes.context: names a context of a kubeconfig: give it or api_url, not both");
  CHECK(k8s(R"("api_url": "https://k", "shapes": {"s": {"hourly_price": 1, "billing_rule": "weekly"}})").find(
            "providers.kubernetes.shapes.s.billing_rule: unknown billing rule 'weekly'") == 0);
  CHECK(k8s(R"("api_url": "https://k", "token": "abc")") == "providers.kubernetes.token: unknown field");

  // load_config: the kubeconfig's cluster, user and namespace; a token file others may read is refused.
  TempDir dir;
  write_config(dir, "kubeconfig", "apiVersion: v1\nkind: Config\ncurrent-context: dev\nclusters:\n- name: c\n  cluster:\n"
                           "    server: https://dev:6443\n    certificate-authority: dev-ca.pem\nusers:\n- name: u\n"
                           "  user:\n    token: sekret\ncontexts:\n- name: dev\n  context: {cluster: c, user: u, "
                           "namespace: team}\n", 0600);
  const std::string path = write_config(dir, "tsum.json", R"({"providers": {"kubernetes": {"kubeconfig": "kubeconfig"}}})", 0600);
  auto loaded = load_config(path);
  REQUIRE_MESSAGE(loaded, (loaded ? "" : loaded.error().detail));
  CHECK(loaded->kubernetes->api_url == "https://dev:6443");
  CHECK(loaded->kubernetes->ca_file == dir.file("dev-ca.pem"));
  CHECK(loaded->kubernetes->token == "sekret");
  CHECK(loaded->kubernetes->namespace_ == "team");
  write_config(dir, "token", "t0ken\n", 0644);
  const std::string loose = write_config(dir, "loose.json",
                                  R"({"providers": {"kubernetes": {"api_url": "https://k", "token_file": "token"}}})", 0600);
  auto refused = load_config(loose);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().detail.find("chmod 600") != std::string::npos);
}
