#include "engine/base/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "engine/base/check.h"

namespace geomx {
namespace {

TEST(StatusTest, OkIsDefaultAndCheap) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.message(), "");
  EXPECT_EQ(s.ToString(), "OK");
  EXPECT_TRUE(Status::Ok().ok());
}

TEST(StatusTest, CarriesCodeAndMessage) {
  Status s = Status::InvalidArgument("lr must be positive");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "lr must be positive");
  EXPECT_EQ(s.ToString(), "INVALID_ARGUMENT: lr must be positive");
}

TEST(StatusTest, ConstructingWithOkCodeGivesOk) {
  Status s(StatusCode::kOk, "ignored");
  EXPECT_TRUE(s.ok());
}

TEST(StatusTest, EveryFactoryUsesItsCode) {
  EXPECT_EQ(Status::NotFound("x").code(), StatusCode::kNotFound);
  EXPECT_EQ(Status::DataLoss("x").code(), StatusCode::kDataLoss);
  EXPECT_EQ(Status::FailedPrecondition("x").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(Status::OutOfRange("x").code(), StatusCode::kOutOfRange);
  EXPECT_EQ(Status::Unimplemented("x").code(), StatusCode::kUnimplemented);
  EXPECT_EQ(Status::Unavailable("x").code(), StatusCode::kUnavailable);
  EXPECT_EQ(Status::DeadlineExceeded("x").code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(Status::Cancelled("x").code(), StatusCode::kCancelled);
  EXPECT_EQ(Status::ResourceExhausted("x").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(Status::Internal("x").code(), StatusCode::kInternal);
  EXPECT_EQ(Status::AlreadyExists("x").code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(StatusCodeName(StatusCode::kUnavailable), "UNAVAILABLE");
}

TEST(StatusTest, WithContextPrefixesAndKeepsCode) {
  Status s = Status::NotFound("no such file").WithContext("recipe.yaml");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "recipe.yaml: no such file");
  EXPECT_TRUE(Status::Ok().WithContext("ctx").ok());
}

TEST(StatusTest, UserErrorClassification) {
  EXPECT_TRUE(Status::InvalidArgument("x").IsUserError());
  EXPECT_TRUE(Status::FailedPrecondition("x").IsUserError());
  EXPECT_TRUE(Status::NotFound("x").IsUserError());
  EXPECT_FALSE(Status::Internal("x").IsUserError());
  EXPECT_FALSE(Status::Unavailable("x").IsUserError());
  EXPECT_FALSE(Status::Ok().IsUserError());
}

TEST(StatusTest, CopiesShareTheMessage) {
  Status a = Status::Internal("boom");
  Status b = a;
  EXPECT_EQ(b.ToString(), a.ToString());
}

Result<int> ParsePositive(int v) {
  if (v <= 0) return Status::InvalidArgument("not positive: " + std::to_string(v));
  return v;
}

Status UsesReturnIfError(int v, int* out) {
  GEOMX_RETURN_IF_ERROR(ParsePositive(v).status());
  GEOMX_ASSIGN_OR_RETURN(int parsed, ParsePositive(v));
  *out = parsed * 2;
  return Status::Ok();
}

TEST(ResultTest, HoldsValueOrStatus) {
  Result<int> good = ParsePositive(3);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 3);
  EXPECT_TRUE(good.status().ok());
  Result<int> bad = ParsePositive(-1);
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "not positive: -1");
}

TEST(ResultTest, OkStatusWithoutValueBecomesInternal) {
  Result<int> r{Status::Ok()};
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
}

TEST(ResultTest, MacrosPropagate) {
  int out = 0;
  EXPECT_TRUE(UsesReturnIfError(4, &out).ok());
  EXPECT_EQ(out, 8);
  out = 0;
  Status s = UsesReturnIfError(0, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(out, 0);
}

TEST(ResultTest, MoveOnlyValues) {
  Result<std::unique_ptr<int>> r(std::make_unique<int>(7));
  ASSERT_TRUE(r.ok());
  std::unique_ptr<int> p = std::move(r).value();
  EXPECT_EQ(*p, 7);
}

TEST(CheckDeathTest, FailedCheckAbortsWithMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH({ GEOMX_CHECK_EQ(1, 2) << "custom context"; }, "check failed.*custom context");
  EXPECT_DEATH(GEOMX_CHECK_OK(Status::Internal("bad state")), "INTERNAL: bad state");
}

}  // namespace
}  // namespace geomx
