#include "comm/codec.h"

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace geomx::comm {
namespace {

Meta FullMeta() {
  Meta m;
  m.command = Command::kPushPull;
  m.sender = 9;
  m.recipient = -1;
  m.app_id = 3;
  m.timestamp = (int64_t{1} << 40) + 7;
  m.request = false;
  m.round = -5;
  m.keys = {0, 1, 0xFFFFFFFFFFFFFFFFull, 1234567890123ull};
  m.lens = {1, 0, 0xFFFFFFFFu, 42};
  m.codec = "topk";
  m.priority = -2147483647 - 1;
  m.status_code = 2147483647;
  m.body = std::string("bin\0ary\xff", 8);
  return m;
}

void ExpectSameMeta(const Meta& a, const Meta& b) {
  EXPECT_EQ(a.version, b.version);
  EXPECT_EQ(a.command, b.command);
  EXPECT_EQ(a.sender, b.sender);
  EXPECT_EQ(a.recipient, b.recipient);
  EXPECT_EQ(a.app_id, b.app_id);
  EXPECT_EQ(a.timestamp, b.timestamp);
  EXPECT_EQ(a.request, b.request);
  EXPECT_EQ(a.round, b.round);
  EXPECT_EQ(a.keys, b.keys);
  EXPECT_EQ(a.lens, b.lens);
  EXPECT_EQ(a.codec, b.codec);
  EXPECT_EQ(a.priority, b.priority);
  EXPECT_EQ(a.status_code, b.status_code);
  EXPECT_EQ(a.body, b.body);
}

Status Decode(const std::vector<uint8_t>& bytes, Meta* m) { return DecodeMeta(bytes.data(), bytes.size(), m); }
std::vector<uint8_t> ToVector(const Bytes& b) { return {b.data(), b.data() + b.size()}; }

TEST(CodecTest, MetaRoundTripsEveryField) {
  const Meta in = FullMeta();
  const Bytes wire = EncodeMeta(in);
  EXPECT_EQ(wire.size(), EncodedMetaSize(in));
  Meta out;
  ASSERT_TRUE(DecodeMeta(wire.data(), wire.size(), &out).ok());
  ExpectSameMeta(in, out);
}

TEST(CodecTest, DefaultMetaRoundTrips) {
  const Meta in;
  const Bytes wire = EncodeMeta(in);
  Meta out = FullMeta();
  ASSERT_TRUE(DecodeMeta(wire.data(), wire.size(), &out).ok());
  ExpectSameMeta(in, out);
}

TEST(CodecTest, EveryCommandRoundTripsAndHasAName) {
  for (int c = 1; c <= 13; ++c) {
    Meta in;
    in.command = static_cast<Command>(c);
    const Bytes wire = EncodeMeta(in);
    Meta out;
    ASSERT_TRUE(DecodeMeta(wire.data(), wire.size(), &out).ok()) << c;
    EXPECT_EQ(out.command, in.command);
    EXPECT_STRNE(CommandName(in.command), "unknown") << c;
  }
  EXPECT_FALSE(IsKnownCommand(0));
  EXPECT_FALSE(IsKnownCommand(14));
  EXPECT_STREQ(CommandName(static_cast<Command>(200)), "unknown");
}

TEST(CodecTest, RefusesUnknownCommand) {
  for (int c : {0, 14, 255}) {
    Meta in;
    std::vector<uint8_t> wire = ToVector(EncodeMeta(in));
    // Field 1 (command) is the byte after the array header (1 byte) and the version (positive fixint, 1 byte).
    ASSERT_EQ(wire[2], static_cast<uint8_t>(Command::kControl));
    Meta out;
    if (c < 128) {
      wire[2] = static_cast<uint8_t>(c);
    } else {
      wire[2] = 0xcc;  // uint8 marker followed by the value
      wire.insert(wire.begin() + 3, static_cast<uint8_t>(c));
    }
    const Status s = Decode(wire, &out);
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << c;
    EXPECT_NE(s.message().find("meta.command: unknown command " + std::to_string(c)), std::string::npos)
        << s.message();
  }
}

TEST(CodecTest, RefusesOtherProtocolVersion) {
  Meta in;
  in.version = kProtocolVersion + 1;
  const Bytes wire = EncodeMeta(in);
  Meta out;
  const Status s = DecodeMeta(wire.data(), wire.size(), &out);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("protocol version " + std::to_string(kProtocolVersion + 1)), std::string::npos)
      << s.message();
}

TEST(CodecTest, RefusesEveryTruncation) {
  const std::vector<uint8_t> wire = ToVector(EncodeMeta(FullMeta()));
  for (size_t n = 0; n < wire.size(); ++n) {
    Meta out;
    const Status s = DecodeMeta(wire.data(), n, &out);
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << "prefix of " << n << " bytes";
  }
}

TEST(CodecTest, RefusesTrailingBytes) {
  std::vector<uint8_t> wire = ToVector(EncodeMeta(FullMeta()));
  wire.push_back(0xc0);
  Meta out;
  const Status s = Decode(wire, &out);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("1 trailing bytes"), std::string::npos) << s.message();
}

TEST(CodecTest, RefusesWrongTypesNamingTheField) {
  // A hand-built array with a string where the sender id belongs.
  std::vector<uint8_t> wire = ToVector(EncodeMeta(Meta{}));
  ASSERT_EQ(wire[3], 0xff);  // sender = -1 as a negative fixint
  wire[3] = 0xa1;            // fixstr of length 1 ...
  wire.insert(wire.begin() + 4, 'x');
  Meta out;
  const Status s = Decode(wire, &out);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("meta.sender: expected int32, got str"), std::string::npos) << s.message();

  // Not an array at all, and an empty array.
  EXPECT_EQ(Decode({0xc0}, &out).code(), StatusCode::kDataLoss);
  EXPECT_EQ(Decode({0x90}, &out).code(), StatusCode::kDataLoss);
  // A right version but too few fields.
  const Status few = Decode({0x92, 0x01, 0x07}, &out);
  EXPECT_EQ(few.code(), StatusCode::kDataLoss);
  EXPECT_NE(few.message().find("2 fields"), std::string::npos) << few.message();
}

TEST(CodecTest, RefusesOutOfRangeIntegers) {
  // sender = 2^31 (uint32 marker) does not fit in int32.
  std::vector<uint8_t> wire = ToVector(EncodeMeta(Meta{}));
  wire[3] = 0xce;
  const uint8_t big[] = {0x80, 0x00, 0x00, 0x00};
  wire.insert(wire.begin() + 4, big, big + 4);
  Meta out;
  const Status s = Decode(wire, &out);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("meta.sender: 2147483648 does not fit in int32"), std::string::npos) << s.message();
}

TEST(CodecTest, RefusesHugeDeclaredSizesWithoutAllocating) {
  Meta out;
  // array32 / map32 / bin32 headers claiming 4 billion entries, followed by nothing.
  EXPECT_EQ(Decode({0xdd, 0xff, 0xff, 0xff, 0xff}, &out).code(), StatusCode::kDataLoss);
  EXPECT_EQ(Decode({0xdf, 0xff, 0xff, 0xff, 0xff}, &out).code(), StatusCode::kDataLoss);
  EXPECT_EQ(Decode({0xc6, 0xff, 0xff, 0xff, 0xff}, &out).code(), StatusCode::kDataLoss);
  // Deep nesting.
  EXPECT_EQ(Decode(std::vector<uint8_t>(10000, 0x91), &out).code(), StatusCode::kDataLoss);
}

TEST(CodecTest, FuzzedInputsAreRefusedWithoutCrashing) {
  std::mt19937_64 rng(20240611);
  const std::vector<uint8_t> good = ToVector(EncodeMeta(FullMeta()));
  int accepted = 0;
  for (int i = 0; i < 4000; ++i) {
    std::vector<uint8_t> input;
    if (i % 2 == 0) {
      // Pure noise of random length.
      input.resize(rng() % 96);
      for (auto& b : input) b = static_cast<uint8_t>(rng());
    } else {
      // A valid encoding with a few bytes flipped, or cut, or both.
      input = good;
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f) input[rng() % input.size()] = static_cast<uint8_t>(rng());
      if (rng() % 3 == 0) input.resize(rng() % input.size());
    }
    Meta out;
    const Status s = DecodeMeta(input.data(), input.size(), &out);
    if (s.ok()) {
      ++accepted;  // a flip inside a value can still be a valid Meta: it must then be a known command
      EXPECT_TRUE(IsKnownCommand(static_cast<uint8_t>(out.command)));
    } else {
      EXPECT_EQ(s.code(), StatusCode::kDataLoss);
    }
  }
  EXPECT_LT(accepted, 4000);
}

TEST(CodecTest, FieldsRoundTrip) {
  const std::map<std::string, std::string> in = {
      {"name", "sgd"}, {"lr", "0.1"}, {"momentum", "0.9"}, {"", "empty key"}, {"bin", std::string("\0\xff", 2)}};
  std::map<std::string, std::string> out = {{"stale", "x"}};
  ASSERT_TRUE(DecodeFields(EncodeFields(in), &out).ok());
  EXPECT_EQ(out, in);
  ASSERT_TRUE(DecodeFields(EncodeFields({}), &out).ok());
  EXPECT_TRUE(out.empty());
}

TEST(CodecTest, FieldsRefuseMalformedInput) {
  std::map<std::string, std::string> out;
  EXPECT_EQ(DecodeFields("", &out).code(), StatusCode::kDataLoss);
  EXPECT_EQ(DecodeFields(std::string("\x91\x01", 2), &out).code(), StatusCode::kDataLoss);  // an array
  // {"a": 1}: a non-string value, named.
  const Status v = DecodeFields(std::string("\x81\xa1" "a\x01", 4), &out);
  EXPECT_EQ(v.code(), StatusCode::kDataLoss);
  EXPECT_NE(v.message().find("fields.a: expected str, got uint"), std::string::npos) << v.message();
  // {1: "a"}: a non-string key.
  EXPECT_EQ(DecodeFields(std::string("\x81\x01\xa1" "a", 4), &out).code(), StatusCode::kDataLoss);
  // {"a": "b", "a": "c"}: a duplicate key.
  const Status d = DecodeFields(std::string("\x82\xa1" "a\xa1" "b\xa1" "a\xa1" "c", 9), &out);
  EXPECT_EQ(d.code(), StatusCode::kDataLoss);
  EXPECT_NE(d.message().find("duplicate key 'a'"), std::string::npos) << d.message();
  // Truncated and trailing.
  const std::string good = EncodeFields({{"lr", "0.1"}});
  EXPECT_EQ(DecodeFields(good.substr(0, good.size() - 1), &out).code(), StatusCode::kDataLoss);
  EXPECT_EQ(DecodeFields(good + "x", &out).code(), StatusCode::kDataLoss);

  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string noise(rng() % 64, '\0');
    for (auto& c : noise) c = static_cast<char>(rng());
    const Status s = DecodeFields(noise, &out);
    if (!s.ok()) {
      EXPECT_EQ(s.code(), StatusCode::kDataLoss);
    }
  }
}

}  // namespace
}  // namespace geomx::comm
