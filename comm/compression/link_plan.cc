#include "comm/compression/link_plan.h"

namespace geomx::comm {

const char* LinkSchemeName(LinkScheme scheme) {
  const LinkSchemeDef* def = LinkSchemeOf(scheme);
  return def == nullptr ? "?" : def->name;
}

Result<LinkSchemes> ResolveLinkSchemes(std::string_view preset, const LinkOverrides& o) {
  LinkSchemes s;
  const LinkSchemeDef* def = FindLinkScheme(preset);
  if (def == nullptr) {
    std::string known;
    for (const std::string& n : LinkSchemeNames()) known += (known.empty() ? "" : ", ") + n;
    return Status::InvalidArgument("accelerators.compression: unknown preset '" + std::string(preset) +
                                   "' (expected one of " + known + ")");
  }
  if (def->preset_lan) s.worker_to_local = s.local_to_worker = def->id;
  if (def->preset_wan) s.local_to_global = s.global_to_local = def->id;
  auto over = [](const std::string& value, const char* link, LinkScheme* out) -> Status {
    if (value == "auto") return Status::Ok();
    Result<LinkScheme> parsed = ParseLinkScheme(value);
    if (!parsed.ok()) return parsed.status().WithContext(std::string("accelerators.links.") + link);
    *out = *parsed;
    return Status::Ok();
  };
  GEOMX_RETURN_IF_ERROR(over(o.worker_to_local, "worker_to_local", &s.worker_to_local));
  GEOMX_RETURN_IF_ERROR(over(o.local_to_global, "local_to_global", &s.local_to_global));
  GEOMX_RETURN_IF_ERROR(over(o.global_to_local, "global_to_local", &s.global_to_local));
  GEOMX_RETURN_IF_ERROR(over(o.local_to_worker, "local_to_worker", &s.local_to_worker));
  return s;
}

bool SparsifiesLargeSlices(LinkScheme scheme, bool wan) {
  return scheme == LinkScheme::kBsc || (scheme == LinkScheme::kMpq && wan);
}

namespace {

LinkCodecConfig Config(LinkScheme scheme, bool push, bool wan, const LinkParams& p) {
  LinkCodecConfig c;
  c.scheme = scheme;
  c.push = push;
  c.wan = wan;
  c.size_lower_bound = p.size_lower_bound;
  c.bsc = p.bsc;
  return c;
}

}  // namespace

LinkPlan MakeLinkPlan(const LinkSchemes& s, const LinkParams& p) {
  LinkPlan plan;
  plan.local.compressed = s.lan();
  plan.local.push = Config(s.worker_to_local, /*push=*/true, /*wan=*/false, p);
  plan.local.answer = Config(s.local_to_worker, /*push=*/false, /*wan=*/false, p);
  plan.global.compressed = s.wan();
  plan.global.push = Config(s.local_to_global, /*push=*/true, /*wan=*/true, p);
  plan.global.answer = Config(s.global_to_local, /*push=*/false, /*wan=*/true, p);
  return plan;
}

TierCodec LosslessSender(const TierCodec& tier) {
  TierCodec t = tier;
  t.push.scheme = LinkScheme::kNone;
  return t;
}

}  // namespace geomx::comm
