// DatagramDroppingVan: a test Van decorator that drops each datagram (Van::SendDatagram) with a given probability
// from a seeded generator and passes everything else to the inner Van unchanged, so tests of DGT see lost blocks
// on a transport that is otherwise reliable. Thread-safe as the inner Van. Test-only code.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <string>

#include "comm/codec.h"
#include "comm/van.h"

namespace geomx::comm::testing {

class DatagramDroppingVan : public Van {
 public:
  DatagramDroppingVan(std::unique_ptr<Van> inner, double loss, uint64_t seed)
      : inner_(std::move(inner)), loss_(loss), draws_(seed) {}
  Result<std::string> Bind(const std::string& a) override { return inner_->Bind(a); }
  Status Connect(int id, const std::string& e, LinkClass l, const std::string& n) override {
    return inner_->Connect(id, e, l, n);
  }
  Result<size_t> Send(int id, const Message& m) override { return inner_->Send(id, m); }
  Result<size_t> SendDatagram(int id, const Message& m) override {
    bool drop;
    {
      std::lock_guard<std::mutex> lock(mu_);
      drop = std::uniform_real_distribution<double>(0, 1)(draws_) < loss_;
    }
    if (!drop) return inner_->Send(id, m);
    dropped_.fetch_add(1);
    return EncodedMetaSize(m.meta) + m.data_bytes();
  }
  Status Recv(Message* m, int timeout_ms) override { return inner_->Recv(m, timeout_ms); }
  void Stop() override { inner_->Stop(); }
  bool authenticates() const override { return inner_->authenticates(); }
  uint64_t dropped() const { return dropped_.load(); }

 private:
  std::unique_ptr<Van> inner_;
  const double loss_;
  std::mutex mu_;
  std::mt19937_64 draws_;
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace geomx::comm::testing
