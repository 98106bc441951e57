package shapeml

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// SHAPEML_LIB_DIR names the directory with libshapeml.so.0 and
// libshapeml_runtime.so.0 (default: the repository's build/default).
func libDir() string {
	if d := os.Getenv("SHAPEML_LIB_DIR"); d != "" {
		return d
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "../../../build/default")
}

func openSDK(t *testing.T) *Library {
	l, err := Open(filepath.Join(libDir(), "libshapeml.so.0"))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func mlpSource(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "../../../examples/mlp.sml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const bad = `(module bad
  (func f
    (dims B S D)
    (params (x (tensor f32 (B S D) host)))
    (returns (tensor f32 (B S D D) host))
    (return (reshape x (B S D D)))))`

func code(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

func data(n int, seed uint32) []float32 {
	v := make([]float32, n)
	for i := range v {
		seed = seed*1664525 + 1013904223
		v[i] = float32((seed>>8)&0xffff)/65536 - 0.5
	}
	return v
}

func mlpInputs(b, s, d, f int) []Array {
	shapes := [][]int64{{int64(b), int64(s), int64(d)}, {int64(d), int64(f)}, {int64(f)}, {int64(f), int64(d)}, {int64(d)}}
	out := make([]Array, len(shapes))
	for i, sh := range shapes {
		n := int64(1)
		for _, x := range sh {
			n *= x
		}
		out[i] = Array{data(int(n), uint32(i+1)), sh}
	}
	return out
}

// The MLP in float64: y = gelu(x w1 + b1) w2 + b2, gelu(x) = x Phi(x).
func reference(in []Array, rows, d, f int) []float64 {
	x, w1, b1, w2, b2 := in[0].Data.([]float32), in[1].Data.([]float32), in[2].Data.([]float32), in[3].Data.([]float32), in[4].Data.([]float32)
	y := make([]float64, rows*d)
	h := make([]float64, f)
	for r := 0; r < rows; r++ {
		for j := 0; j < f; j++ {
			a := float64(b1[j])
			for k := 0; k < d; k++ {
				a += float64(x[r*d+k]) * float64(w1[k*f+j])
			}
			h[j] = a * 0.5 * (1 + math.Erf(a/math.Sqrt2))
		}
		for k := 0; k < d; k++ {
			a := float64(b2[k])
			for j := 0; j < f; j++ {
				a += h[j] * float64(w2[j*d+k])
			}
			y[r*d+k] = a
		}
	}
	return y
}

func maxErr(got []float32, want []float64) float64 {
	e := 0.0
	for i := range got {
		e = math.Max(e, math.Abs(float64(got[i])-want[i]))
	}
	return e
}

func TestVersion(t *testing.T) {
	l := openSDK(t)
	major, minor, _ := l.ABI()
	if major != ABIMajor || minor < ABIMinorMin || !strings.HasPrefix(l.Version(), "0.") || !l.HasCompiler() {
		t.Fatalf("version %s, ABI %d.%d", l.Version(), major, minor)
	}
	c, err := l.Capabilities()
	if err != nil || !c.JIT || !c.AOTBuild {
		t.Fatal(c, err)
	}
	if _, err := Open("/nonexistent/libshapeml.so.0"); code(err) != LibraryNotLoaded {
		t.Fatal(err)
	}
}

func TestCheckDiagnostics(t *testing.T) {
	l := openSDK(t)
	r, err := l.Check("mlp.sml", mlpSource(t))
	if err != nil || !r.Passed() {
		t.Fatal(err)
	}
	r.Close()
	r, err = l.Check("bad.sml", bad)
	if err != nil || r.Passed() {
		t.Fatal(err)
	}
	defer r.Close()
	ds, err := r.Diagnostics()
	if err != nil || len(ds) == 0 || ds[0].Code != "E0303" || ds[0].Line != 6 || len(ds[0].Counterexample) == 0 {
		t.Fatalf("%+v %v", ds, err)
	}
	text, _ := r.Render(false)
	json, _ := r.Render(true)
	if !strings.Contains(text, "error[E0303]") || !strings.HasPrefix(json, "[") {
		t.Fatal(text, json)
	}
}

func TestCompileIntrospectCall(t *testing.T) {
	l := openSDK(t)
	m, err := l.Compile("mlp.sml", mlpSource(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if names := m.EntryNames(); len(names) != 1 || names[0] != "mlp" {
		t.Fatal(names)
	}
	e, err := m.Entry("mlp")
	if err != nil {
		t.Fatal(err)
	}
	params, err := e.Params()
	if err != nil || len(params) != 5 || params[0].Name != "x" || params[0].Type != "(tensor T (B S D) Dv)" || params[0].DType != DTypeVariable {
		t.Fatalf("%+v %v", params, err)
	}
	if v := e.ShapeVariables(); strings.Join(v, " ") != "B S D F" {
		t.Fatal(v)
	}
	// T floating and the device variable Dv (spec §3.5).
	tv, err := e.TypeVariables()
	if err != nil || len(tv) != 2 || tv[0].Name != "T" || tv[0].IsDevice || fmt.Sprint(tv[0].DTypes) != fmt.Sprint([]DType{F32, F64, BF16}) ||
		tv[1].Name != "Dv" || !tv[1].IsDevice || tv[1].DTypes != nil {
		t.Fatalf("%+v %v", tv, err)
	}
	in := mlpInputs(2, 3, 8, 16)
	out, err := e.Call(in...)
	if err != nil {
		t.Fatal(err)
	}
	if len(out[0].Shape) != 3 || out[0].Shape[2] != 8 {
		t.Fatal(out[0].Shape)
	}
	if err := maxErr(out[0].Data.([]float32), reference(in, 6, 8, 16)); err > 1e-5 {
		t.Fatalf("max abs error %g", err)
	}
}

func TestErrors(t *testing.T) {
	l := openSDK(t)
	if _, err := l.Compile("bad.sml", bad); code(err) != CheckFailed || !strings.Contains(err.Error(), "E0303") {
		t.Fatal(err)
	}
	m, _ := l.Compile("mlp.sml", mlpSource(t))
	defer m.Close()
	if _, err := m.Entry("nope"); code(err) != NotFound {
		t.Fatal(err)
	}
	e, _ := m.Entry("mlp")
	in := mlpInputs(2, 3, 8, 16)
	in[1] = Array{data(8*15, 9), []int64{8, 15}}
	if _, err := e.Call(in...); code(err) != InvalidArgument {
		t.Fatal(err)
	}
	if _, err := e.Call(Array{[]uint8{1}, []int64{1}}); code(err) != InvalidArgument {
		t.Fatal(err)
	}
	empty := mlpInputs(2, 3, 8, 16)
	empty[0] = Array{[]float32{}, []int64{0, 3, 8}} // B=0: an empty input is data, not a crash
	if _, err := e.Call(empty...); err != nil && code(err) == 0 {
		t.Fatal(err)
	}
	if _, err := l.Load("/nonexistent/model.so"); code(err) != NotFound {
		t.Fatal(err)
	}
}

// The default target is the build machine's (as shapemlc's and every
// binding's); BuildFor takes another, which the module's manifest records.
func TestBuildTargetsNativeByDefaultAndOthersWhenAsked(t *testing.T) {
	l := openSDK(t)
	native, portable := filepath.Join(t.TempDir(), "native.so"), filepath.Join(t.TempDir(), "x86-64.so")
	if err := l.Build("mlp.sml", mlpSource(t), "mlp:T=f32,Dv=host,B=1,S=2,D=4,F=8", native); err != nil {
		t.Fatal(err)
	}
	if err := l.BuildFor("mlp.sml", mlpSource(t), "mlp:T=f32,Dv=host,B=1,S=2,D=4,F=8", portable, TargetX86_64); err != nil {
		t.Fatal(err)
	}
	has := func(path, s string) bool {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return bytes.Contains(b, []byte(s))
	}
	if !has(portable, `(target "x86-64")`) || has(native, `(target "x86-64")`) {
		t.Fatal("the manifests do not record the targets asked for")
	}
	m := loadAOTMLP(t, l, portable)
	defer m.Close()
}

// loadAOTMLP loads an AOT build of examples/mlp.sml at B=1,S=2,D=4,F=8 with l
// and checks one call against the float64 reference.
func loadAOTMLP(t *testing.T, l *Library, path string) *Module {
	t.Helper()
	m, err := l.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	e, _ := m.Entry("mlp")
	in := mlpInputs(1, 2, 4, 8)
	res, err := e.Call(in...)
	if err != nil || maxErr(res[0].Data.([]float32), reference(in, 2, 4, 8)) > 1e-5 {
		t.Fatal(err)
	}
	return m
}

// `(given H)`: the number of heads is in no input shape; CallOptions.Dims
// gives it. Values against a float64 loop; a missing H is refused by name.
func TestShapeVariablesGivenAtTheCall(t *testing.T) {
	const src = "(module given_heads\n  (func head_sums (dims B S H Dh) (given H)\n" +
		"    (params (x (tensor f32 (B S (* H Dh)) host)))\n    (returns (tensor f32 (B H S) host))\n" +
		"    (return (permute (reduce_sum (reshape x (B S H Dh)) :axes (3)) (0 2 1)))))\n"
	l := openSDK(t)
	m, err := l.Compile("given.sml", src)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	e, err := m.Entry("head_sums")
	if err != nil {
		t.Fatal(err)
	}
	if g := e.GivenShapeVariables(); len(g) != 1 || g[0] != "H" {
		t.Fatalf("given shape variables %v", g)
	}
	x := make([]float32, 2*3*12)
	for i := range x {
		x[i] = float32(i%5)*0.5 - 1
	}
	in := Array{x, []int64{2, 3, 12}}
	for _, h := range []int64{3, 6} {
		dh := 12 / h
		out, err := e.CallWith(CallOptions{Dims: map[string]int64{"H": h}}, in)
		if err != nil {
			t.Fatal(err)
		}
		y := out[0].Data.([]float32)
		want := make([]float64, 2*h*3)
		for b := int64(0); b < 2; b++ {
			for hh := int64(0); hh < h; hh++ {
				for s := int64(0); s < 3; s++ {
					for d := int64(0); d < dh; d++ {
						want[(b*h+hh)*3+s] += float64(x[(b*3+s)*12+hh*dh+d])
					}
				}
			}
		}
		if len(y) != len(want) || maxErr(y, want) > 1e-5 {
			t.Fatalf("H=%d: got %v, want %v", h, y, want)
		}
	}
	if _, err := e.Call(in); code(err) != InvalidArgument || !strings.Contains(err.Error(), "takes shape variable `H` at the call") {
		t.Fatal(err)
	}
}

// A thread count per call gives the same bits; a negative one is refused.
func TestCallWithThreadCount(t *testing.T) {
	l := openSDK(t)
	m, err := l.Compile("mlp.sml", mlpSource(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	e, _ := m.Entry("mlp")
	in := mlpInputs(4, 64, 16, 32)
	one, err := e.CallWith(CallOptions{NumThreads: 1}, in...)
	if err != nil {
		t.Fatal(err)
	}
	two, err := e.CallWith(CallOptions{NumThreads: 2}, in...)
	if err != nil {
		t.Fatal(err)
	}
	a, b := one[0].Data.([]float32), two[0].Data.([]float32)
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			t.Fatalf("element %d differs between 1 and 2 threads", i)
		}
	}
	if maxErr(a, reference(in, 4*64, 16, 32)) > 1e-4 {
		t.Fatal("wrong result")
	}
	if _, err := e.CallWith(CallOptions{NumThreads: -1}, in...); code(err) != InvalidArgument || !strings.Contains(err.Error(), "num_threads is -1") {
		t.Fatal(err)
	}
}

func TestAOTThenRuntimeLibrary(t *testing.T) {
	l := openSDK(t)
	out := filepath.Join(t.TempDir(), "mlp.so")
	if err := l.Build("mlp.sml", mlpSource(t), "mlp:T=f32,Dv=host,B=1,S=2,D=4,F=8", out); err != nil {
		t.Fatal(err)
	}
	rt, err := Open(filepath.Join(libDir(), "libshapeml_runtime.so.0"))
	if err != nil || rt.HasCompiler() {
		t.Fatal(err)
	}
	if _, err := rt.Compile("mlp.sml", mlpSource(t)); code(err) != Unimplemented {
		t.Fatal(err)
	}
	m := loadAOTMLP(t, rt, out)
	defer m.Close()
	e, _ := m.Entry("mlp")
	if _, err := e.Call(mlpInputs(2, 2, 4, 8)...); code(err) != NotFound {
		t.Fatal(err)
	}
}

func TestGoroutines(t *testing.T) {
	l := openSDK(t)
	m, _ := l.Compile("mlp.sml", mlpSource(t))
	defer m.Close()
	e, _ := m.Entry("mlp")
	var wg sync.WaitGroup
	errs := make([]float64, 8)
	for i := range errs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			in := mlpInputs(1, 2, 4, 8)
			res, err := e.Call(in...)
			if err != nil {
				errs[i] = math.Inf(1)
				return
			}
			errs[i] = maxErr(res[0].Data.([]float32), reference(in, 2, 4, 8))
		}(i)
	}
	wg.Wait()
	for _, e := range errs {
		if e > 1e-5 {
			t.Fatal(errs)
		}
	}
}
