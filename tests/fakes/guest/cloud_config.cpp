#include "tests/fakes/guest/cloud_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>

#include "providers/http/codec.h"

namespace tsum::providers::fake_guest {

namespace {

namespace fs = std::filesystem;

Error invalid(std::string detail) { return make_error(Code::invalid_argument, std::move(detail)); }

// The first line, without a trailing CR or blanks.
std::string_view first_line(std::string_view text) {
  std::string_view line = text.substr(0, text.find('\n'));
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
  return line;
}

Result<std::string> scalar(const YAML::Node& n, const std::string& what) {
  if (!n.IsScalar()) return invalid(what + " must be a string");
  return n.as<std::string>();
}

Result<unsigned> permissions_of(const YAML::Node& n, const std::string& path) {
  auto text = scalar(n, "permissions of " + path);
  if (!text) return text.error();
  unsigned mode = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), mode, 8);
  if (text->empty() || ec != std::errc() || end != text->data() + text->size() || mode > 07777)
    return invalid("permissions '" + *text + "' of " + path + " are not an octal mode");
  return mode;
}

bool absolute_without_dotdot(std::string_view p) {
  if (!p.starts_with('/') || p.find('\0') != std::string_view::npos || p.ends_with('/')) return false;
  for (const auto& part : fs::path(std::string(p)))
    if (part == "..") return false;
  return true;
}

Result<GuestFile> read_file_entry(const YAML::Node& entry, std::vector<std::string>& skipped) {
  if (!entry.IsMap()) return invalid("each write_files entry must be a mapping");
  GuestFile f;
  const YAML::Node path_node = entry["path"];
  if (!path_node.IsDefined() || !path_node.IsScalar()) return invalid("a write_files entry has no path (a string)");
  const std::string path = path_node.as<std::string>();
  if (!absolute_without_dotdot(path)) return invalid("write_files path '" + path + "' must be an absolute file path without ..");
  f.path = path;
  std::string encoding = "text/plain";
  for (const auto& kv : entry) {
    auto key = scalar(kv.first, "a write_files key");
    if (!key) return key.error();
    if (*key == "path") continue;
    if (*key == "permissions") {
      auto mode = permissions_of(kv.second, f.path);
      if (!mode) return mode.error();
      f.permissions = *mode;
    } else if (*key == "encoding" || *key == "content") {
      auto value = scalar(kv.second, *key + " of " + f.path);
      if (!value) return value.error();
      (*key == "encoding" ? encoding : f.content) = *value;
    } else {
      skipped.push_back("write_files." + *key);
    }
  }
  const bool gzipped = encoding == "gz+b64" || encoding == "gzip+base64" || encoding == "gz+base64";
  if (gzipped || encoding == "b64" || encoding == "base64") {
    auto decoded = http::base64_decode(f.content);
    if (!decoded) return invalid("content of " + f.path + " is not valid base64: " + decoded.error().detail);
    f.content = std::move(*decoded);
  } else if (encoding != "text/plain") {
    return invalid("encoding '" + encoding + "' of " + f.path + " is not supported (gz+b64, b64, base64 or text/plain)");
  }
  if (gzipped) {
    auto plain = http::gzip_decompress(f.content);
    if (!plain) return invalid("content of " + f.path + " is not gzip: " + plain.error().detail);
    f.content = std::move(*plain);
  }
  return f;
}

Result<std::vector<std::string>> read_command(const YAML::Node& entry) {
  if (entry.IsScalar()) return std::vector<std::string>{"/bin/sh", "-c", entry.as<std::string>()};
  if (!entry.IsSequence() || entry.size() == 0) return invalid("each runcmd entry must be a string or a non-empty list");
  std::vector<std::string> argv;
  for (const auto& arg : entry) {
    auto a = scalar(arg, "each argument of a runcmd list");
    if (!a) return a.error();
    argv.push_back(std::move(*a));
  }
  return argv;
}

Status read_document(const YAML::Node& doc, CloudConfig& out) {
  for (const auto& kv : doc) {
    auto key = scalar(kv.first, "a #cloud-config key");
    if (!key) return key.error();
    if (*key == "write_files") {
      if (!kv.second.IsSequence()) return invalid("write_files must be a list");
      for (const auto& entry : kv.second) {
        auto f = read_file_entry(entry, out.skipped);
        if (!f) return f.error();
        out.files.push_back(std::move(*f));
      }
    } else if (*key == "runcmd") {
      if (!kv.second.IsSequence()) return invalid("runcmd must be a list");
      for (const auto& entry : kv.second) {
        auto argv = read_command(entry);
        if (!argv) return argv.error();
        out.runcmd.push_back(std::move(*argv));
      }
    } else if (*key == "packages") {
      if (!kv.second.IsSequence()) return invalid("packages must be a list");
      for (const auto& entry : kv.second) {
        auto name = scalar(entry, "a package");
        if (!name) return name.error();
        auto plain = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '+' || c == '-'; };
        if (name->empty() || !std::all_of(name->begin(), name->end(), plain))
          return invalid("package '" + *name + "' is not a package name");
        out.packages.push_back(std::move(*name));
      }
    } else if (*key != "package_update") {
      out.skipped.push_back(*key);
    }
  }
  return {};
}

}  // namespace

Result<CloudConfig> parse_cloud_config(std::string_view user_data) {
  if (first_line(user_data) != "#cloud-config") return invalid("user data does not start with a #cloud-config line");
  CloudConfig out;
  try {
    YAML::Node doc = YAML::Load(std::string(user_data));
    if (doc.IsNull()) return out;
    if (!doc.IsMap()) return invalid("the #cloud-config document must be a mapping");
    if (auto read = read_document(doc, out); !read) return read.error();
  } catch (const YAML::Exception& e) {
    return invalid(std::string("user data is not valid YAML: ") + e.what());
  }
  return out;
}

}  // namespace tsum::providers::fake_guest
