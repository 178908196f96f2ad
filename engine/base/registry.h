// Registry<Product, Args...>: name -> factory, filled once at startup (docs/style.md R5).
//
// A variant is added with one file and one registration, never by editing a switch:
//   GEOMX_REGISTER(ModelRegistry, "mlp", MlpFactory);
// Lookups are thread-safe after static initialisation; registration happens only during static init.
// Names() lists the keys sorted, for --help, `geomx algos` and "did you mean" hints.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/base/status.h"

namespace geomx {

template <typename Product, typename... Args>
class Registry {
 public:
  using Factory = std::function<Result<std::unique_ptr<Product>>(Args...)>;

  // The one instance per (Product, Args) type. Function-local static: safe during static initialisation.
  static Registry& Global() {
    static Registry registry;
    return registry;
  }

  // Returns false when the name was taken (the first registration wins).
  bool Add(const std::string& name, Factory factory, std::string help = "") {
    return entries_.emplace(name, Entry{std::move(factory), std::move(help)}).second;
  }

  bool Has(const std::string& name) const { return entries_.count(name) > 0; }

  Result<std::unique_ptr<Product>> Create(const std::string& name, Args... args) const {
    auto it = entries_.find(name);
    if (it == entries_.end()) {
      std::string known;
      for (const auto& [k, v] : entries_) {
        if (!known.empty()) known += ", ";
        known += k;
      }
      return Status::NotFound("unknown name '" + name + "' (known: " + known + ")");
    }
    return it->second.factory(std::forward<Args>(args)...);
  }

  std::vector<std::string> Names() const {
    std::vector<std::string> out;
    for (const auto& [k, v] : entries_) out.push_back(k);
    return out;
  }
  std::string Help(const std::string& name) const {
    auto it = entries_.find(name);
    return it == entries_.end() ? std::string() : it->second.help;
  }

 private:
  struct Entry {
    Factory factory;
    std::string help;
  };
  std::map<std::string, Entry> entries_;
};

}  // namespace geomx

#define GEOMX_REGISTRY_CONCAT_INNER_(a, b) a##b
#define GEOMX_REGISTRY_CONCAT_(a, b) GEOMX_REGISTRY_CONCAT_INNER_(a, b)
// Registers `factory` under `name` in RegistryType::Global() during static initialisation.
// Static libraries drop unreferenced objects: each library that registers things exposes a Link...() function
// that the composition root calls (see e.g. nn/models/models.h) so its registrations are kept.
#define GEOMX_REGISTER(RegistryType, name, factory, ...)                                        \
  static const bool GEOMX_REGISTRY_CONCAT_(geomx_registered_, __LINE__) [[maybe_unused]] = \
      RegistryType::Global().Add(name, factory, ##__VA_ARGS__)
