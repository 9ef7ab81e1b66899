// Tests for the safetensors reader/writer, the fp16/bf16 conversions and gpt2_config.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include "tests/support/temp_dir.hpp"
#include "worker/engine/checkpoint/gpt2_config.hpp"
#include "worker/engine/checkpoint/safetensors.hpp"
#include "worker/engine/kernels/common/half.hpp"

using namespace lf::engine;
using lf::test::temp_dir;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// 8-byte little-endian length + header (padded with spaces to 8 bytes if asked) + data.
std::string st_bytes(std::string header, const std::string& data, bool pad = true) {
  if (pad)
    header.append((8 - header.size() % 8) % 8, ' ');
  std::string out;
  auto n = static_cast<std::uint64_t>(header.size());
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  return out + header + data;
}

template <class T>
std::string le_bytes(std::initializer_list<T> values) {
  std::string out;
  for (T v : values) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T)); // the test host is little-endian, like every target we run on
    out.append(b, sizeof(T));
  }
  return out;
}

/// The message of the runtime_error `open` throws, or a marker if it does not throw.
std::string open_error(const std::string& path) {
  try {
    safetensors_file::open(path);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "<no exception>";
}

std::string load_error(const std::string& path) {
  try {
    gpt2_config::load(path);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "<no exception>";
}

std::uint32_t bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

} // namespace

// --- half.hpp -----------------------------------------------------------------------------------

TEST_CASE("fp16 known values convert exactly both ways", "[safetensors][half]") {
  struct sample {
    std::uint16_t h;
    float f;
  };
  const sample samples[] = {
    {0x3c00, 1.0f}, {0xc100, -2.5f}, {0x7bff, 65504.0f}, {0x0001, std::ldexp(1.0f, -24)},
    {0x03ff, std::ldexp(1023.0f, -24)}, {0x0400, std::ldexp(1.0f, -14)}, {0x3555, 0.333251953125f},
    {0x7c00, std::numeric_limits<float>::infinity()}, {0xfc00, -std::numeric_limits<float>::infinity()},
    {0x0000, 0.0f},
  };
  for (const auto& s : samples) {
    CHECK(bits(f16_to_f32(s.h)) == bits(s.f));
    CHECK(f32_to_f16(s.f) == s.h);
  }
  CHECK(std::signbit(f16_to_f32(0x8000)));
  CHECK(f32_to_f16(-0.0f) == 0x8000);
  CHECK(std::isnan(f16_to_f32(0x7e00)));
  CHECK(std::isnan(f16_to_f32(0x7c01))); // signalling-NaN pattern stays NaN
  CHECK((f32_to_f16(std::numeric_limits<float>::quiet_NaN()) & 0x7fff) > 0x7c00);
}

TEST_CASE("f32 -> fp16 rounds to nearest even", "[safetensors][half]") {
  const float ulp = std::ldexp(1.0f, -10); // fp16 spacing just above 1
  CHECK(f32_to_f16(1.0f + ulp / 2) == 0x3c00);                        // tie -> even (down)
  CHECK(f32_to_f16(1.0f + 3 * ulp / 2) == 0x3c02);                    // tie -> even (up)
  CHECK(f32_to_f16(1.0f + ulp / 2 + std::ldexp(1.0f, -20)) == 0x3c01); // above the tie
  CHECK(f32_to_f16(65519.0f) == 0x7bff);
  CHECK(f32_to_f16(65520.0f) == 0x7c00); // tie between 65504 and 2^16 rounds to infinity
  CHECK(f32_to_f16(1e10f) == 0x7c00);
  CHECK(f32_to_f16(-1e10f) == 0xfc00);
  CHECK(f32_to_f16(std::ldexp(1.0f, -25)) == 0x0000);          // half the smallest subnormal
  CHECK(f32_to_f16(std::ldexp(1.0001f, -25)) == 0x0001);
  CHECK(f32_to_f16(std::ldexp(3.0f, -25)) == 0x0002);          // 1.5 subnormal ulps -> even
  CHECK(f32_to_f16(std::ldexp(2047.0f, -25)) == 0x0400);       // rounds up into the normals
  CHECK(f32_to_f16(1e-10f) == 0x0000);
  CHECK(f32_to_f16(-1e-10f) == 0x8000);

  // Every fp16 value survives f16 -> f32 -> f16 unchanged.
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    auto f = f16_to_f32(static_cast<std::uint16_t>(h));
    if (std::isnan(f))
      continue;
    if (f32_to_f16(f) != h)
      FAIL("fp16 round trip failed for 0x" << std::hex << h);
  }

#ifdef __FLT16_MAX__
  // The compiler's own float -> _Float16 conversion (round to nearest even) as a reference.
  for (std::uint64_t u = 0; u <= 0xffffffffu; u += 4093) {
    float f;
    auto u32 = static_cast<std::uint32_t>(u);
    std::memcpy(&f, &u32, 4);
    if (std::isnan(f))
      continue;
    _Float16 ref = static_cast<_Float16>(f);
    std::uint16_t rb;
    std::memcpy(&rb, &ref, 2);
    if (f32_to_f16(f) != rb)
      FAIL("f32_to_f16 differs from _Float16 for bits 0x" << std::hex << u32);
  }
#endif
}

TEST_CASE("bf16 conversions round to nearest even and keep NaN", "[safetensors][half]") {
  CHECK(bf16_to_f32(0x3f80) == 1.0f);
  CHECK(bf16_to_f32(0xc020) == -2.5f);
  CHECK(bf16_to_f32(0x0001) == std::ldexp(1.0f, -133)); // smallest bf16 subnormal
  CHECK(std::isinf(bf16_to_f32(0x7f80)));
  CHECK(std::isnan(bf16_to_f32(0x7fc0)));
  const float ulp = std::ldexp(1.0f, -7);
  CHECK(f32_to_bf16(1.0f) == 0x3f80);
  CHECK(f32_to_bf16(1.0f + ulp / 2) == 0x3f80);
  CHECK(f32_to_bf16(1.0f + 3 * ulp / 2) == 0x3f82);
  CHECK(f32_to_bf16(1.0f + ulp / 2 + std::ldexp(1.0f, -20)) == 0x3f81);
  CHECK(f32_to_bf16(std::numeric_limits<float>::max()) == 0x7f80); // rounds up to infinity
  CHECK(f32_to_bf16(-std::numeric_limits<float>::infinity()) == 0xff80);
  // A NaN whose payload sits only in the dropped low bits must not turn into infinity.
  float low_nan;
  std::uint32_t low_nan_bits = 0x7f800001u;
  std::memcpy(&low_nan, &low_nan_bits, 4);
  CHECK(std::isnan(bf16_to_f32(f32_to_bf16(low_nan))));
  CHECK(std::isnan(bf16_to_f32(f32_to_bf16(-std::numeric_limits<float>::quiet_NaN()))));
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    auto f = bf16_to_f32(static_cast<std::uint16_t>(b));
    if (!std::isnan(f) && f32_to_bf16(f) != b)
      FAIL("bf16 round trip failed for 0x" << std::hex << b);
  }
}

// --- writer + reader ----------------------------------------------------------------------------

TEST_CASE("every dtype and shape round-trips through write and open", "[safetensors]") {
  temp_dir dir;
  const dtype types[] = {dtype::f32, dtype::f16, dtype::bf16, dtype::f64, dtype::i64,
                         dtype::i32, dtype::i16, dtype::i8,   dtype::u8,  dtype::boolean};
  const std::vector<std::vector<std::int64_t>> shapes = {{},     {0},       {1},         {3},
                                                         {2, 3}, {2, 0, 4}, {1, 2, 3, 1}};
  std::mt19937 rng(42);
  std::vector<std::string> buffers;
  std::vector<tensor_to_write> tensors;
  for (auto t : types) {
    CHECK(parse_dtype(to_string(t)) == t);
    for (std::size_t s = 0; s < shapes.size(); ++s) {
      std::size_t n = dtype_size(t);
      for (auto d : shapes[s])
        n *= static_cast<std::size_t>(d);
      std::string data(n, '\0');
      for (auto& c : data)
        c = static_cast<char>(t == dtype::boolean ? rng() % 2 : rng() % 256);
      buffers.push_back(std::move(data));
      tensors.push_back({std::string(to_string(t)) + ".shape" + std::to_string(s), t, shapes[s],
                         nullptr, n});
    }
  }
  for (std::size_t i = 0; i < tensors.size(); ++i)
    tensors[i].data = buffers[i].data();
  const std::map<std::string, std::string> meta = {{"format", "pt"}, {"note", "ünïcode ✓"}};
  auto path = dir / "all.safetensors";
  write_safetensors(path, tensors, meta);
  CHECK_FALSE(fs::exists(path + ".tmp"));

  auto bytes = read_bytes(path);
  std::uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);
  CHECK(header_len % 8 == 0);
  CHECK(bytes[8] == '{');

  auto file = safetensors_file::open(path);
  CHECK(file.path() == path);
  CHECK(file.metadata() == meta);
  REQUIRE(file.tensors().size() == tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto& v = file.at(tensors[i].name);
    CHECK(v.type == tensors[i].type);
    CHECK(v.shape == tensors[i].shape);
    CHECK(v.nbytes == tensors[i].nbytes);
    CHECK(static_cast<std::size_t>(v.numel()) * dtype_size(v.type) == v.nbytes);
    CHECK(std::memcmp(v.data, buffers[i].data(), v.nbytes) == 0);
    // The writer orders by element size, so every tensor is aligned to it.
    CHECK(reinterpret_cast<std::uintptr_t>(v.data) % dtype_size(v.type) == 0);
  }
  CHECK(file.find("nope") == nullptr);
  CHECK_THROWS_WITH(file.at("nope"), Contains("all.safetensors") && Contains("nope"));
  for (std::size_t i = 1; i < file.tensors().size(); ++i)
    CHECK(file.tensors()[i - 1].data <= file.tensors()[i].data);

  // Moves keep the mapping (and the views into it) alive.
  const std::byte* first = file.tensors().front().data;
  safetensors_file moved(std::move(file));
  CHECK(moved.tensors().front().data == first);
  safetensors_file assigned;
  assigned = std::move(moved);
  CHECK(assigned.tensors().front().data == first);
  CHECK(assigned.find("F32.shape3") != nullptr);
  CHECK(std::memcmp(assigned.at("U8.shape4").data, buffers[8 * shapes.size() + 4].data(), 6) == 0);
}

TEST_CASE("to_float32 converts F32, F16 and BF16 exactly", "[safetensors]") {
  temp_dir dir;
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> f32 = {1.0f, -2.5f, 65504.0f, std::numeric_limits<float>::denorm_min(),
                                  inf, -inf, std::numeric_limits<float>::quiet_NaN(), -0.0f};
  const std::vector<std::uint16_t> f16 = {0x3c00, 0xc100, 0x7bff, 0x0001,
                                          0x7c00, 0xfc00, 0x7e00, 0x8000};
  const std::vector<float> f16_expected = {1.0f, -2.5f, 65504.0f, std::ldexp(1.0f, -24),
                                           inf, -inf, NAN, -0.0f};
  const std::vector<std::uint16_t> bf16 = {0x3f80, 0xc020, 0x477f, 0x0001,
                                           0x7f80, 0xff80, 0x7fc0, 0x8000};
  const std::vector<float> bf16_expected = {1.0f, -2.5f, 65280.0f, std::ldexp(1.0f, -133),
                                            inf, -inf, NAN, -0.0f};
  const std::vector<std::int32_t> ints = {1, 2};
  auto path = dir / "conv.safetensors";
  write_safetensors(path, {{"f32", dtype::f32, {2, 4}, f32.data(), 32},
                           {"f16", dtype::f16, {8}, f16.data(), 16},
                           {"bf16", dtype::bf16, {8, 1}, bf16.data(), 16},
                           {"i32", dtype::i32, {2}, ints.data(), 8}});
  auto file = safetensors_file::open(path);
  auto same = [](const std::vector<float>& got, const std::vector<float>& want) {
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (std::isnan(want[i]))
        CHECK(std::isnan(got[i]));
      else
        CHECK(bits(got[i]) == bits(want[i]));
    }
  };
  same(to_float32(file.at("f32")), f32);
  same(to_float32(file.at("f16")), f16_expected);
  same(to_float32(file.at("bf16")), bf16_expected);
  CHECK_THROWS_WITH(to_float32(file.at("i32")), Contains("i32") && Contains("I32"));

  // from_float32 is the inverse for representable values.
  std::vector<std::uint16_t> back(8);
  from_float32(f16_expected.data(), 8, dtype::f16, reinterpret_cast<std::byte*>(back.data()));
  CHECK(back == f16);
  from_float32(bf16_expected.data(), 8, dtype::bf16, reinterpret_cast<std::byte*>(back.data()));
  CHECK(back == bf16);
  CHECK_THROWS_AS(from_float32(f32.data(), 1, dtype::i8, reinterpret_cast<std::byte*>(back.data())),
                  std::invalid_argument);
}

TEST_CASE("a hand-written file is read as the format specifies", "[safetensors]") {
  temp_dir dir;
  // Offsets deliberately not in key order; tensor "c" is unaligned after the F16 data.
  const std::string header =
    R"({"__metadata__":{"format":"pt"},)"
    R"("b":{"dtype":"F16","shape":[1,2],"data_offsets":[8,12]},)"
    R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
    R"("c":{"dtype":"BF16","shape":[],"data_offsets":[12,14]},)"
    R"("e":{"dtype":"I64","shape":[0,3],"data_offsets":[14,14]}})";
  const std::string data = le_bytes<float>({0.5f, -3.0f}) + le_bytes<std::uint16_t>({0x3c00, 0xc000})
                           + le_bytes<std::uint16_t>({0x4049}); // bf16 3.140625
  for (bool pad : {true, false}) {
    auto bytes = st_bytes(header, data, pad);
    if (pad)
      REQUIRE(bytes.find("}  ") != std::string::npos); // really padded with trailing spaces
    auto path = dir / (pad ? "padded.safetensors" : "unpadded.safetensors");
    write_bytes(path, bytes);
    auto file = safetensors_file::open(path);
    CHECK(file.metadata() == std::map<std::string, std::string>{{"format", "pt"}});
    REQUIRE(file.tensors().size() == 4);
    CHECK(file.tensors()[0].name == "a");
    CHECK(file.tensors()[1].name == "b");
    CHECK(file.at("a").shape == std::vector<std::int64_t>{2});
    CHECK(to_float32(file.at("a")) == std::vector<float>{0.5f, -3.0f});
    CHECK(to_float32(file.at("b")) == std::vector<float>{1.0f, -2.0f});
    CHECK(file.at("c").shape.empty());
    CHECK(file.at("c").numel() == 1);
    CHECK(to_float32(file.at("c")) == std::vector<float>{3.140625f});
    CHECK(file.at("e").numel() == 0);
    CHECK(file.at("e").nbytes == 0);
    CHECK(file.at("e").type == dtype::i64);
  }
}

TEST_CASE("corrupt files give errors naming the file and tensor", "[safetensors]") {
  temp_dir dir;
  auto path = dir / "bad.safetensors";
  // A valid "bias" [0, 8) followed by a "weight" entry given as JSON text; 24 bytes of data.
  auto with_weight = [](const std::string& weight_entry) {
    return st_bytes(R"({"bias":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"weight":)"
                      + weight_entry + "}",
                    std::string(24, '\0'));
  };
  auto expect = [&](const std::string& bytes, std::initializer_list<const char*> parts) {
    write_bytes(path, bytes);
    auto msg = open_error(path);
    INFO(msg);
    CHECK_THAT(msg, Contains("bad.safetensors"));
    for (auto* p : parts)
      CHECK_THAT(msg, Contains(p));
  };
  // The valid baseline really opens, so each case below fails for its own reason only.
  const std::string good = with_weight(R"({"dtype":"F32","shape":[2,2],"data_offsets":[8,24]})");
  write_bytes(path, good);
  CHECK(safetensors_file::open(path).tensors().size() == 2);

  SECTION("missing file") {
    CHECK_THAT(open_error(dir / "absent.safetensors"), Contains("absent.safetensors"));
  }
  SECTION("empty file") { expect("", {"too short"}); }
  SECTION("4-byte file") { expect("abcd", {"too short"}); }
  SECTION("header length larger than the file") {
    std::string bytes = st_bytes("{}", "", false);
    bytes[0] = 100;
    expect(bytes, {"header length 100"});
  }
  SECTION("absurd header length") {
    std::string bytes = st_bytes("{}", "", false);
    bytes[5] = 1; // 2^40 bytes
    expect(bytes, {"100 MB"});
  }
  SECTION("truncated data") { expect(good.substr(0, good.size() - 3), {"weight", "truncated"}); }
  SECTION("bad JSON") { expect(st_bytes(R"({"weight": {"dtype": )", ""), {"JSON"}); }
  SECTION("header is not an object") { expect(st_bytes("[1, 2]", ""), {"not a JSON object"}); }
  SECTION("non-string metadata") {
    expect(st_bytes(R"({"__metadata__":{"step":3}})", ""), {"step"});
  }
  SECTION("missing data_offsets") {
    expect(with_weight(R"({"dtype":"F32","shape":[2,2]})"), {"weight", "data_offsets"});
  }
  SECTION("missing dtype") {
    expect(with_weight(R"({"shape":[4],"data_offsets":[8,24]})"), {"weight", "dtype"});
  }
  SECTION("shape is not an array") {
    expect(with_weight(R"({"dtype":"F32","shape":4,"data_offsets":[8,24]})"), {"weight", "shape"});
  }
  SECTION("non-integer dimension") {
    expect(with_weight(R"({"dtype":"F32","shape":[2.0,2],"data_offsets":[8,24]})"),
           {"weight", "non-integer"});
  }
  SECTION("wrong shape product") {
    expect(with_weight(R"({"dtype":"F32","shape":[3,2],"data_offsets":[8,24]})"),
           {"weight", "needs 24 bytes"});
  }
  SECTION("overlapping offsets") {
    expect(with_weight(R"({"dtype":"F32","shape":[4],"data_offsets":[4,20]})"),
           {"weight", "bias", "overlap"});
  }
  SECTION("unknown dtype") {
    expect(with_weight(R"({"dtype":"F8_E9","shape":[4],"data_offsets":[8,24]})"), {"weight", "F8_E9"});
  }
  SECTION("negative dim") {
    expect(with_weight(R"({"dtype":"F32","shape":[-2,-2],"data_offsets":[8,24]})"),
           {"weight", "negative"});
  }
  SECTION("begin after end") {
    expect(with_weight(R"({"dtype":"F32","shape":[0],"data_offsets":[24,8]})"),
           {"weight", "end before"});
  }
  SECTION("end beyond the data buffer") {
    expect(with_weight(R"({"dtype":"F32","shape":[4],"data_offsets":[16,32]})"),
           {"weight", "past the end"});
  }
}

TEST_CASE("randomly damaged headers either open cleanly or throw runtime_error", "[safetensors]") {
  temp_dir dir;
  auto path = dir / "fuzz.safetensors";
  const float data[6] = {1, 2, 3, 4, 5, 6};
  const std::uint16_t halves[3] = {1, 2, 3};
  write_safetensors(path, {{"a", dtype::f32, {2, 3}, data, 24}, {"b", dtype::f16, {3}, halves, 6}},
                    {{"k", "v"}});
  const auto original = read_bytes(path);
  const std::string alphabet = "0123456789-[]{},:\" \\ex\xff";
  std::mt19937 rng(7);
  int opened = 0;
  for (int round = 0; round < 500; ++round) {
    auto bytes = original;
    for (int k = 0; k < 1 + static_cast<int>(rng() % 3); ++k) {
      auto pos = rng() % (original.size() - 30); // mostly the length and the header
      bytes[pos] = rng() % 2 ? alphabet[rng() % alphabet.size()] : static_cast<char>(rng());
    }
    write_bytes(path, bytes);
    try {
      auto file = safetensors_file::open(path);
      ++opened;
      for (const auto& t : file.tensors()) { // every view must lie inside the mapping
        std::vector<char> copy(t.nbytes);
        if (t.nbytes > 0)
          std::memcpy(copy.data(), t.data, t.nbytes);
        CHECK(static_cast<std::size_t>(t.numel()) * dtype_size(t.type) == t.nbytes);
      }
    } catch (const std::runtime_error& e) {
      if (std::string(e.what()).find("fuzz.safetensors") == std::string::npos)
        FAIL("error without the file name: " << e.what());
    }
  }
  CHECK(opened < 500);
}

TEST_CASE("write_safetensors rejects bad input and leaves no partial file", "[safetensors]") {
  temp_dir dir;
  auto path = dir / "out.safetensors";
  const float data[4] = {1, 2, 3, 4};
  CHECK_THROWS_WITH(write_safetensors(path, {{"w", dtype::f32, {3}, data, 16}}),
                    Contains("out.safetensors") && Contains("'w'") && Contains("need 12"));
  const tensor_to_write w{"w", dtype::f32, {4}, data, 16};
  CHECK_THROWS_WITH(write_safetensors(path, {w, w}),
                    Contains("duplicate"));
  CHECK_THROWS_AS(write_safetensors(path, {{"__metadata__", dtype::f32, {4}, data, 16}}),
                  std::invalid_argument);
  CHECK_THROWS_AS(write_safetensors(path, {{"w", dtype::f32, {-1, -4}, data, 16}}),
                  std::invalid_argument);
  CHECK_FALSE(fs::exists(path));
  CHECK_THROWS_WITH(write_safetensors(dir / "no/such/dir/x.safetensors", {}), Contains("x.safetensors"));

  // A rewrite replaces the old file whole; no .tmp is left behind.
  write_safetensors(path, {{"w", dtype::f32, {4}, data, 16}});
  write_safetensors(path, {{"v", dtype::f32, {2}, data, 8}});
  CHECK_FALSE(fs::exists(path + ".tmp"));
  auto file = safetensors_file::open(path);
  CHECK(file.find("w") == nullptr);
  CHECK(to_float32(file.at("v")) == std::vector<float>{1, 2});
  CHECK(file.metadata().empty());
}

// --- gpt2_config --------------------------------------------------------------------------------

namespace {

// The config.json of Hugging Face's "gpt2" checkpoint, verbatim.
const char* const hf_gpt2_config = R"({
  "activation_function": "gelu_new",
  "architectures": [
    "GPT2LMHeadModel"
  ],
  "attn_pdrop": 0.1,
  "bos_token_id": 50256,
  "embd_pdrop": 0.1,
  "eos_token_id": 50256,
  "initializer_range": 0.02,
  "layer_norm_epsilon": 1e-05,
  "model_type": "gpt2",
  "n_ctx": 1024,
  "n_embd": 768,
  "n_head": 12,
  "n_layer": 12,
  "n_positions": 1024,
  "resid_pdrop": 0.1,
  "summary_activation": null,
  "summary_first_dropout": 0.1,
  "summary_proj_to_labels": true,
  "summary_type": "cls_index",
  "summary_use_proj": true,
  "task_specific_params": {
    "text-generation": {
      "do_sample": true,
      "max_length": 50
    }
  },
  "vocab_size": 50257
}
)";

/// hf_gpt2_config with the line for `key` replaced by `line` (or removed when `line` is empty).
std::string edited_config(const std::string& key, const std::string& line) {
  std::string text = hf_gpt2_config;
  auto pos = text.find("\"" + key + "\":");
  REQUIRE(pos != std::string::npos);
  auto end = text.find('\n', pos);
  text.replace(pos, end - pos, line);
  return text;
}

} // namespace

TEST_CASE("gpt2_config loads Hugging Face's gpt2 config.json", "[safetensors][gpt2_config]") {
  temp_dir dir;
  auto path = dir / "config.json";
  write_bytes(path, hf_gpt2_config);
  auto c = gpt2_config::load(path);
  CHECK(c.n_layer == 12);
  CHECK(c.n_head == 12);
  CHECK(c.n_embd == 768);
  CHECK(c.n_positions == 1024);
  CHECK(c.vocab_size == 50257);
  CHECK(c.n_inner == 3072);
  CHECK(c.inner_dim() == 3072);
  CHECK(c.head_dim() == 64);
  CHECK(c.layer_norm_epsilon == 1e-5);
  CHECK(c.bos_token_id == 50256);
  CHECK(c.eos_token_id == 50256);
  CHECK(c.activation_function == "gelu_new");
  CHECK_FALSE(c.exact_gelu());

  // Legacy n_ctx stands in for n_positions; "gelu" selects the exact GELU.
  write_bytes(path, edited_config("n_positions", R"("n_vocab_unused": 1,)"));
  CHECK(gpt2_config::load(path).n_positions == 1024);
  write_bytes(path, edited_config("activation_function", R"("activation_function": "gelu",)"));
  CHECK(gpt2_config::load(path).exact_gelu());
  write_bytes(path,
              edited_config("activation_function", R"("activation_function": "gelu_pytorch_tanh",)"));
  CHECK_FALSE(gpt2_config::load(path).exact_gelu());
}

TEST_CASE("gpt2_config save/load round trip", "[safetensors][gpt2_config]") {
  temp_dir dir;
  auto path = dir / "config.json";
  gpt2_config c;
  c.n_layer = 2;
  c.n_head = 4;
  c.n_embd = 64;
  c.n_positions = 128;
  c.vocab_size = 1000;
  c.n_inner = 200;
  c.layer_norm_epsilon = 1e-6;
  c.bos_token_id = 7;
  c.eos_token_id = 9;
  c.activation_function = "gelu";
  c.save(path);
  CHECK_FALSE(fs::exists(path + ".tmp"));
  auto text = read_bytes(path);
  CHECK_THAT(text, Contains(R"("architectures": [)") && Contains("GPT2LMHeadModel")
                     && Contains(R"("model_type": "gpt2")") && Contains(R"("n_ctx": 128)")
                     && Contains(R"("scale_attn_weights": true)") && Contains(R"("use_cache": true)"));
  auto d = gpt2_config::load(path);
  CHECK(d.n_layer == 2);
  CHECK(d.n_head == 4);
  CHECK(d.n_embd == 64);
  CHECK(d.n_positions == 128);
  CHECK(d.vocab_size == 1000);
  CHECK(d.n_inner == 200);
  CHECK(d.layer_norm_epsilon == 1e-6);
  CHECK(d.bos_token_id == 7);
  CHECK(d.eos_token_id == 9);
  CHECK(d.exact_gelu());

  gpt2_config plain; // n_inner 0 = 4 * n_embd, written as null like Hugging Face does
  plain.save(path);
  CHECK_THAT(read_bytes(path), Contains(R"("n_inner": null)"));
  CHECK(gpt2_config::load(path).inner_dim() == 3072);

  c.n_embd = 66;
  CHECK_THROWS_WITH(c.save(path), Contains("config.json") && Contains("n_embd"));
}

TEST_CASE("gpt2_config errors name the file and the key", "[safetensors][gpt2_config]") {
  temp_dir dir;
  auto path = dir / "config.json";
  auto expect = [&](const std::string& text, std::initializer_list<const char*> parts) {
    write_bytes(path, text);
    auto msg = load_error(path);
    INFO(msg);
    CHECK_THAT(msg, Contains("config.json"));
    for (auto* p : parts)
      CHECK_THAT(msg, Contains(p));
  };
  expect(edited_config("n_layer", ""), {"n_layer", "missing"});
  expect(edited_config("n_embd", R"("n_embd": 770,)"), {"n_embd", "n_head", "divisible"});
  expect(edited_config("n_head", R"("n_head": "12",)"), {"n_head", "integer"});
  expect(edited_config("n_layer", R"("n_layer": 12.5,)"), {"n_layer", "integer"});
  expect(edited_config("activation_function", R"("activation_function": "relu",)"),
         {"activation_function", "relu"});
  expect(edited_config("vocab_size", R"("vocab_size": 0)"), {"vocab_size", "positive"});
  expect(edited_config("layer_norm_epsilon", R"("layer_norm_epsilon": "tiny",)"),
         {"layer_norm_epsilon"});
  expect(edited_config("model_type", R"("model_type": "llama",)"), {"model_type", "llama"});
  expect(edited_config("summary_use_proj", R"("scale_attn_by_inverse_layer_idx": true,)"),
         {"scale_attn_by_inverse_layer_idx"});
  expect("{ not json", {"JSON"});
  expect("[]", {"object"});
  CHECK_THAT(load_error(dir / "missing.json"), Contains("missing.json"));
}
