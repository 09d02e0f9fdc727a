package provisioning

import (
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// dims maps the resource names one Solve sees to vector positions, so fit
// checks are a loop over int64s instead of resource.Quantity arithmetic.
type dims struct {
	names []corev1.ResourceName
	index map[corev1.ResourceName]int
	// nodes is the position of "nodes", which NodePool limits may count
	// (-1 while there is none): looked up for every type a claim may be.
	nodes int
}

func newDims() *dims {
	d := &dims{index: map[corev1.ResourceName]int{}, nodes: -1}
	for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage} {
		d.add(n)
	}
	return d
}

func (d *dims) add(n corev1.ResourceName) int {
	if i, ok := d.index[n]; ok {
		return i
	}
	d.index[n] = len(d.names)
	if n == "nodes" {
		d.nodes = len(d.names)
	}
	d.names = append(d.names, n)
	return len(d.names) - 1
}

func (d *dims) addAll(l corev1.ResourceList) {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	for _, k := range keys {
		d.add(corev1.ResourceName(k))
	}
}

// vec is a resource vector in dims order; cpu in millicores, the rest in units.
type vec []int64

func (d *dims) vec(l corev1.ResourceList) vec {
	for k := range l {
		if _, ok := d.index[k]; !ok {
			d.addAll(l) // new names, in sorted order, so positions are deterministic
			break
		}
	}
	v := make(vec, len(d.names))
	for k, q := range l {
		i := d.index[k]
		if k == corev1.ResourceCPU {
			v[i] = q.MilliValue()
		} else {
			v[i] = q.Value()
		}
	}
	return v
}

func (d *dims) list(v vec) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i, x := range v {
		if x == 0 {
			continue
		}
		n := d.names[i]
		switch n {
		case corev1.ResourceCPU:
			out[n] = *resource.NewMilliQuantity(x, resource.DecimalSI)
		case corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
			out[n] = *resource.NewQuantity(x, resource.BinarySI)
		default:
			out[n] = *resource.NewQuantity(x, resource.DecimalSI)
		}
	}
	return out
}

// get reads position i, treating missing trailing positions as zero (vectors
// built before a new resource name appeared are shorter).
func (v vec) get(i int) int64 {
	if i < len(v) {
		return v[i]
	}
	return 0
}

func (v vec) plus(o vec) vec {
	n := max(len(v), len(o))
	out := make(vec, n)
	for i := range out {
		out[i] = v.get(i) + o.get(i)
	}
	return out
}

func (v vec) minus(o vec) vec {
	n := max(len(v), len(o))
	out := make(vec, n)
	for i := range out {
		out[i] = v.get(i) - o.get(i)
	}
	return out
}

// key is v as a map key: equal for equal vectors, whatever trailing zero
// positions either has.
func (v vec) key() string {
	n := len(v)
	for n > 0 && v[n-1] == 0 {
		n--
	}
	b := make([]byte, 0, 8*n)
	for _, x := range v[:n] {
		b = strconv.AppendInt(b, x, 36)
		b = append(b, ',')
	}
	return string(b)
}

// fitsIn reports whether v ≤ capacity in every dimension.
func (v vec) fitsIn(capacity vec) bool {
	for i, x := range v {
		if x > 0 && x > capacity.get(i) {
			return false
		}
	}
	return true
}

// firstOver returns the first dimension where v exceeds capacity, or -1.
func (v vec) firstOver(capacity vec) int {
	for i, x := range v {
		if x > 0 && x > capacity.get(i) {
			return i
		}
	}
	return -1
}

// sumFitsIn reports whether a+b ≤ capacity in every dimension, without
// allocating: it runs for every pod against every candidate node.
func sumFitsIn(a, b, capacity vec) bool {
	n := max(len(a), len(b))
	for i := 0; i < n; i++ {
		x := a.get(i) + b.get(i)
		if x > 0 && x > capacity.get(i) {
			return false
		}
	}
	return true
}

// maxInto raises dst to o elementwise, growing dst as needed.
func maxInto(dst vec, o vec) vec {
	if dst == nil && len(o) > 0 {
		dst = make(vec, len(o)) // at once, not grown a zero at a time
	}
	for len(dst) < len(o) {
		dst = append(dst, 0)
	}
	for i, x := range o {
		if x > dst[i] {
			dst[i] = x
		}
	}
	return dst
}
