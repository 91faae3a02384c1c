#include "daemon/experiments/workload.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <sstream>

#include "common/json_util.h"
#include "daemon/artifacts/blob_store.h"
#include "daemon/artifacts/dataset_format.h"

namespace tsum::daemon {

using nlohmann::json;

namespace {

Error bad_field(const std::string& field, const std::string& what) {
  return make_error(Code::invalid_argument, "workload." + field + ": " + what);
}

// Every field a workload knows, in expansion order.
constexpr std::string_view kFields[] = {"kind",      "model",  "dataset",   "optimizer", "lr",      "decay",
                                        "augment",   "precision", "device",  "epochs",    "batch",   "limit",
                                        "test_limit", "threads", "mode",     "source",    "iterations", "max_batch",
                                        "max_delay_ms", "input", "concurrency", "rate", "arrivals", "bound_ms",
                                        "window_s",  "service_ms", "instances", "image", "command", "env",
                                        "workdir",   "setup",  "run"};
constexpr std::string_view kServeFields[] = {"max_batch", "max_delay_ms", "input",      "concurrency", "rate",
                                             "arrivals",  "bound_ms",     "window_s",   "service_ms",  "instances"};
// Fields whose list is one workload's sweep, never alternatives (infer's "batch" is one too).
constexpr std::string_view kSweeps[] = {"concurrency", "rate"};

template <size_t N>
std::string names_of(const std::string_view (&names)[N]) {
  std::string s;
  for (auto n : names) s += (s.empty() ? "" : ", ") + std::string(n);
  return s;
}

template <size_t N>
bool listed(const std::string_view (&names)[N], std::string_view x) {
  return std::find(std::begin(names), std::end(names), x) != std::end(names);
}

Result<std::string> text(const json& v, const std::string& field) {
  if (!v.is_string()) return bad_field(field, "must be a string");
  auto s = v.get<std::string>();
  if (s.empty() || s.size() > 200) return bad_field(field, "must be 1 to 200 characters");
  return s;
}

Result<int> whole(const json& v, const std::string& field, int lo, int hi) {
  if (!v.is_number_integer()) return bad_field(field, "must be an integer");
  auto n = v.get<int64_t>();
  if (n < lo || n > hi)
    return bad_field(field, "must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", got " +
                          std::to_string(n));
  return static_cast<int>(n);
}

Result<double> number(const json& v, const std::string& field, double lo, double hi, bool lo_open) {
  if (!v.is_number()) return bad_field(field, "must be a number");
  double x = v.get<double>();
  if (!std::isfinite(x) || x > hi || x < lo || (lo_open && x == lo)) {
    std::ostringstream r;
    r << (lo_open ? "must be above " : "must be at least ") << lo << " and at most " << hi;
    return bad_field(field, r.str());
  }
  return x;
}

template <size_t N>
Result<std::string> choice(const json& v, const std::string& field, const std::string_view (&names)[N],
                           const std::string& noun) {
  auto s = text(v, field);
  if (!s) return s.error();
  if (!listed(names, *s)) return bad_field(field, "'" + *s + "' is not " + noun + " (" + names_of(names) + ")");
  return s;
}

// {"url": "https://...", "sha256": "...", "format": "idx", "name": "..."}: a data set the agent fetches itself.
Status dataset_url(const json& d, Workload& w) {
  for (const auto& [key, _] : d.items())
    if (key != "url" && key != "sha256" && key != "format" && key != "name")
      return bad_field("dataset." + key, "unknown field (url, sha256, format, name)");
  if (!d.contains("url") || !d.contains("sha256")) return bad_field("dataset", "a URL data set needs 'url' and 'sha256'");
  auto url = text(d["url"], "dataset.url");
  if (!url) return url.error();
  auto sha = text(d["sha256"], "dataset.sha256");
  if (!sha) return sha.error();
  std::string format = "idx", name = "url";
  if (d.contains("format")) {
    auto f = text(d["format"], "dataset.format");
    if (!f) return f.error();
    format = *f;
  }
  if (d.contains("name")) {
    auto n = text(d["name"], "dataset.name");
    if (!n) return n.error();
    name = *n;
  }
  if (!url->starts_with("https://") && !url->starts_with("http://")) return bad_field("dataset.url", "must be an http(s) URL");
  if (url->find_first_of(" '\"\\`$") != std::string::npos) return bad_field("dataset.url", "has a character URLs do not");
  if (!is_sha256_hex(*sha)) return bad_field("dataset.sha256", "must be 64 lower-case hex digits");
  if (!is_dataset_format(format)) return bad_field("dataset.format", "'" + format + "' is not a data set format");
  if (!is_dataset_name(name)) return bad_field("dataset.name", "'" + name + "' is not a data set name");
  w.dataset = name;
  w.dataset_url = *url;
  w.dataset_sha256 = *sha;
  w.dataset_format = format;
  return {};
}

// An inference sweep's batch sizes: one or a list.
Status apply_batches(Workload& w, const json& v) {
  w.batches.clear();
  for (const auto& b : v.is_array() ? v : json::array({v})) {
    auto n = whole(b, "batch", 1, 4096);
    if (!n) return n.error();
    w.batches.push_back(*n);
  }
  if (w.batches.empty()) return bad_field("batch", "must list at least one batch size");
  return {};
}

// A serving run's sweep: concurrency levels (integers) or request rates (requests/s).
Status apply_sweep(Workload& w, const std::string& field, const json& v) {
  const json list = v.is_array() ? v : json::array({v});
  if (list.empty() || list.size() > 64) return bad_field(field, "must list 1 to 64 levels");
  for (const auto& x : list) {
    if (field == "concurrency") {
      auto n = whole(x, field, 1, 4096);
      if (!n) return n.error();
      w.concurrency.push_back(*n);
    } else {
      auto r = number(x, field, 0, 1e6, true);
      if (!r) return r.error();
      w.rates.push_back(*r);
    }
  }
  return {};
}

// A user's job: its command, its environment, its image.
Status apply_job_field(Workload& w, const std::string& field, const json& v) {
  if (field == "command") {
    if (!v.is_array() || v.empty()) return bad_field(field, "must be a non-empty list of strings (the program and its arguments)");
    w.command.clear();
    for (const auto& a : v) {
      if (!a.is_string()) return bad_field(field, "must be a non-empty list of strings (the program and its arguments)");
      auto s = a.get<std::string>();
      if (s.size() > 4096 || s.find('\0') != std::string::npos) return bad_field(field, "an argument is over 4096 bytes or holds a NUL");
      w.command.push_back(std::move(s));
    }
    if (w.command[0].empty()) return bad_field(field, "the program (its first entry) must not be empty");
  } else if (field == "env") {
    if (!v.is_object()) return bad_field(field, "must be an object of names and string values");
    for (const auto& [k, x] : v.items()) {
      const bool name_ok = !k.empty() && k.size() <= 128 && !std::isdigit(static_cast<unsigned char>(k[0])) &&
                           std::all_of(k.begin(), k.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
      if (!name_ok) return bad_field("env." + k, "is not a variable name (letters, digits and _, not starting with a digit)");
      if (k.starts_with("TSUM_")) return bad_field("env." + k, "TSUM_ names are the daemon's");
      if (!x.is_string() || x.get<std::string>().size() > 4096 || x.get<std::string>().find('\0') != std::string::npos)
        return bad_field("env." + k, "must be a string of at most 4096 bytes");
      w.env[k] = x.get<std::string>();
    }
  } else if (field == "workdir") {
    // What the client uploaded: "sha256:HEX" (POST /v1/workdirs; `tsumd experiment create` packs a folder's path).
    if (!v.is_string() || !v.get<std::string>().starts_with("sha256:") || !is_sha256_hex(v.get<std::string>().substr(7)))
      return bad_field(field, "must be \"sha256:HEX\", a folder uploaded with POST /v1/workdirs (tsumd experiment create "
                              "-f SPEC uploads the folder a path names)");
    w.workdir_sha256 = v.get<std::string>().substr(7);
  } else if (field == "setup" || field == "run") {
    if (!v.is_string() || v.get<std::string>().empty() || v.get<std::string>().size() > 65536 ||
        v.get<std::string>().find('\0') != std::string::npos)
      return bad_field(field, "must be a shell command line of 1 to 65536 bytes, without NUL");
    (field == "setup" ? w.setup : w.run) = v.get<std::string>();
  } else if (field == "image") {
    auto text_value = text(v, field);
    if (!text_value) return text_value.error();
    w.image = *text_value;
    auto image_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("./:_@-", c); };
    if (w.image[0] == '-' || !std::all_of(w.image.begin(), w.image.end(), image_char))
      return bad_field(field, "'" + w.image + "' is not an image reference (letters, digits and . / : _ @ - only)");
  }
  return {};
}

// A serving workload's own fields (max_batch, max_delay_ms, ..., service_ms).
Status apply_serve_field(Workload& w, const std::string& field, const json& v) {
  if (field == "max_batch" || field == "instances") {
    auto n = field == "max_batch" ? whole(v, field, 1, 4096) : whole(v, field, 1, 64);
    if (!n) return n.error();
    (field == "max_batch" ? w.max_batch : w.instances) = *n;
  } else if (field == "max_delay_ms" || field == "bound_ms" || field == "window_s" || field == "service_ms") {
    auto x = field == "max_delay_ms" ? number(v, field, 0, 10000, false)
             : field == "window_s"   ? number(v, field, 0, 3600, true)
                                     : number(v, field, 0, 1e6, true);
    if (!x) return x.error();
    if (field == "max_delay_ms") w.max_delay_ms = *x;
    else if (field == "service_ms") w.service_ms = *x;
    else (field == "bound_ms" ? w.bound_ms : w.window_s) = *x;
  } else if (field == "input") {
    static constexpr std::string_view kInputs[] = {"fp32", "jpeg"};
    auto s = choice(v, field, kInputs, "a serving input");
    if (!s) return s.error();
    w.input = *s;
  } else if (field == "arrivals") {
    static constexpr std::string_view kArrivals[] = {"poisson", "constant"};
    auto s = choice(v, field, kArrivals, "an arrival process");
    if (!s) return s.error();
    w.arrivals = *s;
  } else if (field == "concurrency" || field == "rate") {
    return apply_sweep(w, field, v);
  }
  return {};
}

// Applies one field's single value to w.
Status apply(Workload& w, const std::string& field, const json& v) {
  auto set_text = [&](std::string& out) -> Status {
    auto s = text(v, field);
    if (!s) return s.error();
    out = *s;
    return {};
  };
  auto set_int = [&](auto& out, int lo, int hi) -> Status {
    auto n = whole(v, field, lo, hi);
    if (!n) return n.error();
    out = *n;
    return {};
  };
  if (field == "kind") {
    static constexpr std::string_view kKinds[] = {"train", "infer", "serve", "job"};
    auto s = choice(v, field, kKinds, "a workload kind");
    if (!s) return s.error();
    w.kind = *s;
  } else if (field == "model") {
    if (w.kind == "serve" && v == "delay") {  // a server whose service time is known (service_ms)
      w.model = "delay";
      return {};
    }
    auto s = choice(v, field, kModels, "a model");
    if (!s) return s.error();
    w.model = *s;
  } else if (field == "dataset") {
    if (v.is_object()) return dataset_url(v, w);
    if (auto s = set_text(w.dataset); !s) return s;
    if (!is_dataset_name(w.dataset))
      return bad_field(field, "'" + w.dataset + "' is not a data set name (POST /v1/datasets registers one)");
  } else if (field == "optimizer") {
    auto s = choice(v, field, kOptimizers, "an optimizer");
    if (!s) return s.error();
    w.optimizer = *s;
  } else if (field == "lr" || field == "decay") {
    auto x = field == "lr" ? number(v, field, 0, 10, true) : number(v, field, 0, 1, false);
    if (!x) return x.error();
    (field == "lr" ? w.lr : w.decay) = *x;
  } else if (field == "augment") {
    if (!v.is_boolean()) return bad_field(field, "must be true or false");
    w.augment = v.get<bool>();
  } else if (field == "precision") {
    static constexpr std::string_view kPrecisions[] = {"fp32", "bf16", "fp16"};
    auto s = choice(v, field, kPrecisions, "a precision");
    if (!s) return s.error();
    w.precision = *s;
  } else if (field == "device") {
    static constexpr std::string_view kDevices[] = {"cpu", "cuda"};
    auto s = choice(v, field, kDevices, "a device");
    if (!s) return s.error();
    w.device = *s;
  } else if (field == "epochs") {
    return set_int(w.epochs, 1, 1000);
  } else if (field == "batch") {
    if (w.kind == "infer") return apply_batches(w, v);
    return w.kind == "serve" ? set_int(w.batch, 1, 4096) : set_int(w.batch, 1, 65536);
  } else if (field == "limit") {
    return set_int(w.limit, 1, 1000000);
  } else if (field == "test_limit") {
    return set_int(w.test_limit, 1, 1000000);
  } else if (field == "threads") {
    return set_int(w.threads, 1, 1024);
  } else if (field == "iterations") {
    return set_int(w.iterations, 1, 10000);
  } else if (field == "mode") {
    static constexpr std::string_view kModes[] = {"sync", "async"};
    auto s = choice(v, field, kModes, "an inference mode");
    if (!s) return s.error();
    w.mode = *s;
  } else if (field == "source") {
    static constexpr std::string_view kSources[] = {"memory", "files"};
    auto s = choice(v, field, kSources, "an inference source");
    if (!s) return s.error();
    w.source = *s;
  } else if (listed(kServeFields, field)) {
    return apply_serve_field(w, field, v);
  } else if (field == "command" || field == "env" || field == "image" || field == "workdir" || field == "setup" ||
             field == "run") {
    return apply_job_field(w, field, v);
  }
  return {};
}

// A serving workload as a whole: one sweep, requests that fit the server's batches, no data set.
Status check_serve(Workload& w, const json& given) {
  if (given.contains("concurrency") && given.contains("rate"))
    return bad_field("rate", "a sweep is of concurrency or of request rate, not both");
  if (w.concurrency.empty() && w.rates.empty()) w.concurrency = {1, 2, 4, 8};
  if (given.contains("arrivals") && w.rates.empty()) return bad_field("arrivals", "is for a request-rate sweep (\"rate\")");
  if (!w.batch) w.batch = 1;
  if (*w.batch > w.max_batch)
    return bad_field("batch", "a request of " + std::to_string(*w.batch) + " images does not fit the server's max_batch " +
                            std::to_string(w.max_batch));
  if (given.contains("dataset"))
    return bad_field("dataset", "a serving run reads no data set: its client sends generated tensors or JPEGs (\"input\")");
  if (given.contains("service_ms") != (w.model == "delay"))
    return bad_field("service_ms", "goes with model \"delay\", a server whose every batch takes service_ms, and it needs it");
  return {};
}

// What one expanded workload must satisfy as a whole; the data set's default is the model's.
Status check(Workload& w, const json& given) {
  if (given.contains("command") || given.contains("run") || w.kind == "job") {
    w.kind = "job";
    static constexpr std::string_view kJobFields[] = {"kind", "image", "command", "env", "dataset", "workdir", "setup", "run"};
    for (const auto& [key, _] : given.items())
      if (!listed(kJobFields, key))
        return bad_field(key, "is tsum-train's; a job takes image, command or workdir, setup and run, env and dataset");
    if (given.contains("command") && given.contains("run"))
      return bad_field("run", "a job is a command in an image, or a folder's setup and run: not both");
    if (w.command.empty() && w.run.empty())
      return bad_field("run", "a job needs what it runs: \"run\", a shell line (with \"workdir\" and \"setup\"), or "
                              "\"command\", e.g. [\"python3\", \"train.py\"], in an image");
    if (w.run.empty() && (given.contains("workdir") || given.contains("setup")))
      return bad_field(given.contains("workdir") ? "workdir" : "setup", "goes with \"run\", the shell line the folder's job runs");
    if (!w.command.empty() && w.image.empty()) return bad_field("image", "a job's command runs in a container image: name it");
    if (!given.contains("dataset")) w.dataset.clear();  // none unless named; any format will do
    return {};
  }
  if (given.contains("env")) return bad_field("env", "belongs to a user's job (with a command or a run)");
  for (const char* f : {"workdir", "setup"})
    if (given.contains(f)) return bad_field(f, "goes with \"run\", the shell line the folder's job runs");
  static constexpr std::string_view kTrainOnly[] = {"optimizer", "lr", "decay", "augment", "epochs", "limit", "test_limit"};
  static constexpr std::string_view kInferOnly[] = {"mode", "source", "iterations"};
  if (w.kind != "train")
    for (auto f : kTrainOnly)
      if (given.contains(std::string(f)))
        return bad_field(std::string(f), "is a training field; " + std::string(w.kind == "infer" ? "an " : "a ") + w.kind +
                                       " workload takes none");
  if (w.kind != "infer")
    for (auto f : kInferOnly)
      if (given.contains(std::string(f))) return bad_field(std::string(f), "belongs to \"kind\": \"infer\"");
  if (w.kind != "serve")
    for (auto f : kServeFields)
      if (given.contains(std::string(f))) return bad_field(std::string(f), "belongs to \"kind\": \"serve\"");
  if (w.kind != "train" && w.model == "bilstm")
    return bad_field("model", "bilstm reads tokens, not images: " + w.kind + " needs an image model");
  if (w.kind == "serve") {
    if (auto s = check_serve(w, given); !s) return s;
  }
  if (!given.contains("dataset")) {
    const std::string format = w.wanted_format();
    if (format == "idx") w.dataset = "fashion-mnist";  // registered at start from Debian's package
    else if (format.empty()) w.dataset.clear();        // reads none
    else return bad_field("dataset", w.model + " reads a " + format + " data set: name a registered one (POST /v1/datasets)");
  } else if (w.wanted_format().empty() && w.kind == "train") {
    return bad_field("dataset", w.model + " trains on synthetic data and reads no data set");
  }
  if (!w.dataset_url.empty())
    if (auto fits = dataset_fits(w, w.dataset_format); !fits) return fits;
  if (w.precision == "fp16" && w.device.value_or("cuda") == "cpu")
    return bad_field("precision", "fp16 runs on cuda only (CPU: fp32 or bf16)");
  return {};
}

}  // namespace

Status dataset_fits(const Workload& w, const std::string& format) {
  if (w.kind == "job") return {};  // the job reads what it reads
  if (w.kind == "serve") return make_error(Code::invalid_argument, "workload.dataset: a serving run reads no data set");
  const std::string wanted = w.kind == "infer" ? "images" : w.wanted_format();
  if (format == wanted) return {};
  return make_error(Code::invalid_argument, "workload.dataset: " +
                                                (w.kind == "infer" ? "the inference sweep" : "model " + w.model) +
                                                (wanted.empty() ? " reads no data set" : " reads format " + wanted) +
                                                ", but data set '" + w.dataset + "' is " + format);
}

std::string Workload::wanted_format() const {
  if (kind == "infer" || kind == "serve" || model == "resnet50") return "";
  if (model == "mnist_cnn" || model == "mnist_mlp") return "idx";
  if (model == "bilstm") return "tokens";
  return "cifar10-bin";
}

std::string Workload::train_args(int gpus) const {
  const std::string dev = device_on(gpus);
  std::ostringstream a;
  if (kind == "infer") {
    a << "--model " << model << " --mode " << mode << " --source " << source << " --batch ";
    for (size_t i = 0; i < batches.size(); ++i) a << (i ? "," : "") << batches[i];
    if (iterations) a << " --iterations " << *iterations;
  } else if (kind == "serve") {
    a << "--model " << model << " --max-batch " << max_batch << " --max-delay-ms " << max_delay_ms;
    if (instances != 1) a << " --instances " << instances;
    if (service_ms) a << " --service-ms " << *service_ms;
  } else {
    a << "--model " << model << " --epochs " << epochs;
    if (optimizer) a << " --optimizer " << *optimizer;
    if (lr) a << " --lr " << *lr;
    if (decay) a << " --decay " << *decay;
    if (augment) a << " --augment";
    if (limit) a << " --limit " << *limit;
    if (test_limit) a << " --test-limit " << *test_limit;
    if (batch) a << " --batch " << *batch;
  }
  if (precision != "fp32") a << " --precision " << precision;
  if (dev != "cpu") a << " --device " << dev;
  if (threads) a << " --threads " << *threads;
  return a.str();
}

std::string Workload::load_args() const {
  std::ostringstream a;
  a << "--model " << model << " --batch " << batch.value_or(1);
  if (rates.empty()) {
    a << " --concurrency ";
    for (size_t i = 0; i < concurrency.size(); ++i) a << (i ? "," : "") << concurrency[i];
  } else {
    a << " --rate ";
    for (size_t i = 0; i < rates.size(); ++i) a << (i ? "," : "") << rates[i];
    a << " --arrivals " << arrivals;
  }
  if (bound_ms) a << " --bound-ms " << *bound_ms;
  if (window_s) a << " --window-s " << *window_s;
  return a.str();
}

json Workload::to_json() const {
  if (kind == "job") {
    json j = {{"kind", kind}, {"env", env}};
    if (!image.empty()) j["image"] = image;
    if (!command.empty()) j["command"] = command;
    if (!workdir_sha256.empty()) j["workdir"] = "sha256:" + workdir_sha256;
    if (!setup.empty()) j["setup"] = setup;
    if (!run.empty()) j["run"] = run;
    if (!dataset_url.empty())
      j["dataset"] = {{"url", dataset_url}, {"sha256", dataset_sha256}, {"format", dataset_format}, {"name", dataset}};
    else if (!dataset.empty())
      j["dataset"] = dataset;
    return j;
  }
  json j = {{"kind", kind}, {"model", model}, {"precision", precision}};
  if (kind == "infer") {
    j["batch"] = batches;
    j["mode"] = mode;
    j["source"] = source;
    if (iterations) j["iterations"] = *iterations;
  } else if (kind == "serve") {
    j.update({{"batch", batch.value_or(1)}, {"max_batch", max_batch}, {"max_delay_ms", max_delay_ms}, {"input", input}});
    if (instances != 1) j["instances"] = instances;
    if (rates.empty()) j["concurrency"] = concurrency;
    else j.update({{"rate", rates}, {"arrivals", arrivals}});
    if (bound_ms) j["bound_ms"] = *bound_ms;
    if (window_s) j["window_s"] = *window_s;
    if (service_ms) j["service_ms"] = *service_ms;
  } else {
    j["dataset"] = dataset;
    if (!dataset_url.empty())
      j["dataset"] = {{"url", dataset_url}, {"sha256", dataset_sha256}, {"format", dataset_format}, {"name", dataset}};
    j["epochs"] = epochs;
    if (optimizer) j["optimizer"] = *optimizer;
    if (lr) j["lr"] = *lr;
    if (decay) j["decay"] = *decay;
    if (augment) j["augment"] = true;
    if (limit) j["limit"] = *limit;
    if (test_limit) j["test_limit"] = *test_limit;
    if (batch) j["batch"] = *batch;
  }
  if (device) j["device"] = *device;
  if (threads) j["threads"] = *threads;
  if (!image.empty()) j["image"] = image;
  return j;
}

json workload_fields(const Workload& w, const std::vector<std::string>& fields) {
  const json all = w.to_json();
  json out = json::object();
  for (const auto& f : fields) out[f] = all.contains(f) ? all[f] : json(nullptr);
  return out;
}

Result<std::vector<Workload>> expand_workload(const json& j, size_t max, std::vector<std::string>* varied) {
  if (!j.is_object()) return make_error(Code::invalid_argument, "'workload' must be an object");
  for (const auto& [key, _] : j.items())
    if (!listed(kFields, key))
      return make_error(Code::invalid_argument, "unknown field 'workload." + key + "' (" + names_of(kFields) + ")");
  // The kind decides whether "batch" is a list of alternatives or the sweep; it cannot vary itself.
  if (j.contains("kind") && j["kind"].is_array()) return bad_field("kind", "cannot be a list: make one experiment per kind");
  // A kind that is not a string is named by its own field's check below.
  const bool infer = json_or(j, "kind", std::string("train")) == "infer";  // "batch" is the sweep
  for (const char* f : {"command", "run"})
    if (j.contains(f) && json_or(j, "kind", std::string("job")) != "job")
      return bad_field(f, "belongs to a user's job (\"kind\": \"job\", the default with a command or a run)");

  // Each field's alternatives (one value unless the field holds a list).
  std::vector<std::pair<std::string, std::vector<json>>> axes;
  for (auto f : kFields) {
    const std::string field(f);
    if (!j.contains(field)) continue;
    const json& v = j[field];
    const bool alternatives = v.is_array() && !(infer && field == "batch") && field != "command" && !listed(kSweeps, field);
    if (alternatives && v.empty()) return bad_field(field, "must not be an empty list");
    std::vector<json> values = alternatives ? std::vector<json>(v.begin(), v.end()) : std::vector<json>{v};
    if (varied && values.size() > 1) varied->push_back(field);
    axes.emplace_back(field, std::move(values));
  }
  size_t total = 1;
  for (const auto& [field, values] : axes) {
    total *= values.size();
    if (total > max) return bad_field(field, "the workload's lists expand to more than " + std::to_string(max) + " workloads");
  }
  std::vector<Workload> out;
  for (size_t n = 0; n < total; ++n) {
    Workload w;
    json given = json::object();
    size_t rest = n, stride = total;
    for (const auto& [field, values] : axes) {  // the first field varies slowest
      stride /= values.size();
      const json& v = values[rest / stride];
      rest %= stride;
      if (auto s = apply(w, field, v); !s) return s.error();
      given[field] = v;
    }
    if (auto s = check(w, given); !s) return s.error();
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace tsum::daemon
