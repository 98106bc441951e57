// shapemlc: a thin command line over the shapeml library.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "check/checker.h"
#include "syntax/parser.h"
#include "syntax/sexpr.h"

namespace {

const char* kUsage = R"(usage: shapemlc COMMAND [OPTIONS] FILE...

Commands:
  check FILE...          parse and type-check; exit 0 only when every file checks.
                         Diagnostics go to stderr.
  fmt FILE               print FILE in canonical layout (comments kept) to stdout.
  --emit=STAGE FILE      stop after STAGE and print it to stdout:
                           ast    the parsed program, canonical layout
                           typed  the typed IR in A-normal form

Options for check:
  --format=text|json     diagnostics as text (default) or one JSON array per file
  --timeout-ms=N         Z3 budget per shape obligation (default 2000)
  --dump-obligations DIR write every discharged obligation as SMT-LIB 2 into DIR
  --stats                print per-file statistics to stdout

Other:
  -h, --help             this text
  --version              the version

Exit status: 0 success, 1 the program has errors, 2 bad usage or unreadable file.
)";

bool read_file(const std::string& path, std::string& out, std::string& err) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    err = "is a directory";
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    err = std::strerror(errno);
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) {
    err = "read error";
    return false;
  }
  out = ss.str();
  return true;
}

void print_diags(const shapeml::check::CheckResult& r, bool json) {
  const auto& src = *r.source;
  if (json) {
    std::string s = "[";
    for (size_t i = 0; i < r.diags.all().size(); ++i) s += (i ? ",\n " : "") + shapeml::syntax::render_json(r.diags.all()[i], src);
    std::cerr << s << "]\n";
    return;
  }
  for (const auto& d : r.diags.all()) std::cerr << shapeml::syntax::render_text(d, src) << "\n";
}

std::string sanitize(const std::string& s) {
  std::string r;
  for (char c : s) r += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-') ? c : '_';
  return r;
}

int dump_obligations(const shapeml::check::CheckResult& r, const std::string& file, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    std::cerr << "shapemlc: cannot create " << dir << ": " << ec.message() << "\n";
    return 2;
  }
  std::string stem = sanitize(std::filesystem::path(file).stem().string());
  for (size_t i = 0; i < r.obligations.size(); ++i) {
    const auto& o = r.obligations[i];
    using K = shapeml::smt::Outcome::Kind;
    std::string expect = o.outcome.kind == K::Proved ? "unsat" : o.outcome.kind == K::Refuted ? "sat" : "unknown";
    std::ostringstream name;
    name << dir << "/" << stem << "." << sanitize(o.function) << "." << i << ".smt2";
    std::ofstream out(name.str());
    out << "; shapeml obligation\n; source: " << file << ":" << o.line << "\n; function: " << o.function << "\n; rule: " << o.code
        << "\n; goal: " << o.goal << "\n; expect: " << expect << "\n";
    if (o.outcome.kind == K::Refuted) {
      out << "; counterexample:";
      for (const auto& [k, v] : o.outcome.counterexample) out << " " << k << "=" << v;
      out << "\n";
    }
    out << o.smtlib;
    if (!out) {
      std::cerr << "shapemlc: cannot write " << name.str() << "\n";
      return 2;
    }
  }
  return 0;
}

int cmd_check(const std::vector<std::string>& files, bool json, unsigned timeout, const std::string& dump, bool stats) {
  int rc = 0;
  for (const auto& f : files) {
    std::string text, err;
    if (!read_file(f, text, err)) {
      std::cerr << "shapemlc: cannot read " << f << ": " << err << "\n";
      rc = 2;
      continue;
    }
    shapeml::check::CheckOptions o;
    o.obligation_timeout_ms = timeout;
    o.record_obligations = !dump.empty();
    auto r = shapeml::check::check_source(f, std::move(text), o);
    if (!r.diags.all().empty() || json) print_diags(r, json);
    if (!r.ok() && rc == 0) rc = 1;
    if (!dump.empty()) {
      int d = dump_obligations(r, f, dump);
      if (d) rc = d;
    }
    if (stats) {
      const auto& s = r.stats;
      std::printf("%s: %s, %zu function(s), %zu binding(s), %zu obligation(s) (%zu by normalization, %zu Z3 queries), "
                  "parse %.2f ms, check %.2f ms, Z3 %.2f ms\n",
                  f.c_str(), r.ok() ? "ok" : "errors", s.functions, s.bindings, s.solver.obligations, s.solver.syntactic, s.solver.z3_queries,
                  s.parse_seconds * 1e3, s.check_seconds * 1e3, s.solver.z3_seconds * 1e3);
    }
  }
  return rc;
}

int cmd_fmt(const std::string& f) {
  std::string text, err;
  if (!read_file(f, text, err)) {
    std::cerr << "shapemlc: cannot read " << f << ": " << err << "\n";
    return 2;
  }
  shapeml::syntax::SourceFile src(f, text);
  shapeml::syntax::DiagnosticSink diags;
  auto sx = shapeml::syntax::read_sexprs(src, diags);
  if (diags.error_count()) {
    for (const auto& d : diags.all()) std::cerr << shapeml::syntax::render_text(d, src) << "\n";
    return 1;
  }
  std::cout << shapeml::syntax::format_sexprs(sx);
  return 0;
}

int cmd_emit(const std::string& stage, const std::string& f, unsigned timeout) {
  std::string text, err;
  if (!read_file(f, text, err)) {
    std::cerr << "shapemlc: cannot read " << f << ": " << err << "\n";
    return 2;
  }
  if (stage == "ast") {
    // Parse only: the AST of a program with type errors is still printable,
    // but not one with syntax errors.
    shapeml::syntax::SourceFile src(f, text);
    shapeml::syntax::DiagnosticSink diags;
    auto sx = shapeml::syntax::read_sexprs(src, diags);
    auto ast = shapeml::syntax::parse_module(sx, diags);
    if (diags.error_count() || !ast) {
      for (const auto& d : diags.all()) std::cerr << shapeml::syntax::render_text(d, src) << "\n";
      return 1;
    }
    std::cout << shapeml::syntax::print_module(*ast);
    return 0;
  }
  shapeml::check::CheckOptions o;
  o.obligation_timeout_ms = timeout;
  auto r = shapeml::check::check_source(f, std::move(text), o);
  if (!r.ok()) {
    print_diags(r, false);
    return 1;
  }
  std::cout << shapeml::ir::print_module(*r.module);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << kUsage;
    return 2;
  }
  std::string cmd, emit, dump;
  bool json = false, stats = false;
  unsigned timeout = 2000;
  std::vector<std::string> files;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      return 0;
    } else if (a == "--version") {
      std::cout << "shapemlc 0.2.0\n";
      return 0;
    } else if (a.rfind("--emit=", 0) == 0) {
      emit = a.substr(7);
      if (emit != "ast" && emit != "typed") {
        std::cerr << "shapemlc: unknown stage `" << emit << "` for --emit (expected ast or typed)\n";
        return 2;
      }
    } else if (a == "--format=json") {
      json = true;
    } else if (a == "--format=text") {
      json = false;
    } else if (a.rfind("--timeout-ms=", 0) == 0) {
      try {
        timeout = static_cast<unsigned>(std::stoul(a.substr(13)));
      } catch (...) {
        std::cerr << "shapemlc: --timeout-ms needs a number\n";
        return 2;
      }
    } else if (a == "--dump-obligations") {
      if (i + 1 >= args.size()) {
        std::cerr << "shapemlc: --dump-obligations needs a directory\n";
        return 2;
      }
      dump = args[++i];
    } else if (a == "--stats") {
      stats = true;
    } else if (a.size() > 1 && a[0] == '-') {
      std::cerr << "shapemlc: unknown option `" << a << "` (see --help)\n";
      return 2;
    } else if (cmd.empty() && emit.empty() && (a == "check" || a == "fmt")) {
      cmd = a;
    } else {
      files.push_back(a);
    }
  }
  if (files.empty()) {
    std::cerr << "shapemlc: no input file (see --help)\n";
    return 2;
  }
  if (!emit.empty()) {
    if (files.size() != 1) {
      std::cerr << "shapemlc: --emit takes exactly one file\n";
      return 2;
    }
    return cmd_emit(emit, files[0], timeout);
  }
  if (cmd == "fmt") {
    if (files.size() != 1) {
      std::cerr << "shapemlc: fmt takes exactly one file\n";
      return 2;
    }
    return cmd_fmt(files[0]);
  }
  if (cmd == "check") return cmd_check(files, json, timeout, dump, stats);
  std::cerr << "shapemlc: expected a command: check, fmt or --emit=STAGE (see --help)\n";
  return 2;
}
