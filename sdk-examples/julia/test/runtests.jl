# Untested (no Julia here): the checks the Rust and Go bindings run.
#   julia sdk-examples/julia/test/runtests.jl BUILD_DIR
using Test
include(joinpath(@__DIR__, "..", "Shapeml.jl"))
using .Shapeml

dir = length(ARGS) > 0 ? ARGS[1] : joinpath(@__DIR__, "..", "..", "..", "build", "default")
mlp = read(joinpath(@__DIR__, "..", "..", "..", "examples", "mlp.sml"), String)
bad = """(module bad
  (func f
    (dims B S D)
    (params (x (tensor f32 (B S D) host)))
    (returns (tensor f32 (B S D D) host))
    (return (reshape x (B S D D)))))"""

lib = Library(joinpath(dir, "libshapeml.so.0"))
@testset "shapeml" begin
    @test lib.abi[1] == 0 && lib.abi[2] >= 3
    r = check(lib, bad, "bad.sml")
    @test !r.passed && r.diagnostics[1].code == "E0303" && !isempty(r.diagnostics[1].counterexample)
    e = entry(compile(lib, mlp, "mlp.sml"), "mlp")
    @test shape_variables(e) == ["B", "S", "D", "F"]
    @test params(e)[1].type == "(tensor T (B S D) Dv)"
    B, S, D, F = 2, 3, 8, 16
    x, w1, b1, w2, b2 = randn(Float32, B, S, D), randn(Float32, D, F), randn(Float32, F), randn(Float32, F, D), randn(Float32, D)
    y, = call(e, x, w1, b1, w2, b2)
    @test size(y) == (B, S, D)
    @test_throws ShapemlError entry(compile(lib, mlp, "mlp.sml"), "nope")
    @test_throws ShapemlError compile(lib, bad, "bad.sml")
end
