package provisioning

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/podutil"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// DRAObjects are the cluster's Dynamic Resource Allocation objects a plan
// reads when its Policy models DRA (ModelDRA).
type DRAObjects struct {
	Claims    []*resourceapi.ResourceClaim
	Templates []*resourceapi.ResourceClaimTemplate
	Classes   []*resourceapi.DeviceClass
	// Slices are the devices published in the cluster: node-local ones
	// (spec.nodeName) of initialized nodes, and those any node or a node
	// selector reaches.
	Slices []*resourceapi.ResourceSlice
}

// Key is the objects' content, for caches keyed by what a decision read:
// each object's kind, name and resourceVersion ("" for none, or nil). An
// object without a resourceVersion gives a key no other call shares.
func (o *DRAObjects) Key() string {
	if o == nil {
		return ""
	}
	var b strings.Builder
	add := func(kind string, m metav1.Object) {
		rv := m.GetResourceVersion()
		if rv == "" {
			rv = fmt.Sprintf("%p", m)
		}
		fmt.Fprintf(&b, "%s/%s/%s@%s;", kind, m.GetNamespace(), m.GetName(), rv)
	}
	for _, c := range o.Claims {
		add("c", c)
	}
	for _, t := range o.Templates {
		add("t", t)
	}
	for _, c := range o.Classes {
		add("k", c)
	}
	for _, s := range o.Slices {
		add("s", s)
	}
	return b.String()
}

// draFeatures are the allocator's features Joiner models: prioritized
// alternatives (firstAvailable), partitionable devices (shared counters)
// and consumable capacity.
var draFeatures = structured.Features{PrioritizedList: true, PartitionableDevices: true, ConsumableCapacity: true}

// dra allocates pods' device claims over a pass, as upstream's DRA
// allocator does, with the structured allocator kube-scheduler uses:
//
//   - on an initialized node, from the slices the cluster publishes for it;
//   - on a node not initialized yet, and on a NodeClaim being planned, from
//     its instance type's device templates (cloudprovider.DeviceSlice) — for
//     a planned NodeClaim, type by type: the types whose devices cannot
//     hold the claims beside those of the pods already planned there drop
//     out, as upstream's per-type search prunes them.
//
// A device is counted once: claims allocated in the cluster hold theirs
// (unless only moving pods hold the claim), and what the pass allocates
// is held from then on. A claim several pods share goes where its first
// pod went.
type dra struct {
	claims    map[string]*resourceapi.ResourceClaim
	templates map[string]*resourceapi.ResourceClaimTemplate
	classes   classLister
	slices    []*resourceapi.ResourceSlice
	// publishers are the nodes some slice is local to (spec.nodeName).
	publishers map[string]bool
	typeOf     map[string]*cloudprovider.InstanceType
	cel        *cel.Cache
	// allocated: devices the cluster's claims and this pass hold on nodes.
	allocated *heldDevices
	// pinned: a shared claim (by namespace/name) allocated in this pass, to
	// the node or planned NodeClaim it went with.
	pinned map[string]string
	// used: template devices taken on a planned NodeClaim, per type index.
	used map[*claim]map[int]*heldDevices
}

// heldDevices are devices taken: whole ones, and shares of the devices
// that allow several allocations with what each share consumes
// (consumable capacity), as the allocator's AllocatedState has them.
type heldDevices struct {
	devices  sets.Set[structured.DeviceID]
	shared   sets.Set[structured.SharedDeviceID]
	capacity structured.ConsumedCapacityCollection
}

func newHeld() *heldDevices {
	return &heldDevices{devices: sets.New[structured.DeviceID](), shared: sets.New[structured.SharedDeviceID](),
		capacity: structured.NewConsumedCapacityCollection()}
}

// add holds allocation results: a share (ShareID set) by its ID and
// consumed capacity, any other device whole.
func (h *heldDevices) add(results ...resourceapi.DeviceRequestAllocationResult) {
	for _, r := range results {
		id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
		if r.ShareID == nil {
			h.devices.Insert(id)
			continue
		}
		h.shared.Insert(structured.MakeSharedDeviceID(id, r.ShareID))
		if r.ConsumedCapacity != nil {
			h.capacity.Insert(structured.NewDeviceConsumedCapacity(id, r.ConsumedCapacity))
		}
	}
}

// union is h and o together, h and o unchanged.
func (h *heldDevices) union(o *heldDevices) *heldDevices {
	u := &heldDevices{devices: h.devices.Union(o.devices), shared: h.shared.Union(o.shared), capacity: h.capacity.Clone()}
	for id, c := range o.capacity {
		u.capacity.Insert(structured.DeviceConsumedCapacity{DeviceID: id, ConsumedCapacity: c})
	}
	return u
}

// state is h as the allocator reads it. The allocator does not write into
// it (it keeps what it allocates in a call to itself).
func (h *heldDevices) state() structured.AllocatedState {
	return structured.AllocatedState{AllocatedDevices: h.devices, AllocatedSharedDeviceIDs: h.shared, AggregatedCapacity: h.capacity}
}

type classLister map[string]*resourceapi.DeviceClass

func (l classLister) List() ([]*resourceapi.DeviceClass, error) {
	out := make([]*resourceapi.DeviceClass, 0, len(l))
	for _, c := range l {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (l classLister) Get(name string) (*resourceapi.DeviceClass, error) {
	if c, ok := l[name]; ok {
		return c, nil
	}
	return nil, fmt.Errorf("DeviceClass %q not found", name)
}

// newDRA reads the snapshot's DRA objects; nil unless the Policy models
// DRA. Claims held only by the moving pods (a consolidation's) give their
// devices back: the pods take their claims with them.
func newDRA(snap *Snapshot) *dra {
	if !snap.Policy.ModelDRA {
		return nil
	}
	d := &dra{claims: map[string]*resourceapi.ResourceClaim{}, templates: map[string]*resourceapi.ResourceClaimTemplate{}, classes: classLister{},
		typeOf: map[string]*cloudprovider.InstanceType{}, cel: cel.NewCache(64, cel.Features{}), allocated: newHeld(),
		pinned: map[string]string{}, used: map[*claim]map[int]*heldDevices{}}
	for _, its := range snap.InstanceTypes {
		for _, it := range its {
			d.typeOf[it.Name] = it
		}
	}
	objs := snap.DRA
	if objs == nil {
		objs = &DRAObjects{}
	}
	moving := map[string]bool{}
	for p := range snap.Moving {
		if p.UID != "" {
			moving[string(p.UID)] = true
		}
		moving[p.Namespace+"/"+p.Name] = true
	}
	for _, c := range objs.Claims {
		if c.Status.Allocation != nil && len(c.Status.ReservedFor) > 0 && onlyMoving(c, moving) {
			c = c.DeepCopy()
			c.Status.Allocation, c.Status.ReservedFor = nil, nil
		}
		d.claims[c.Namespace+"/"+c.Name] = c
		if c.Status.Allocation != nil {
			d.allocated.add(c.Status.Allocation.Devices.Results...)
		}
	}
	for _, t := range objs.Templates {
		d.templates[t.Namespace+"/"+t.Name] = t
	}
	for _, c := range objs.Classes {
		d.classes[c.Name] = c
	}
	d.slices, d.publishers = objs.Slices, map[string]bool{}
	for _, sl := range objs.Slices {
		if sl.Spec.NodeName != nil {
			d.publishers[*sl.Spec.NodeName] = true
		}
	}
	return d
}

func onlyMoving(c *resourceapi.ResourceClaim, moving map[string]bool) bool {
	for _, r := range c.Status.ReservedFor {
		if !(r.UID != "" && moving[string(r.UID)]) && !moving[c.Namespace+"/"+r.Name] {
			return false
		}
	}
	return true
}

// podClaim is one of a pod's claims: the object, its namespace/name, and
// whether pods share it (named by resourceClaimName), so that it goes
// where its first pod goes. A pod's own claim, made from a template (by
// the cluster already, or by the plan), is not shared.
type podClaim struct {
	claim  *resourceapi.ResourceClaim
	key    string
	shared bool
}

// claimsOf resolves the pod's claims, as kube-controller-manager would
// make the missing ones from their templates.
func (d *dra) claimsOf(pod *corev1.Pod) ([]podClaim, error) {
	var out []podClaim
	for _, rc := range pod.Spec.ResourceClaims {
		if rc.ResourceClaimName != nil {
			key := pod.Namespace + "/" + *rc.ResourceClaimName
			c, ok := d.claims[key]
			if !ok {
				return nil, &Reason{Code: ReasonDRAClaim, Detail: fmt.Sprintf("ResourceClaim %s not found", key)}
			}
			out = append(out, podClaim{claim: c, key: key, shared: true})
			continue
		}
		if rc.ResourceClaimTemplateName == nil {
			continue // neither: the API server refuses such a pod
		}
		if name := statusClaim(pod, rc.Name); name != "" {
			if c, ok := d.claims[pod.Namespace+"/"+name]; ok {
				out = append(out, podClaim{claim: c, key: pod.Namespace + "/" + name})
				continue
			}
		}
		key := pod.Namespace + "/" + *rc.ResourceClaimTemplateName
		t, ok := d.templates[key]
		if !ok {
			return nil, &Reason{Code: ReasonDRAClaim, Detail: fmt.Sprintf("ResourceClaimTemplate %s not found", key)}
		}
		out = append(out, podClaim{key: pod.Namespace + "/" + pod.Name + "-" + rc.Name, claim: &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Name: pod.Name + "-" + rc.Name, Namespace: pod.Namespace, Labels: t.Spec.Labels, Annotations: t.Spec.Annotations},
			Spec:       t.Spec.Spec}})
	}
	return out, nil
}

func statusClaim(pod *corev1.Pod, name string) string {
	for _, s := range pod.Status.ResourceClaimStatuses {
		if s.Name == name && s.ResourceClaimName != nil {
			return *s.ResourceClaimName
		}
	}
	return ""
}

// allocation is what a pod's claims take on one node: the devices, the
// shared claims it pins there, and each claim's result.
type allocation struct {
	devices []resourceapi.DeviceRequestAllocationResult
	pins    []string
	claims  []ClaimAllocation
}

// ClaimAllocation is the allocation one claim got: the claim (as the pod
// names it; for one made from a template, as kube-controller-manager
// would name it, <pod>-<claim>) and its result.
type ClaimAllocation struct {
	Namespace, Name string
	Result          resourceapi.AllocationResult
}

// onNode allocates the pod's claims on an existing node (nil error: they
// fit); it changes nothing.
func (d *dra) onNode(n *Node, labels map[string]string, pod *corev1.Pod) (*allocation, error) {
	claims, err := d.claimsOf(pod)
	if err != nil {
		return nil, err
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: labels}}
	slices := d.slices
	if (n.InFlight || n.Labels[v1.LabelNodeInitialized] != "true" && n.NodePool != "") && !d.publishers[n.Name] {
		// Not initialized, and its drivers have published nothing yet: its
		// type's templates stand for what they will (never both, so no
		// device counts twice).
		if it := d.typeOf[labels[corev1.LabelInstanceTypeStable]]; it != nil {
			slices = append(slices[:len(slices):len(slices)], templateSlices(it, n.Name)...)
		}
	}
	return d.allocate(node, n.Name, claims, slices, d.allocated)
}

// allocate is onNode and onClaim's common part: claims already allocated
// must have gone to this target; the others are allocated from slices.
func (d *dra) allocate(node *corev1.Node, target string, claims []podClaim, slices []*resourceapi.ResourceSlice, held *heldDevices) (*allocation, error) {
	a := &allocation{}
	var todo []*resourceapi.ResourceClaim
	for _, pc := range claims {
		if pc.shared {
			if at, ok := d.pinned[pc.key]; ok {
				if at != target {
					return nil, &Reason{Code: ReasonDRADevices, Detail: fmt.Sprintf("ResourceClaim %s goes with another pod to %s", pc.key, at)}
				}
				continue
			}
		}
		if al := pc.claim.Status.Allocation; al != nil {
			if al.NodeSelector != nil {
				sel, err := nodeaffinity.NewNodeSelector(al.NodeSelector)
				if err != nil || !sel.Match(node) {
					return nil, &Reason{Code: ReasonDRADevices, Detail: fmt.Sprintf("ResourceClaim %s is allocated to devices another node has", pc.key)}
				}
			}
			continue
		}
		todo = append(todo, pc.claim)
		if pc.shared {
			a.pins = append(a.pins, pc.key)
		}
	}
	if len(todo) == 0 {
		return a, nil
	}
	alloc, err := structured.NewAllocator(context.Background(), draFeatures, held.state(), d.classes, slices, d.cel)
	if err != nil {
		return nil, &Reason{Code: ReasonDRAClaim, Detail: err.Error()}
	}
	results, err := alloc.Allocate(context.Background(), node, todo)
	if err != nil {
		return nil, &Reason{Code: ReasonDRAClaim, Detail: err.Error()}
	}
	if results == nil {
		names := make([]string, len(todo))
		for i, c := range todo {
			names[i] = c.Name
		}
		return nil, &Reason{Code: ReasonDRADevices, Detail: "no devices left for ResourceClaim " + strings.Join(names, ", ")}
	}
	for i, r := range results {
		a.devices = append(a.devices, r.Devices.Results...)
		a.claims = append(a.claims, ClaimAllocation{Namespace: todo[i].Namespace, Name: todo[i].Name, Result: r})
	}
	return a, nil
}

// DeviceAllocator allocates pods' device claims on existing nodes, one
// pod after another, as kube-scheduler's DynamicResources plugin: what one
// pod takes, the next finds taken. A binder (kubescheduler) holds one per
// call; it is not safe for concurrent use.
type DeviceAllocator struct{ d *dra }

// NewDeviceAllocator allocates from objs; types give a node not
// initialized yet its devices (its type's templates); the claims only
// moving pods hold are free (a consolidation moves them with their pods).
func NewDeviceAllocator(objs *DRAObjects, types map[string][]*cloudprovider.InstanceType, moving map[*corev1.Pod]bool) *DeviceAllocator {
	return &DeviceAllocator{d: newDRA(&Snapshot{Policy: Policy{ModelDRA: true}, DRA: objs, InstanceTypes: types, Moving: moving})}
}

// DeviceAllocation is what a pod's claims take on a node.
type DeviceAllocation struct{ a *allocation }

// Claims are the claims allocated, with their results.
func (a *DeviceAllocation) Claims() []ClaimAllocation { return a.a.claims }

// Fits allocates the pod's claims on the node, changing nothing; the error
// is a *Reason (DeviceClaim or Devices) saying why they do not fit.
func (a *DeviceAllocator) Fits(n *Node, pod *corev1.Pod) (*DeviceAllocation, error) {
	al, err := a.d.onNode(n, n.Labels, pod)
	if err != nil {
		return nil, err
	}
	return &DeviceAllocation{a: al}, nil
}

// Commit holds what Fits found for the pod on the node.
func (a *DeviceAllocator) Commit(node string, al *DeviceAllocation) { a.d.commitNode(node, al.a) }

// commitNode holds what a pod took on an existing node.
func (d *dra) commitNode(node string, a *allocation) {
	d.allocated.add(a.devices...)
	for _, k := range a.pins {
		d.pinned[k] = node
	}
}

// onClaim keeps the candidate types of a planned NodeClaim whose devices
// hold the pod's claims beside what its pods took on that type; per type
// kept, what the pod would take. It changes nothing.
func (d *dra) onClaim(cl *claim, cand bitset, reqLabels map[string]string, pod *corev1.Pod) (bitset, map[int]*allocation, error) {
	claims, err := d.claimsOf(pod)
	if err != nil {
		return nil, nil, err
	}
	kept := cand.clone()
	per := map[int]*allocation{}
	var last error
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: cl.name, Labels: reqLabels}}
	cand.each(func(i int) bool {
		it := cl.pool.its[i].it
		held := d.allocated
		if u := d.used[cl][i]; u != nil {
			held = held.union(u)
		}
		node.Labels[corev1.LabelInstanceTypeStable] = it.Name
		a, err := d.allocate(node, cl.name, claims, templateSlices(it, cl.name), held)
		if err != nil {
			kept.clear(i)
			last = err
			return true
		}
		per[i] = a
		return true
	})
	if kept.count() == 0 {
		if last == nil {
			last = &Reason{Code: ReasonDRADevices, Detail: "no instance type has the devices"}
		}
		return nil, nil, last
	}
	return kept, per, nil
}

// commitClaim holds what a pod took on a planned NodeClaim, type by type.
func (d *dra) commitClaim(cl *claim, per map[int]*allocation) {
	m := d.used[cl]
	if m == nil {
		m = map[int]*heldDevices{}
		d.used[cl] = m
	}
	for i, a := range per {
		if m[i] == nil {
			m[i] = newHeld()
		}
		m[i].add(a.devices...)
		for _, k := range a.pins {
			d.pinned[k] = cl.name
		}
	}
}

// driversOf are the drivers whose template devices the claim's pods took,
// on any of its types, sorted.
func (d *dra) driversOf(cl *claim) []string {
	set := map[string]bool{}
	for _, h := range d.used[cl] {
		for id := range h.devices {
			set[id.Driver.String()] = true
		}
		for id := range h.shared {
			set[id.GetDeviceID().Driver.String()] = true
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	if len(out) == 0 {
		return nil
	}
	return out
}

// PublishedDrivers are the drivers that have published a complete pool of
// the node's own (spec.nodeName, or a Node owner reference): the slices at
// a pool's highest generation number its resourceSliceCount. Upstream's
// initialization waits for each driver a NodeClaim's pods were planned
// onto (v1.AnnotationDRADrivers) to be among them.
func PublishedDrivers(objs *DRAObjects, node string) map[string]bool {
	type pool struct{ driver, name string }
	type seen struct{ gen, count, observed int64 }
	pools := map[pool]*seen{}
	if objs != nil {
		for _, sl := range objs.Slices {
			own := sl.Spec.NodeName != nil && *sl.Spec.NodeName == node
			for _, ref := range sl.OwnerReferences {
				own = own || ref.Kind == "Node" && ref.Name == node
			}
			if !own {
				continue
			}
			k, gen := pool{sl.Spec.Driver, sl.Spec.Pool.Name}, sl.Spec.Pool.Generation
			switch o := pools[k]; {
			case o == nil || gen > o.gen:
				pools[k] = &seen{gen: gen, count: sl.Spec.Pool.ResourceSliceCount, observed: 1}
			case gen == o.gen:
				o.observed++
			}
		}
	}
	out := map[string]bool{}
	for k, o := range pools {
		if o.count > 0 && o.observed == o.count {
			out[k.driver] = true
		}
	}
	return out
}

// TemplateSlices are the slices a node named node of type it publishes
// once its drivers run: one pool per driver on that node, complete.
func TemplateSlices(it *cloudprovider.InstanceType, node string) []*resourceapi.ResourceSlice {
	return templateSlices(it, node)
}

func templateSlices(it *cloudprovider.InstanceType, node string) []*resourceapi.ResourceSlice {
	out := make([]*resourceapi.ResourceSlice, 0, len(it.Devices))
	for _, ds := range it.Devices {
		name := node
		out = append(out, &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-" + ds.Driver},
			Spec: resourceapi.ResourceSliceSpec{Driver: ds.Driver, NodeName: &name,
				Pool:    resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
				Devices: ds.Devices}})
	}
	return out
}

// reqLabels are the labels a node planned under reqs is sure to have:
// those of its single-valued In requirements (a slice's node selector is
// matched against them).
func reqLabels(reqs scheduling.Requirements) map[string]string {
	out := map[string]string{}
	for k, r := range reqs {
		if vals := r.Values(); len(vals) == 1 && r.Operator() == corev1.NodeSelectorOpIn {
			out[k] = vals[0]
		}
	}
	return out
}

// asksForDevices says the class's pods have device claims to allocate.
func asksForDevices(c *podClass) bool { return podutil.HasDRARequirements(c.spec) }

// DefaultDeviceClaim gives a claim's device requests the API server's
// defaults: allocationMode ExactCount, and then count 1, in a request and
// in each of its firstAvailable alternatives.
func DefaultDeviceClaim(spec *resourceapi.ResourceClaimSpec) {
	def := func(mode *resourceapi.DeviceAllocationMode, count *int64) {
		if *mode == "" {
			*mode = resourceapi.DeviceAllocationModeExactCount
		}
		if *mode == resourceapi.DeviceAllocationModeExactCount && *count == 0 {
			*count = 1
		}
	}
	for i := range spec.Devices.Requests {
		r := &spec.Devices.Requests[i]
		if r.Exactly != nil {
			def(&r.Exactly.AllocationMode, &r.Exactly.Count)
		}
		for j := range r.FirstAvailable {
			def(&r.FirstAvailable[j].AllocationMode, &r.FirstAvailable[j].Count)
		}
	}
}
