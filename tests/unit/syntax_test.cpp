#include <gtest/gtest.h>

#include "syntax/parser.h"
#include "syntax/sexpr.h"

using namespace shapeml::syntax;

namespace {
SExprFile read(const std::string& text, DiagnosticSink& d) {
  static std::vector<std::unique_ptr<SourceFile>> keep;
  keep.push_back(std::make_unique<SourceFile>("t.sml", text));
  return read_sexprs(*keep.back(), d);
}
std::vector<std::string> codes(const DiagnosticSink& d) {
  std::vector<std::string> r;
  for (const auto& x : d.all()) r.push_back(x.code);
  return r;
}
const char* kMlp = R"((module m
  ; leading comment
  (func f (dims B D)
    (params (x (tensor f32 (B D) host)))
    (returns (tensor f32 (B D) host))
    (let y (relu x)) ; trailing
    (return y)))
)";
}  // namespace

TEST(Reader, ReadsAtomsAndLists) {
  DiagnosticSink d;
  auto f = read("(a 12 -3 1.5 :axes (0 1) inf)", d);
  ASSERT_TRUE(d.all().empty());
  ASSERT_EQ(f.items.size(), 1u);
  const auto& l = f.items[0].items;
  ASSERT_EQ(l.size(), 7u);
  EXPECT_EQ(l[1].kind, SExpr::Kind::Int);
  EXPECT_EQ(l[1].int_value, 12);
  EXPECT_EQ(l[2].int_value, -3);
  EXPECT_EQ(l[3].kind, SExpr::Kind::Float);
  EXPECT_DOUBLE_EQ(l[3].float_value, 1.5);
  EXPECT_EQ(l[4].kind, SExpr::Kind::Keyword);
  EXPECT_EQ(l[4].text, "axes");
  EXPECT_TRUE(l[5].is_list());
  EXPECT_EQ(l[6].kind, SExpr::Kind::Float);
}

TEST(Reader, SpansAreByteRanges) {
  DiagnosticSink d;
  auto f = read("  (add x y)", d);
  EXPECT_EQ(f.items[0].span.begin, 2u);
  EXPECT_EQ(f.items[0].span.end, 11u);
  EXPECT_EQ(f.items[0].items[1].span.begin, 7u);
}

TEST(Reader, BracketErrors) {
  DiagnosticSink d1;
  read("(a (b c)", d1);
  EXPECT_EQ(codes(d1), std::vector<std::string>{"E0002"});
  EXPECT_EQ(d1.all()[0].span.begin, 0u);  // the outermost unclosed paren
  DiagnosticSink d2;
  read("(a))", d2);
  EXPECT_EQ(codes(d2), std::vector<std::string>{"E0002"});
}

TEST(Reader, LexicalErrors) {
  DiagnosticSink d;
  read("(a \xff b # c)", d);
  EXPECT_EQ(codes(d), (std::vector<std::string>{"E0001", "E0001"}));
  DiagnosticSink d2;
  read("(a 99999999999999999999)", d2);
  EXPECT_EQ(codes(d2), std::vector<std::string>{"E0004"});
  DiagnosticSink d3;
  read("; caf\xc3\xa9 is fine in a comment\n(a)", d3);
  EXPECT_TRUE(d3.all().empty());
}

TEST(Reader, DeepNestingIsAnErrorNotACrash) {
  DiagnosticSink d;
  std::string deep(100000, '(');
  deep += std::string(100000, ')');
  read(deep, d);
  ASSERT_FALSE(d.all().empty());
  EXPECT_EQ(d.all()[0].code, "E0005");
}

TEST(Parser, ParsesAFunction) {
  DiagnosticSink d;
  auto m = parse_module(read(kMlp, d), d);
  ASSERT_TRUE(m) << (d.all().empty() ? "" : d.all()[0].message);
  ASSERT_EQ(m->funcs.size(), 1u);
  const auto& f = m->funcs[0];
  EXPECT_EQ(f.name, "f");
  EXPECT_EQ(f.dims.size(), 2u);
  ASSERT_EQ(f.params.size(), 1u);
  EXPECT_EQ(f.params[0].type.dims.size(), 2u);
  ASSERT_EQ(f.lets.size(), 1u);
  EXPECT_EQ(f.lets[0].value.op, OpKind::Relu);
  EXPECT_EQ(f.results.size(), 1u);
}

TEST(Parser, ReportsEveryMalformedFunction) {
  DiagnosticSink d;
  auto m = parse_module(read("(module m (func a (params)) (func b (params) (returns (tensor f32 () host)) (return (bogus x))))", d), d);
  ASSERT_TRUE(m);
  // `a` lacks returns and return; `b` uses an unknown operation.
  auto c = codes(d);
  EXPECT_EQ(std::count(c.begin(), c.end(), "E0003"), 2);
  EXPECT_EQ(std::count(c.begin(), c.end(), "E0103"), 1);
}

TEST(Parser, EmptyInputIsAnError) {
  DiagnosticSink d;
  EXPECT_FALSE(parse_module(read("  ; nothing\n", d), d));
  EXPECT_EQ(codes(d), std::vector<std::string>{"E0003"});
}

TEST(Printer, FormatIsIdempotentAndKeepsComments) {
  DiagnosticSink d;
  std::string once = format_sexprs(read(kMlp, d));
  std::string twice = format_sexprs(read(once, d));
  EXPECT_TRUE(d.all().empty());
  EXPECT_EQ(once, twice);
  EXPECT_NE(once.find("; leading comment"), std::string::npos);
  EXPECT_NE(once.find("; trailing"), std::string::npos);
}

TEST(Printer, AstRoundTrips) {
  DiagnosticSink d;
  auto m = parse_module(read(kMlp, d), d);
  ASSERT_TRUE(m);
  std::string p1 = print_module(*m);
  auto m2 = parse_module(read(p1, d), d);
  ASSERT_TRUE(m2);
  EXPECT_EQ(print_module(*m2), p1);
}
