// JsonObject: builds one flat-or-nested JSON object as text (metrics lines, summary.json). Keys keep insertion
// order. Non-finite numbers are written as null (JSON has no NaN). Value type; not thread-safe.
#pragma once

#include <unistd.h>

#include <chrono>
#include <ctime>
#include <thread>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

namespace geomx::cli {

inline std::string JsonEscape(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

class JsonObject {
 public:
  JsonObject& Add(std::string_view key, double v) {
    if (!std::isfinite(v)) return AddRaw(key, "null");
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.10g", v);
    return AddRaw(key, buf);
  }
  JsonObject& Add(std::string_view key, int64_t v) { return AddRaw(key, std::to_string(v)); }
  JsonObject& Add(std::string_view key, uint64_t v) { return AddRaw(key, std::to_string(v)); }
  JsonObject& Add(std::string_view key, int v) { return AddRaw(key, std::to_string(v)); }
  JsonObject& Add(std::string_view key, bool v) { return AddRaw(key, v ? "true" : "false"); }
  JsonObject& Add(std::string_view key, std::string_view v) { return AddRaw(key, JsonEscape(v)); }
  JsonObject& Add(std::string_view key, const char* v) { return AddRaw(key, JsonEscape(v)); }
  JsonObject& Add(std::string_view key, const std::optional<double>& v) {
    return v ? Add(key, *v) : AddRaw(key, "null");
  }
  JsonObject& Add(std::string_view key, const JsonObject& nested) { return AddRaw(key, nested.str()); }
  JsonObject& AddRaw(std::string_view key, std::string_view raw_json) {
    body_ += body_.empty() ? "" : ", ";
    body_ += JsonEscape(key);
    body_ += ": ";
    body_ += raw_json;
    return *this;
  }
  std::string str() const { return "{" + body_ + "}"; }

 private:
  std::string body_;
};

// Adds where and when a measurement ran: "host", "cores" (hardware threads) and "date" (UTC, ISO 8601). Used by
// the bench commands' JSON results.
inline void AddMachineAndDate(JsonObject* j) {
  char host[256] = "";
  gethostname(host, sizeof(host) - 1);
  j->Add("host", host).Add("cores", static_cast<int>(std::thread::hardware_concurrency()));
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char date[64];
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  j->Add("date", date);
}

}  // namespace geomx::cli
