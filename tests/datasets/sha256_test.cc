// SHA-256 against the FIPS 180-2 example vectors, and the file digest against the in-memory one.
#include "datasets/sha256.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/testutil.h"

namespace geomx::testing {
namespace {

TEST(Sha256, MatchesTheFips180_2ExampleVectors) {
  EXPECT_EQ(data::Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(data::Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(data::Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(data::Sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, OfAFileReadInChunksEqualsTheDigestOfItsBytes) {
  ScratchDir dir;
  // 3 MB + 7 bytes: several 1 MiB reads and a short last one.
  std::string bytes(3 * 1000 * 1000 + 7, '\0');
  uint32_t x = 12345;
  for (char& c : bytes) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  WriteFile(dir / "blob", bytes);
  auto got = data::Sha256OfFile((dir / "blob").string());
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(*got, data::Sha256Hex(bytes));
  WriteFile(dir / "abc", "abc");
  EXPECT_EQ(*data::Sha256OfFile((dir / "abc").string()),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  auto missing = data::Sha256OfFile((dir / "nope").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("nope"), std::string::npos);
}

}  // namespace
}  // namespace geomx::testing
