// Command heapdump says what holds the objects of a Go heap dump: the
// question a heap profile cannot answer (it says where the live objects
// were allocated, not who keeps them).
//
//	go run ./hack/heapdump [-alloc FUNC] [-size N] [-pods] [-depth D] [-bin BINARY] DUMP
//
// DUMP is runtime/debug.WriteHeapDump's output, such as the controller's
// /debug/heapdump (--enable-profiling) serves. Start the process with
// GODEBUG=memprofilerate=1 so that every object carries its allocation
// site; without it the dump has almost none, and nothing is selected.
//
// It selects the live objects (reachable from the data segments and the
// goroutines' frames) whose allocation stack has a function containing
// FUNC (default: an API watch's decoder, so every object an informer
// decoded) and, with -size, that size. For each, it takes the shortest
// path from a root and counts the objects by the allocation sites of the
// D objects that hold them and the root (a goroutine's frame, or with
// -bin a global variable by name). With -pods it selects of those the Pod
// structs (made by the scheme's New, of a Pod's size) and reads them; a
// pod of which a newer version (a higher resourceVersion) is live too is
// counted among the old versions, apart.
// docs/scale.md (session 33) has a run.
package main

import (
	"bufio"
	"debug/elf"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
)

func main() {
	alloc := flag.String("alloc", "StreamWatcher).receive", "select objects with a function containing this in their allocation stack")
	size := flag.Int("size", 0, "select objects of this size (a size class) only; 0: any")
	pods := flag.Bool("pods", false, "read the objects as Pod structs and count old versions apart")
	depth := flag.Int("depth", 3, "holders to name on each path")
	bin := flag.String("bin", "", "the dumped process's binary, to name global variables")
	top := flag.Int("top", 20, "groups to print")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: heapdump [flags] DUMP")
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "heapdump:", err)
		os.Exit(1)
	}
	defer func() { _ = f.Close() }()
	d, err := Parse(f)
	if err != nil {
		fmt.Fprintf(os.Stderr, "heapdump: %s: %v\n", flag.Arg(0), err)
		os.Exit(1)
	}
	if *bin != "" {
		if err := d.NameGlobals(*bin); err != nil {
			fmt.Fprintln(os.Stderr, "heapdump:", err)
			os.Exit(1)
		}
	}
	r := d.Holders(Selection{Alloc: *alloc, Size: *size, Pods: *pods, Depth: *depth})
	fmt.Printf("%d objects, %d with an allocation site; %d selected live\n", len(d.objs), d.sampled, r.Selected)
	print := func(title string, groups []Group) {
		n := 0
		for _, g := range groups {
			n += g.Count
		}
		fmt.Printf("== %s: %d\n", title, n)
		for i, g := range groups {
			if i == *top {
				break
			}
			fmt.Printf("%7d  %s\n         root: %s\n", g.Count, strings.Join(g.Path, " <= "), g.Root)
		}
	}
	if *pods {
		print("old versions (a newer version of the pod is live)", r.Old)
		print("newest live versions", r.Groups)
	} else {
		print("held", r.Groups)
	}
}

// Dump is a parsed heap dump.
type Dump struct {
	objs    []object // by address
	roots   []root
	stacks  map[uint64][]string // allocation stacks by profile bucket
	sampled int
	globals []symbol // by address, with NameGlobals
}

type object struct {
	addr   uint64
	data   []byte
	ptrs   []uint32 // offsets of pointer words in data
	bucket uint64   // allocation stack; 0: none
	header uint8    // bytes of malloc header before the object proper
}

type root struct {
	name string // a frame's function, or "data"/"bss"
	addr uint64
	data []byte
	ptrs []uint32
}

type symbol struct {
	addr, size uint64
	name       string
}

// Record tags of the dump format (runtime/heapdump.go).
const (
	tagEOF = iota
	tagObject
	tagOtherRoot
	tagType
	tagGoroutine
	tagStackFrame
	tagParams
	tagFinalizer
	tagItab
	tagOSThread
	tagMemStats
	tagQueuedFinalizer
	tagData
	tagBSS
	tagDefer
	tagPanic
	tagMemProf
	tagAllocSample
)

const header = "go1.7 heap dump\n"

// Parse reads a dump written by runtime/debug.WriteHeapDump.
func Parse(in io.Reader) (*Dump, error) {
	r := bufio.NewReaderSize(in, 1<<20)
	magic := make([]byte, len(header))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != header {
		return nil, errors.New("not a Go heap dump (it does not begin with " + strconv.Quote(header) + ")")
	}
	var err error
	u := func() uint64 {
		if err != nil {
			return 0
		}
		var v uint64
		v, err = binary.ReadUvarint(r)
		return v
	}
	str := func() []byte {
		n := u()
		if err != nil || n > 1<<32 {
			if err == nil {
				err = fmt.Errorf("a field of %d bytes", n)
			}
			return nil
		}
		b := make([]byte, n)
		_, err = io.ReadFull(r, b)
		return b
	}
	skip := func(n int) {
		for range n {
			u()
		}
	}
	fields := func() []uint32 {
		var out []uint32
		for err == nil {
			if kind := u(); kind == 0 {
				break
			}
			out = append(out, uint32(u()))
		}
		return out
	}
	d := &Dump{stacks: map[uint64][]string{}}
	samples := map[uint64]uint64{}
	for err == nil {
		switch tag := u(); tag {
		case tagEOF:
			return d.index(samples), nil
		case tagObject:
			a := u()
			data := str()
			d.objs = append(d.objs, object{addr: a, data: data, ptrs: fields()})
		case tagOtherRoot:
			str()
			a := u()
			d.roots = append(d.roots, root{name: "other", data: binary.LittleEndian.AppendUint64(nil, a), ptrs: []uint32{0}})
		case tagType:
			skip(2)
			str()
			u()
		case tagGoroutine:
			skip(8)
			str()
			skip(4)
		case tagStackFrame:
			sp := u()
			skip(2)
			data := str()
			skip(3)
			name := string(str())
			d.roots = append(d.roots, root{name: name, addr: sp, data: data, ptrs: fields()})
		case tagParams:
			skip(4)
			str()
			str()
			u()
		case tagFinalizer, tagQueuedFinalizer:
			a := u()
			skip(4)
			d.roots = append(d.roots, root{name: "finalizer", data: binary.LittleEndian.AppendUint64(nil, a), ptrs: []uint32{0}})
		case tagItab:
			skip(2)
		case tagOSThread:
			skip(3)
		case tagMemStats:
			skip(24 + 256 + 1)
		case tagData, tagBSS:
			a := u()
			data := str()
			d.roots = append(d.roots, root{name: map[uint64]string{tagData: "data", tagBSS: "bss"}[tag], addr: a, data: data, ptrs: fields()})
		case tagDefer:
			skip(7)
		case tagPanic:
			skip(6)
		case tagMemProf:
			b := u()
			u()
			n := u()
			var stk []string
			for i := uint64(0); i < n && err == nil; i++ {
				stk = append(stk, string(str()))
				str()
				u()
			}
			skip(2)
			d.stacks[b] = stk
		case tagAllocSample:
			p := u()
			samples[p] = u()
		default:
			if err == nil {
				err = fmt.Errorf("unknown record %d", tag)
			}
		}
	}
	return nil, fmt.Errorf("a damaged or cut-off dump (write it again, whole): %w", err)
}

// index sorts the objects and gives each its allocation stack. An object
// with a malloc header (one larger than 512 bytes with pointers) is
// dumped from its slot, 8 bytes before the address its sample has.
func (d *Dump) index(samples map[uint64]uint64) *Dump {
	sort.Slice(d.objs, func(i, j int) bool { return d.objs[i].addr < d.objs[j].addr })
	for i := range d.objs {
		o := &d.objs[i]
		if b, ok := samples[o.addr]; ok {
			o.bucket = b
		} else if b, ok := samples[o.addr+8]; ok {
			o.bucket, o.header = b, 8
		}
		if o.bucket != 0 {
			d.sampled++
		}
	}
	return d
}

// NameGlobals reads the symbols of the dumped process's binary, to name
// the global variables that hold objects.
func (d *Dump) NameGlobals(bin string) error {
	f, err := elf.Open(bin)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	syms, err := f.Symbols()
	if err != nil {
		return fmt.Errorf("%s: %w", bin, err)
	}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_OBJECT && s.Size > 0 {
			d.globals = append(d.globals, symbol{s.Value, s.Size, s.Name})
		}
	}
	sort.Slice(d.globals, func(i, j int) bool { return d.globals[i].addr < d.globals[j].addr })
	return nil
}

func (d *Dump) global(addr uint64) string {
	i := sort.Search(len(d.globals), func(i int) bool { return d.globals[i].addr > addr }) - 1
	if i >= 0 && addr < d.globals[i].addr+d.globals[i].size {
		return d.globals[i].name
	}
	return ""
}

// find is the object holding address p, or -1.
func (d *Dump) find(p uint64) int {
	i := sort.Search(len(d.objs), func(i int) bool { return d.objs[i].addr > p }) - 1
	if i >= 0 && p < d.objs[i].addr+uint64(len(d.objs[i].data)) {
		return i
	}
	return -1
}

// Selection says which objects Holders counts.
type Selection struct {
	Alloc string
	Size  int
	Pods  bool
	Depth int
}

// Group is a number of objects held along the same path.
type Group struct {
	Count int
	// Path are the allocation sites of the objects that hold them, the
	// nearest first (each its first two functions outside the runtime).
	Path []string
	Root string
}

// Report is what Holders found.
type Report struct {
	Selected int
	Groups   []Group // with Pods, the newest live version of each pod
	Old      []Group // with Pods, the older live versions
}

// Holders walks the heap from its roots, shortest paths first, and
// groups the selected live objects by what holds them.
func (d *Dump) Holders(sel Selection) Report {
	parent := make([]int32, len(d.objs))
	rootOf := make([]int32, len(d.objs))
	slotOf := make([]uint64, len(d.objs))
	for i := range parent {
		parent[i] = -2 // not reached
	}
	var queue []int
	reach := func(j int, from int32, ri int32, slot uint64) {
		if j >= 0 && parent[j] == -2 {
			parent[j], rootOf[j], slotOf[j] = from, ri, slot
			queue = append(queue, j)
		}
	}
	for ri, rt := range d.roots {
		for _, off := range rt.ptrs {
			if int(off)+8 <= len(rt.data) {
				reach(d.find(binary.LittleEndian.Uint64(rt.data[off:])), -1, int32(ri), rt.addr+uint64(off))
			}
		}
	}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		o := &d.objs[i]
		for _, off := range o.ptrs {
			if int(off)+8 <= len(o.data) {
				reach(d.find(binary.LittleEndian.Uint64(o.data[off:])), int32(i), rootOf[i], slotOf[i])
			}
		}
	}
	type version struct {
		i  int
		rv int
	}
	var rep Report
	byName := map[string][]version{}
	count := map[string]*Group{}
	old := map[string]*Group{}
	add := func(m map[string]*Group, i int) {
		var path []string
		for j := int(parent[i]); j >= 0 && len(path) < sel.Depth; j = int(parent[j]) {
			path = append(path, d.site(j))
		}
		rt := d.roots[rootOf[i]]
		where := rt.name
		if g := d.global(slotOf[i]); g != "" && (rt.name == "data" || rt.name == "bss") {
			where = rt.name + " " + g
		}
		k := strings.Join(path, "\x00") + "\x01" + where
		if m[k] == nil {
			m[k] = &Group{Path: path, Root: where}
		}
		m[k].Count++
	}
	for i := range d.objs {
		o := &d.objs[i]
		if parent[i] == -2 || o.bucket == 0 || (sel.Size != 0 && len(o.data) != sel.Size) || !d.allocatedIn(o, sel.Alloc) {
			continue
		}
		if sel.Pods && !d.isPod(o) {
			continue
		}
		rep.Selected++
		if !sel.Pods {
			add(count, i)
			continue
		}
		name := d.podString(o, podNamespace) + "/" + d.podString(o, podName)
		rv, _ := strconv.Atoi(d.podString(o, podResourceVersion))
		byName[name] = append(byName[name], version{i, rv})
	}
	for _, vs := range byName {
		newest := 0
		for _, v := range vs {
			newest = max(newest, v.rv)
		}
		for _, v := range vs {
			if v.rv == newest {
				add(count, v.i)
			} else {
				add(old, v.i)
			}
		}
	}
	sorted := func(m map[string]*Group) []Group {
		var out []Group
		for _, g := range m {
			out = append(out, *g)
		}
		sort.Slice(out, func(i, j int) bool {
			if out[i].Count != out[j].Count {
				return out[i].Count > out[j].Count
			}
			return out[i].Root+strings.Join(out[i].Path, "") < out[j].Root+strings.Join(out[j].Path, "")
		})
		return out
	}
	rep.Groups, rep.Old = sorted(count), sorted(old)
	return rep
}

func (d *Dump) allocatedIn(o *object, fn string) bool {
	for _, f := range d.stacks[o.bucket] {
		if strings.Contains(f, fn) {
			return true
		}
	}
	return false
}

// site names an object by its allocation: the first two functions of its
// stack outside the runtime, reflect and internal packages.
func (d *Dump) site(i int) string {
	stk, ok := d.stacks[d.objs[i].bucket]
	if !ok {
		return "?"
	}
	var keep []string
	for _, f := range stk {
		if strings.HasPrefix(f, "runtime.") || strings.HasPrefix(f, "reflect.") || strings.HasPrefix(f, "internal/") {
			continue
		}
		keep = append(keep, f)
		if len(keep) == 2 {
			break
		}
	}
	return strings.Join(keep, "<")
}

// isPod: the object is a Pod struct a decoder made (the scheme's New makes
// the struct, Unmarshal what it holds), in the size class a Pod takes: at
// least its size and its malloc header, within the classes' spacing.
func (d *Dump) isPod(o *object) bool {
	size := int(unsafe.Sizeof(corev1.Pod{})) + int(o.header)
	return o.header > 0 && len(o.data) >= size && len(o.data) < size+256 && d.allocatedIn(o, "runtime.(*Scheme).New")
}

// Where a Pod struct keeps the strings read with -pods.
var (
	podNamespace       = unsafe.Offsetof(corev1.Pod{}.Namespace) // from the Pod's start, through ObjectMeta
	podName            = unsafe.Offsetof(corev1.Pod{}.Name)
	podResourceVersion = unsafe.Offsetof(corev1.Pod{}.ResourceVersion)
)

// podString reads the string at offset off of a Pod struct in the dump.
func (d *Dump) podString(o *object, off uintptr) string {
	at := int(o.header) + int(off)
	if at+16 > len(o.data) {
		return ""
	}
	p, n := binary.LittleEndian.Uint64(o.data[at:]), binary.LittleEndian.Uint64(o.data[at+8:])
	j := d.find(p)
	if j < 0 || n > 1<<12 {
		return ""
	}
	start := p - d.objs[j].addr
	if start+n > uint64(len(d.objs[j].data)) {
		return ""
	}
	return string(d.objs[j].data[start : start+n])
}
