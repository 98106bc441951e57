# Shapeml.jl: Julia bindings of the shapeml C ABI, through the function
# table (shapeml_get_api) and `ccall` on its function pointers.
#
# UNTESTED: no Julia toolchain could be installed where this was written (no
# Debian 12 package, no network for the installer). It follows the Rust, Go
# and Python bindings, which are tested; see README.md in this directory.
#
#   include("sdk-examples/julia/Shapeml.jl"); using .Shapeml
#   lib = Shapeml.Library("build/default/libshapeml.so.0")
#   r = Shapeml.check(lib, read("examples/mlp.sml", String), "mlp.sml")
#   m = Shapeml.compile(lib, read("examples/mlp.sml", String), "mlp.sml")
#   e = Shapeml.entry(m, "mlp")
#   y, = Shapeml.call(e, x, w1, b1, w2, b2)   # Julia arrays, logical shapes as in the program
module Shapeml

using Libdl

export Library, ShapemlError, check, compile, build, load, entry, call, params, results, shape_variables, given_shape_variables,
       TARGET_NATIVE, TARGET_X86_64, TARGET_X86_64_V3, TARGET_X86_64_V4

const ABI_MAJOR = 0
const ABI_MINOR_MIN = 3

# shapeml_api's members after its header (struct_size, abi_major, abi_minor,
# abi_patch, compiler: 24 bytes), in order (include/shapeml.h).
const MEMBERS = (
    :version,
    :version_number,
    :status_get_code,
    :status_get_message,
    :status_free,
    :status_code_name,
    :context_create,
    :context_retain,
    :context_release,
    :check_source,
    :check_result_retain,
    :check_result_release,
    :check_result_passed,
    :check_result_diagnostic_count,
    :check_result_get_diagnostic,
    :check_result_get_note,
    :check_result_get_counterexample,
    :check_result_render,
    :memory_create_host,
    :memory_create_from_resource,
    :memory_create_statistics_adaptor,
    :memory_create_pool,
    :memory_create_logging_adaptor,
    :memory_get_statistics,
    :memory_retain,
    :memory_release,
    :tensor_create,
    :tensor_create_copy,
    :tensor_retain,
    :tensor_release,
    :tensor_dtype,
    :tensor_rank,
    :tensor_shape,
    :tensor_data,
    :tensor_byte_size,
    :tensor_dltensor,
    :tensor_export_dlpack,
    :tensor_export_dlpack_versioned,
    :tensor_import_dlpack,
    :tensor_import_dlpack_versioned,
    :tensor_load_npy,
    :tensor_save_npy,
    :npz_load,
    :npz_count,
    :npz_name,
    :npz_get,
    :npz_release,
    :module_compile,
    :module_load,
    :module_build_shared_object,
    :module_retain,
    :module_release,
    :module_entry_count,
    :module_entry_name,
    :module_lookup,
    :module_call,
    :device_count,
    :device_default_stream,
    :device_name,
    :device_synchronize,
    :entry_aot_specialization_count,
    :entry_call,
    :entry_constraint,
    :entry_constraint_count,
    :entry_get_aot_specialization,
    :entry_get_dim,
    :entry_get_tensor_info,
    :entry_name,
    :entry_param_count,
    :entry_result_count,
    :entry_shape_variable,
    :entry_shape_variable_count,
    :entry_shape_variable_is_given,
    :entry_specialize,
    :get_capabilities,
    :module_build,
    :memory_create_cuda,
    :memory_create_cuda_async,
    :memory_create_from_device_resource,
    :memory_device,
    :module_get_entry,
    :module_get_entry_at,
    :module_name,
    :module_target,
    :status_create,
    :tensor_copy_to_device,
    :tensor_copy_to_host,
    :tensor_create_uninitialized,
    :tensor_device,
    :tensor_is_read_only,
    :tensor_strides,
    :tensor_wrap,
)
const MEMBER_INDEX = Dict(m => i for (i, m) in enumerate(MEMBERS))
const HEADER_BYTES = 24

"A status from the library: its stable code, the code's name and the message."
struct ShapemlError <: Exception
    code::Int32
    name::String
    message::String
end
Base.showerror(io::IO, e::ShapemlError) = print(io, e.name, ": ", e.message)

mutable struct Library
    handle::Ptr{Cvoid}
    api::Ptr{Cvoid}
    abi::Tuple{UInt32,UInt32,UInt32}
    compiler::Bool
    context::Ptr{Cvoid}
end

"The function pointer of member `name` (an error when this library lacks it)."
function fn(lib::Library, name::Symbol)
    i = MEMBER_INDEX[name]
    size = unsafe_load(Ptr{Csize_t}(lib.api))
    off = HEADER_BYTES + 8 * (i - 1)
    off + 8 <= size || throw(ShapemlError(6, "UNIMPLEMENTED", "shapeml_$(name) is not in this (older) library"))
    p = unsafe_load(Ptr{Ptr{Cvoid}}(lib.api + off))
    p == C_NULL && throw(ShapemlError(6, "UNIMPLEMENTED", "shapeml_$(name): libshapeml_runtime.so has no compiler"))
    return p
end

"NULL -> nothing; a status -> throws ShapemlError (after freeing it)."
function check_status(lib::Library, st::Ptr{Cvoid})
    st == C_NULL && return nothing
    code = ccall(fn(lib, :status_get_code), Int32, (Ptr{Cvoid},), st)
    msg = unsafe_string(ccall(fn(lib, :status_get_message), Cstring, (Ptr{Cvoid},), st))
    name = unsafe_string(ccall(fn(lib, :status_code_name), Cstring, (Int32,), code))
    ccall(fn(lib, :status_free), Cvoid, (Ptr{Cvoid},), st)
    throw(ShapemlError(code, name, msg))
end

"Opens libshapeml.so.0 or libshapeml_runtime.so.0 and checks its ABI once."
function Library(path::AbstractString="libshapeml.so.0")
    h = Libdl.dlopen(path, Libdl.RTLD_NOW | Libdl.RTLD_LOCAL)
    get = Libdl.dlsym(h, :shapeml_get_api; throw_error=false)
    get === nothing && error("$path has no shapeml_get_api (shapeml older than 0.4?)")
    api = ccall(get, Ptr{Cvoid}, (UInt32,), ABI_MAJOR)
    api == C_NULL && error("$path does not implement ABI major $ABI_MAJOR")
    abi = (unsafe_load(Ptr{UInt32}(api + 8)), unsafe_load(Ptr{UInt32}(api + 12)), unsafe_load(Ptr{UInt32}(api + 16)))
    abi[2] >= ABI_MINOR_MIN || error("$path is ABI $(abi[1]).$(abi[2]); need $ABI_MAJOR.$ABI_MINOR_MIN or newer")
    compiler = unsafe_load(Ptr{Int32}(api + 20)) != 0
    lib = Library(h, api, abi, compiler, C_NULL)
    if compiler
        ctx = Ref{Ptr{Cvoid}}(C_NULL)
        check_status(lib, ccall(fn(lib, :context_create), Ptr{Cvoid}, (Ptr{Cvoid}, Ptr{Ptr{Cvoid}}), C_NULL, ctx))
        lib.context = ctx[]
        finalizer(l -> ccall(fn(l, :context_release), Cvoid, (Ptr{Cvoid},), l.context), lib)
    end
    return lib
end

version(lib::Library) = unsafe_string(ccall(fn(lib, :version), Cstring, ()))

# ---- checking ---------------------------------------------------------------

"One diagnostic; mirrors shapeml_diagnostic (whose layout this struct copies)."
struct RawDiagnostic
    struct_size::Csize_t
    code::Cstring
    severity::Int32
    message::Cstring
    file::Cstring
    line::UInt32
    column::UInt32
    end_line::UInt32
    end_column::UInt32
    offset::UInt32
    length::UInt32
    expected::Cstring
    actual::Cstring
    counterexample_count::Csize_t
    note_count::Csize_t
end

struct Diagnostic
    code::String
    message::String
    line::Int
    column::Int
    expected::String
    actual::String
    counterexample::Dict{String,Int64}
end

str(p::Cstring) = p == C_NULL ? "" : unsafe_string(p)

"Checks a program: (passed, diagnostics, rendered text). Errors in the program are not exceptions."
function check(lib::Library, source::AbstractString, name::AbstractString="<source>")
    r = Ref{Ptr{Cvoid}}(C_NULL)
    check_status(lib, ccall(fn(lib, :check_source), Ptr{Cvoid}, (Ptr{Cvoid}, Cstring, Ptr{UInt8}, Csize_t, Ptr{Ptr{Cvoid}}),
                            lib.context, name, source, sizeof(source), r))
    try
        passed = ccall(fn(lib, :check_result_passed), Int32, (Ptr{Cvoid},), r[]) != 0
        n = ccall(fn(lib, :check_result_diagnostic_count), Csize_t, (Ptr{Cvoid},), r[])
        diags = Diagnostic[]
        for i in 0:n-1
            d = Ref(RawDiagnostic(sizeof(RawDiagnostic), C_NULL, 0, C_NULL, C_NULL, 0, 0, 0, 0, 0, 0, C_NULL, C_NULL, 0, 0))
            check_status(lib, ccall(fn(lib, :check_result_get_diagnostic), Ptr{Cvoid}, (Ptr{Cvoid}, Csize_t, Ref{RawDiagnostic}), r[], i, d))
            cex = Dict{String,Int64}()
            for k in 0:d[].counterexample_count-1
                nm, v = Ref{Cstring}(C_NULL), Ref{Int64}(0)
                check_status(lib, ccall(fn(lib, :check_result_get_counterexample), Ptr{Cvoid},
                                        (Ptr{Cvoid}, Csize_t, Csize_t, Ref{Cstring}, Ref{Int64}), r[], i, k, nm, v))
                cex[str(nm[])] = v[]
            end
            push!(diags, Diagnostic(str(d[].code), str(d[].message), d[].line, d[].column, str(d[].expected), str(d[].actual), cex))
        end
        text = Ref{Cstring}(C_NULL)
        check_status(lib, ccall(fn(lib, :check_result_render), Ptr{Cvoid}, (Ptr{Cvoid}, Int32, Ref{Cstring}), r[], 0, text))
        return (passed=passed, diagnostics=diags, text=str(text[]))
    finally
        ccall(fn(lib, :check_result_release), Cvoid, (Ptr{Cvoid},), r[])
    end
end

# ---- modules and entries ----------------------------------------------------

mutable struct Module
    lib::Library
    handle::Ptr{Cvoid}
end

function wrap_module(lib::Library, h::Ptr{Cvoid})
    m = Module(lib, h)
    finalizer(m -> ccall(fn(m.lib, :module_release), Cvoid, (Ptr{Cvoid},), m.handle), m)
end

"JIT-compiles a program (ShapemlError CHECK_FAILED with the diagnostics if it has errors)."
function compile(lib::Library, source::AbstractString, name::AbstractString="<source>")
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check_status(lib, ccall(fn(lib, :module_compile), Ptr{Cvoid}, (Ptr{Cvoid}, Cstring, Ptr{UInt8}, Csize_t, Ptr{Cvoid}, Ptr{Ptr{Cvoid}}),
                            lib.context, name, source, sizeof(source), C_NULL, out))
    wrap_module(lib, out[])
end

"The CPU a module's code is generated for (`shapeml_target`); the default, as in shapemlc and every binding, is `TARGET_NATIVE`."
const TARGET_NATIVE, TARGET_X86_64, TARGET_X86_64_V3, TARGET_X86_64_V4 = Int32(0), Int32(1), Int32(2), Int32(3)

"Builds ahead of time; `bindings` as shapemlc build --bind, e.g. \"mlp:T=f32,Dv=host,B=2,S=8,D=16,F=32\"; `target` one of the `TARGET_*`."
function build(lib::Library, source::AbstractString, bindings::AbstractString, out::AbstractString, name::AbstractString="<source>";
               target::Int32=TARGET_NATIVE)
    check_status(lib, ccall(fn(lib, :module_build_shared_object), Ptr{Cvoid},
                            (Ptr{Cvoid}, Cstring, Ptr{UInt8}, Csize_t, Cstring, Int32, Cstring),
                            lib.context, name, source, sizeof(source), bindings, target, out))
end

"Loads an AOT-compiled module (runs its code: trusted paths only)."
function load(lib::Library, path::AbstractString)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check_status(lib, ccall(fn(lib, :module_load), Ptr{Cvoid}, (Cstring, Ptr{Cvoid}, Ptr{Ptr{Cvoid}}), path, C_NULL, out))
    wrap_module(lib, out[])
end

struct Entry
    mod::Module      # keeps the module alive
    handle::Ptr{Cvoid}
end

function entry(m::Module, name::AbstractString)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check_status(m.lib, ccall(fn(m.lib, :module_get_entry), Ptr{Cvoid}, (Ptr{Cvoid}, Cstring, Ptr{Ptr{Cvoid}}), m.handle, name, out))
    Entry(m, out[])
end

struct RawTensorInfo
    struct_size::Csize_t
    name::Cstring
    dtype::Int32
    device_type::Int32
    device_id::Int32
    rank::Csize_t
    type::Cstring
end

function infos(e::Entry, kind::Int32, count::Symbol)
    lib = e.mod.lib
    n = ccall(fn(lib, count), Csize_t, (Ptr{Cvoid},), e.handle)
    map(0:n-1) do i
        t = Ref(RawTensorInfo(sizeof(RawTensorInfo), C_NULL, 0, 0, 0, 0, C_NULL))
        check_status(lib, ccall(fn(lib, :entry_get_tensor_info), Ptr{Cvoid}, (Ptr{Cvoid}, Int32, Csize_t, Ref{RawTensorInfo}),
                                e.handle, kind, i, t))
        (name=str(t[].name), dtype=t[].dtype, rank=Int(t[].rank), type=str(t[].type))
    end
end

params(e::Entry) = infos(e, Int32(0), :entry_param_count)
results(e::Entry) = infos(e, Int32(1), :entry_result_count)
shape_variables(e::Entry) = [unsafe_string(ccall(fn(e.mod.lib, :entry_shape_variable), Cstring, (Ptr{Cvoid}, Csize_t), e.handle, i))
                             for i in 0:ccall(fn(e.mod.lib, :entry_shape_variable_count), Csize_t, (Ptr{Cvoid},), e.handle)-1]

const DTYPES = Dict(Float32 => 0, Float64 => 1, Int32 => 3, Int64 => 4)
const JULIA = Dict(v => k for (k, v) in DTYPES)

# Julia arrays are column-major, shapeml tensors row-major: a Julia array of
# size (d1, ..., dn) is passed as a tensor of shape (d1, ..., dn) holding the
# same elements at the same logical indices (one permuting copy each way).
function tensor(lib::Library, a::Array{T}) where {T}
    rowmajor = ndims(a) > 1 ? permutedims(a, ndims(a):-1:1) : copy(a)
    shape = Int64[size(a)...]
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check_status(lib, ccall(fn(lib, :tensor_create_copy), Ptr{Cvoid},
                            (Ptr{Cvoid}, Int32, Csize_t, Ptr{Int64}, Ptr{Cvoid}, Csize_t, Ptr{Ptr{Cvoid}}),
                            C_NULL, DTYPES[T], length(shape), shape, rowmajor, sizeof(rowmajor), out))
    out[]
end

function array(lib::Library, t::Ptr{Cvoid})
    T = JULIA[ccall(fn(lib, :tensor_dtype), Int32, (Ptr{Cvoid},), t)]
    rank = ccall(fn(lib, :tensor_rank), Csize_t, (Ptr{Cvoid},), t)
    shape = rank == 0 ? Int64[] : copy(unsafe_wrap(Array, ccall(fn(lib, :tensor_shape), Ptr{Int64}, (Ptr{Cvoid},), t), rank))
    data = Ptr{T}(ccall(fn(lib, :tensor_data), Ptr{Cvoid}, (Ptr{Cvoid},), t))
    flat = copy(unsafe_wrap(Array, data, prod(shape)))
    rank <= 1 && return reshape(flat, shape...)
    permutedims(reshape(flat, reverse(shape)...), length(shape):-1:1)
end

# shapeml_call_options (C layout: an isbits struct of the same members).
struct CallOptions
    struct_size::Csize_t
    memory::Ptr{Cvoid}
    outputs::Ptr{Cvoid}
    device_index::Int32
    stream::Ptr{Cvoid}
    graph::Int32
    reserved::Int32
    num_threads::Int32
    dim_names::Ptr{Cstring}
    dim_values::Ptr{Int64}
    num_dims::Csize_t
end

"The shape variables every call gives with `dims` (declared `(given ...)`)."
function given_shape_variables(e::Entry)
    lib = e.mod.lib
    n = ccall(fn(lib, :entry_shape_variable_count), Csize_t, (Ptr{Cvoid},), e.handle)
    [unsafe_string(ccall(fn(lib, :entry_shape_variable), Cstring, (Ptr{Cvoid}, Csize_t), e.handle, i))
     for i in 0:n-1 if ccall(fn(lib, :entry_shape_variable_is_given), Int32, (Ptr{Cvoid}, Csize_t), e.handle, i) != 0]
end

"""Calls the entry on Julia arrays; returns a tuple of arrays (copies).
`dims`: the values of the entry's given shape variables, e.g. `dims = Dict("H" => 4)`."""
function call(e::Entry, args::Array...; dims::AbstractDict = Dict{String,Int}())
    lib = e.mod.lib
    ins = [tensor(lib, a) for a in args]
    n_out = ccall(fn(lib, :entry_result_count), Csize_t, (Ptr{Cvoid},), e.handle)
    outs = fill(C_NULL, n_out)
    names = [String(k) for k in keys(dims)]
    values = Int64[dims[k] for k in keys(dims)]
    try
        GC.@preserve names values begin
            cnames = [Base.unsafe_convert(Cstring, n) for n in names]
            GC.@preserve cnames begin
                opts = Ref(CallOptions(sizeof(CallOptions), C_NULL, C_NULL, 0, C_NULL, 0, 0, 0,
                                       isempty(cnames) ? Ptr{Cstring}(C_NULL) : pointer(cnames),
                                       isempty(values) ? Ptr{Int64}(C_NULL) : pointer(values), length(values)))
                check_status(lib, ccall(fn(lib, :entry_call), Ptr{Cvoid},
                                        (Ptr{Cvoid}, Ptr{Ptr{Cvoid}}, Csize_t, Ptr{Ptr{Cvoid}}, Csize_t, Ref{CallOptions}),
                                        e.handle, ins, length(ins), outs, n_out, opts))
            end
        end
        return Tuple(array(lib, t) for t in outs)
    finally
        for t in vcat(ins, outs)
            ccall(fn(lib, :tensor_release), Cvoid, (Ptr{Cvoid},), t)
        end
    end
end

end # module
