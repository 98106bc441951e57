package shapeml

import (
	"runtime"
	"sync"
	"testing"
	"unsafe"
)

// A host allocator written in Go: C memory from CAlloc, every allocation
// and free counted and checked against what was handed out.
type countingResource struct {
	mu            sync.Mutex
	allocs, frees int
	mismatched    int
	live          map[uintptr]uintptr
}

func (r *countingResource) Allocate(bytes, alignment uintptr) unsafe.Pointer {
	p := CAlloc(bytes, alignment)
	if p == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.allocs++
	r.live[uintptr(p)] = bytes
	if uintptr(p)%alignment != 0 {
		r.mismatched++
	}
	return p
}

func (r *countingResource) Deallocate(p unsafe.Pointer, bytes, alignment uintptr) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.frees++
	if got, ok := r.live[uintptr(p)]; !ok || got != bytes {
		r.mismatched++
	}
	delete(r.live, uintptr(p))
	CFree(p)
}

// Tensors without copies: inputs and results from a Go memory resource,
// results written into caller-made tensors, DLPack out and back in (the
// same bytes); every allocation the resource made is freed at the end.
func TestTensorsMemoryResourceOutputsAndDLPack(t *testing.T) {
	l := openSDK(t)
	m, err := l.Compile("mlp.sml", mlpSource(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	e, _ := m.Entry("mlp")
	res := &countingResource{live: map[uintptr]uintptr{}}
	mem, err := l.MemoryFrom(res)
	if err != nil {
		t.Fatal(err)
	}
	in := mlpInputs(2, 8, 16, 32)
	var tensors []*Tensor
	for _, a := range in {
		x, err := l.NewTensor(a, mem)
		if err != nil {
			t.Fatal(err)
		}
		tensors = append(tensors, x)
	}
	if res.allocs != len(in) {
		t.Fatalf("%d allocations for %d inputs", res.allocs, len(in))
	}
	outs, err := e.CallTensors(CallOptions{Memory: mem}, tensors...)
	if err != nil {
		t.Fatal(err)
	}
	if res.allocs <= len(in) {
		t.Fatal("the result did not come from the Go resource")
	}
	if s := outs[0].Shape(); len(s) != 3 || s[0] != 2 || s[1] != 8 || s[2] != 16 || outs[0].DType() != F32 {
		t.Fatalf("result %v of dtype %d", s, outs[0].DType())
	}
	y, _ := outs[0].Float32s()
	if maxErr(y, reference(in, 2*8, 16, 32)) > 1e-4 {
		t.Fatal("wrong result")
	}
	// Destination passing: the result written into a tensor the caller made.
	dst, err := l.EmptyTensor(F32, []int64{2, 8, 16}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.CallTensors(CallOptions{Outputs: []*Tensor{dst}}, tensors...)
	if err != nil {
		t.Fatal(err)
	}
	z, _ := dst.Float32s()
	if got[0] != dst || len(z) != len(y) {
		t.Fatal("the provided output was not returned")
	}
	for i := range z {
		if z[i] != y[i] {
			t.Fatalf("provided output differs at %d: %v vs %v", i, z[i], y[i])
		}
	}
	wrong, _ := l.EmptyTensor(F32, []int64{2, 8, 17}, nil)
	if _, err := e.CallTensors(CallOptions{Outputs: []*Tensor{wrong}}, tensors...); code(err) != InvalidArgument {
		t.Fatal(err)
	}
	wrong.Close()
	// DLPack 1.x out and back in: zero copy.
	capsule, err := tensors[0].ToDLPack()
	if err != nil {
		t.Fatal(err)
	}
	back, err := l.FromDLPack(capsule)
	if err != nil {
		DeleteDLPack(capsule)
		t.Fatal(err)
	}
	if back.Data() != tensors[0].Data() || len(back.Shape()) != 3 {
		t.Fatal("the DLPack round trip copied")
	}
	back.Close()
	for _, x := range append(append(tensors, outs...), dst) {
		x.Close()
	}
	mem.Close()
	runtime.GC()
	res.mu.Lock()
	defer res.mu.Unlock()
	if res.frees != res.allocs || len(res.live) != 0 || res.mismatched != 0 {
		t.Fatalf("%d allocations, %d frees, %d live, %d mismatched", res.allocs, res.frees, len(res.live), res.mismatched)
	}
}
