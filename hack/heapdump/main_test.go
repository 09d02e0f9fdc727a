package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
)

// held is a global that keeps two versions of one pod and one of another.
var held []*corev1.Pod

// decodePod makes a pod, and nothing else, through a scheme's New as a
// decoder does.
//
//go:noinline
func decodePod(namespace, name, rv string) *corev1.Pod {
	obj, err := scheme.Scheme.New(corev1.SchemeGroupVersion.WithKind("Pod"))
	if err != nil {
		panic(err)
	}
	p := obj.(*corev1.Pod)
	p.Namespace, p.Name, p.ResourceVersion = namespace, name, rv
	return p
}

// pod decodes a pod whose strings are in the heap, as a decoder's are
// (literals are not).
func pod(name, rv string) *corev1.Pod {
	return decodePod(strings.Clone("default"), strings.Clone(name), strings.Clone(rv))
}

// TestHoldersOfPods dumps the test's own heap and finds the pods it holds,
// the global that holds them, and which of them are old versions.
func TestHoldersOfPods(t *testing.T) {
	rate := runtime.MemProfileRate
	runtime.MemProfileRate = 1
	held = []*corev1.Pod{pod("a", "7"), pod("a", "9"), pod("b", "3")}
	runtime.MemProfileRate = rate
	f, err := os.CreateTemp(t.TempDir(), "dump")
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	debug.WriteHeapDump(f.Fd())
	if _, err := f.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	d, err := Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	// As NameGlobals would from the binary's symbols (go test strips them).
	d.globals = []symbol{{uint64(uintptr(unsafe.Pointer(&held))), uint64(unsafe.Sizeof(held)), "hack/heapdump.held"}}
	r := d.Holders(Selection{Alloc: "heapdump.decodePod", Pods: true, Depth: 2})
	if r.Selected != 3 {
		t.Fatalf("%d pods selected, want 3", r.Selected)
	}
	count := func(groups []Group) (n int, roots []string) {
		for _, g := range groups {
			n += g.Count
			roots = append(roots, g.Root)
		}
		return n, roots
	}
	if n, roots := count(r.Groups); n != 2 || !strings.HasSuffix(roots[0], "heapdump.held") {
		t.Errorf("newest versions: %d held by %v; want 2 held by heapdump.held", n, roots)
	}
	if n, roots := count(r.Old); n != 1 || !strings.HasSuffix(roots[0], "heapdump.held") {
		t.Errorf("old versions: %d held by %v; want 1 (a@7) held by heapdump.held", n, roots)
	}
	if !strings.Contains(strings.Join(r.Old[0].Path, " "), "TestHoldersOfPods") {
		t.Errorf("old version's path %q; want the slice TestHoldersOfPods made", r.Old[0].Path)
	}
	held = nil
}

// TestNotADump: anything else is refused with a message, and so is a
// dump cut short.
func TestNotADump(t *testing.T) {
	if _, err := Parse(strings.NewReader("not a dump at all")); err == nil || !strings.Contains(err.Error(), "not a Go heap dump") {
		t.Errorf("Parse = %v", err)
	}
	if _, err := Parse(strings.NewReader("go1.7 heap dump\n\x01\x80")); err == nil || !strings.Contains(err.Error(), "cut-off dump") {
		t.Errorf("Parse(a dump cut short) = %v", err)
	}
}
