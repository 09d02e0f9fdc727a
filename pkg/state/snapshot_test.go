package state

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/disruption"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
)

// held is everything a Store hands out at one moment.
type held struct {
	snap     *provisioning.Snapshot
	dc       *disruption.Snapshot
	nodes    []*Node
	view     *provisioning.Node // a registered node's
	inFlight *provisioning.Node // an unlaunched claim's, sized from the instance types
	pending  []*corev1.Pod
	volumes  provisioning.Volumes
	cluster  *Objects
	dsPods   []*corev1.Pod
}

func driftGeneral0(nc *v1.NodeClaim) cloudprovider.DriftReason {
	if nc.Name == "general-0" {
		return "AMIDrift"
	}
	return ""
}

func take(s *Store) *held {
	return &held{snap: s.ProvisioningSnapshot(), dc: s.DisruptionSnapshot(t0, driftGeneral0), nodes: s.Nodes(),
		view: s.View("node-0"), inFlight: s.View("general-new"), pending: s.PendingPods(), volumes: s.Volumes(),
		cluster: s.Objects(), dsPods: s.DaemonSetPods()}
}

// describe reads every part of what was handed out, as text.
func (h *held) describe() string {
	var b strings.Builder
	b.WriteString("provisioning snapshot\n")
	describeConfig(&b, h.snap.NodePools, h.snap.InstanceTypes, h.snap.DaemonSets)
	for _, n := range h.snap.Nodes {
		describeNode(&b, n)
	}
	fmt.Fprintf(&b, "pods %s\n", podNames(h.snap.Pods))
	describeVolumes(&b, h.snap.Volumes)

	b.WriteString("disruption cluster\n")
	fmt.Fprintf(&b, "now %s\n", h.dc.Now)
	describeConfig(&b, h.dc.NodePools, h.dc.InstanceTypes, h.dc.DaemonSets)
	for _, c := range h.dc.Nodes {
		fmt.Fprintf(&b, "candidate claim=%s pool=%s type=%s zone=%s ct=%s price=%v init=%v disrupting=%v notready=%v registered=%v drift=%q\n",
			objName(c.NodeClaim), c.NodePool, c.InstanceType, c.Zone, c.CapacityType, c.Price, c.Initialized, c.Disrupting, c.NotReady, c.Registered, c.NodeClassDrift)
		for _, cond := range c.Conditions {
			fmt.Fprintf(&b, "  condition %s=%s\n", cond.Type, cond.Status)
		}
		fmt.Fprintf(&b, "  reschedulable %s\n", podNames(c.Reschedulable))
		describeNode(&b, c.Node)
	}
	for _, n := range h.dc.Unmanaged {
		b.WriteString("unmanaged ")
		describeNode(&b, n)
	}
	for _, p := range h.dc.PDBs {
		fmt.Fprintf(&b, "pdb %s allowed=%d\n", objName(p), p.Status.DisruptionsAllowed)
	}
	fmt.Fprintf(&b, "pending %s\n", podNames(h.dc.Pending))
	describeVolumes(&b, h.dc.Volumes)

	b.WriteString("nodes\n")
	for _, n := range h.nodes {
		fmt.Fprintf(&b, "node %s claim %s pods %s\n", objName(n.Node), objName(n.NodeClaim), podNames(n.Pods))
	}
	b.WriteString("view ")
	describeNode(&b, h.view)
	b.WriteString("in-flight view ")
	describeNode(&b, h.inFlight)
	fmt.Fprintf(&b, "pending pods %s\n", podNames(h.pending))
	describeVolumes(&b, h.volumes)
	fmt.Fprintf(&b, "daemonset pods %s\n", podNames(h.dsPods))

	c := h.cluster
	b.WriteString("cluster\n")
	describeConfig(&b, c.NodePools, c.InstanceTypes, nil)
	fmt.Fprintf(&b, "claims %s\nnodes %s\npods %s\n", objNames(c.NodeClaims), objNames(c.Nodes), podNames(c.Pods))
	fmt.Fprintf(&b, "daemonsets %s\npdbs %s\n", objNames(c.DaemonSets), objNames(c.PDBs))
	fmt.Fprintf(&b, "pvcs %s\npvs %s\nclasses %s complete=%v\n", objNames(c.PersistentVolumeClaims), objNames(c.PersistentVolumes), objNames(c.StorageClasses), c.VolumesComplete)
	return b.String()
}

func describeConfig(b *strings.Builder, pools []*v1.NodePool, its map[string][]*cloudprovider.InstanceType, ds []*corev1.Pod) {
	fmt.Fprintf(b, "nodepools %s\n", objNames(pools))
	for _, pool := range slices.Sorted(maps.Keys(its)) {
		fmt.Fprintf(b, "instance types of %s:", pool)
		for _, it := range its[pool] {
			fmt.Fprintf(b, " %s", it.Name)
			for _, o := range it.Offerings {
				fmt.Fprintf(b, "/%s/%s/%v", o.Zone, o.CapacityType, o.Price)
			}
		}
		b.WriteString("\n")
	}
	if ds != nil {
		fmt.Fprintf(b, "daemonsets %s\n", podNames(ds))
	}
}

func describeNode(b *strings.Builder, n *provisioning.Node) {
	if n == nil {
		b.WriteString("<nil>\n")
		return
	}
	fmt.Fprintf(b, "%s version=%q pool=%q inflight=%v deleting=%v\n", n.Name, n.Version, n.NodePool, n.InFlight, n.MarkedForDeletion)
	for _, k := range slices.Sorted(maps.Keys(n.Labels)) {
		fmt.Fprintf(b, "  label %s=%s\n", k, n.Labels[k])
	}
	for _, t := range n.Taints {
		fmt.Fprintf(b, "  taint %s=%s:%s\n", t.Key, t.Value, t.Effect)
	}
	fmt.Fprintf(b, "  allocatable %s\n  capacity %s\n  requested %s\n", resourceString(n.Allocatable), resourceString(n.Capacity), resourceString(n.Requested))
	fmt.Fprintf(b, "  pods %s\n", podNames(n.Pods))
}

func describeVolumes(b *strings.Builder, v provisioning.Volumes) {
	for _, k := range slices.Sorted(maps.Keys(v.Requirements)) {
		fmt.Fprintf(b, "volume %s requires %s\n", k, v.Requirements[k].String())
	}
	for _, k := range slices.Sorted(maps.Keys(v.Waiting)) {
		fmt.Fprintf(b, "volume %s waits: %s\n", k, v.Waiting[k])
	}
}

func resourceString(l corev1.ResourceList) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(l)) {
		q := l[k] // a copy: String caches its text in the Quantity
		out = append(out, string(k)+"="+q.String())
	}
	return strings.Join(out, ",")
}

func podNames(pods []*corev1.Pod) string {
	var out []string
	for _, p := range pods {
		out = append(out, fmt.Sprintf("%s/%s@%s:%s", p.Namespace, p.Name, p.ResourceVersion, p.Spec.NodeName))
	}
	return "[" + strings.Join(out, " ") + "]"
}

func objName(o metav1.Object) string {
	if isNil(o) {
		return "-"
	}
	return o.GetName() + "@" + o.GetResourceVersion()
}

func isNil(o any) bool {
	v := reflect.ValueOf(o)
	return o == nil || (v.Kind() == reflect.Pointer && v.IsNil())
}

func objNames[T metav1.Object](objs []T) string {
	var out []string
	for _, o := range objs {
		out = append(out, objName(o))
	}
	return "[" + strings.Join(out, " ") + "]"
}

// objects are the API objects a held snapshot reaches, each as JSON: the
// Store must write into none of them either.
func (h *held) objects(t *testing.T) map[any]string {
	out := map[any]string{}
	add := func(o any) {
		if isNil(o) {
			return
		}
		if _, ok := out[o]; ok {
			return
		}
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		out[o] = string(b)
	}
	pods := func(ps []*corev1.Pod) {
		for _, p := range ps {
			add(p)
		}
	}
	pods(h.snap.Pods)
	pods(h.snap.DaemonSets)
	for _, n := range append(append(append([]*provisioning.Node{}, h.snap.Nodes...), h.dc.Unmanaged...), h.view, h.inFlight) {
		pods(n.Pods)
	}
	for _, c := range h.dc.Nodes {
		add(c.NodeClaim)
		pods(c.Reschedulable)
		pods(c.Node.Pods)
	}
	for _, n := range h.nodes {
		add(n.Node)
		add(n.NodeClaim)
		pods(n.Pods)
	}
	pods(h.cluster.Pods)
	for _, n := range h.cluster.Nodes {
		add(n)
	}
	for _, nc := range h.cluster.NodeClaims {
		add(nc)
	}
	for _, p := range h.cluster.PDBs {
		add(p)
	}
	return out
}

// firstDifference is the first line where got and want differ.
func firstDifference(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			ctx := ""
			for j := i - 1; j >= 0; j-- { // the node or candidate the line is of
				if !strings.HasPrefix(w[j], " ") {
					ctx = w[j]
					break
				}
			}
			return fmt.Sprintf("line %d (of %q):\n  taken: %s\n  now:   %s", i+1, ctx, wl, gl)
		}
	}
	return ""
}

// churn changes a Store the way informers do, rounds times, each change a
// new object: pods added, removed and moved on the same nodes, Nodes and
// claims updated, a Node deleted and back, instance types, PDBs,
// DaemonSets and volumes replaced; and after each round takes what
// decisions take, so the views are rebuilt.
type churn struct {
	s       *Store
	rv      int
	on      [][]string // pod names per node, as the Store has them
	counter int
}

const churnNodes, churnPerNode = 4, 5

func (c *churn) next() string { c.rv++; return strconv.Itoa(c.rv) }

func (c *churn) webPod(name string, node int) *corev1.Pod {
	return pod(name, fmt.Sprintf("node-%d", node), "100m", withRV(c.next()), func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", Controller: ptr(true)}}
	})
}

func ptr[T any](v T) *T { return &v }

func pdb(rv string, allowed int32) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: rv},
		Spec:   policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web-0"}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed}}
}

func unlaunchedClaim(rv string) *v1.NodeClaim {
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "general-new", ResourceVersion: rv, Labels: map[string]string{v1.LabelNodePool: "general"},
		CreationTimestamp: metav1.NewTime(t0)}}
	nc.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		{Key: v1.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m.2x", "m.4x"}}}
	return nc
}

func newChurn(t *testing.T) *churn {
	c := &churn{s: NewStore(WaitForScheduler), on: make([][]string, churnNodes)}
	s, base := c.s, cluster()
	s.SetNodePoolsAndTypes(base.NodePools, base.InstanceTypes)
	s.SetDaemonSets(base.DaemonSets)
	s.SetPDBs([]*policyv1.PodDisruptionBudget{pdb(c.next(), 1)})
	s.SetStorageClass(storageClass("wait", storagev1.VolumeBindingWaitForFirstConsumer, "zone-a"))
	s.SetPersistentVolumeClaim(claim("data", className("wait")))
	s.SetVolumesComplete(true)
	for n := 0; n < churnNodes; n++ {
		nc, node := managedNode(n, c.next())
		s.SetNodeClaim(nc)
		s.SetNode(node)
		for i := 0; i < churnPerNode; i++ {
			name := fmt.Sprintf("web-%d", n*churnPerNode+i)
			s.SetPod(c.webPod(name, n))
			c.on[n] = append(c.on[n], name)
		}
	}
	s.SetNodeClaim(unlaunchedClaim(c.next()))
	system := base.Nodes[0].DeepCopy()
	system.ResourceVersion = c.next()
	s.SetNode(system)
	s.SetPod(pod("coredns", "system-0", "500m", withRV(c.next())))
	s.SetPod(pod("pending", "", "3", withRV(c.next())))
	s.SetPod(pod("with-volume", "", "1", withRV(c.next()), func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	}))
	s.SetPod(pod("with-ephemeral", "", "1", withRV(c.next()), func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
			VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr("wait")}}}}}}
	}))
	if dc := s.DisruptionSnapshot(t0, nil); len(dc.Nodes) != churnNodes+1 || len(dc.Unmanaged) != 1 {
		t.Fatalf("%d candidates and %d unmanaged, want %d nodes and the unlaunched claim, and system-0", len(dc.Nodes), len(dc.Unmanaged), churnNodes+1)
	}
	return c
}

// round is one round of changes, then what decisions take.
func (c *churn) round(i int) {
	s := c.s
	n, m := i%churnNodes, (i+1)%churnNodes
	// A pod moves from node n to node m (deleted and recreated, as a
	// controller replaces it; the name is kept so both orders shift).
	if len(c.on[n]) > 0 {
		name := c.on[n][0]
		c.on[n] = c.on[n][1:]
		s.SetPod(c.webPod(name, m))
		c.on[m] = append(c.on[m], name)
	}
	// One goes, a new one comes, on the same node.
	if len(c.on[m]) > 1 {
		gone := c.on[m][len(c.on[m])/2]
		s.DeletePod("default", gone)
		c.on[m] = slices.DeleteFunc(c.on[m], func(p string) bool { return p == gone })
	}
	c.counter++
	name := fmt.Sprintf("web-%d", 900+c.counter%90) // sorts after the first pods
	if !slices.Contains(c.on[n], name) && !slices.Contains(c.on[m], name) {
		for k := range c.on {
			c.on[k] = slices.DeleteFunc(c.on[k], func(p string) bool { return p == name })
		}
		s.SetPod(c.webPod(name, n))
		c.on[n] = append(c.on[n], name)
	}
	// A pod already there is updated in place (a new object, a new RV).
	if len(c.on[m]) > 0 {
		s.SetPod(c.webPod(c.on[m][0], m))
	}
	// The Node and its claim are updated; now and then the Node goes and
	// comes back, tainted or not.
	nc, node := managedNode(n, c.next())
	if i%3 == 0 {
		node.Spec.Taints = []corev1.Taint{v1.DisruptedTaint}
		node.Labels["round"] = strconv.Itoa(i)
	}
	nc.Status.Allocatable = resources(strconv.Itoa(4 + i%3))
	s.SetNodeClaim(nc)
	if i%5 == 0 {
		s.DeleteNode(node.Name)
		s.ProvisioningSnapshot()
	}
	s.SetNode(node)
	s.SetNodeClaim(unlaunchedClaim(c.next()))
	// Configuration: new instance types (the unlaunched claim is resized),
	// PDBs, DaemonSets, volumes.
	if i%4 == 0 {
		its := map[string][]*cloudprovider.InstanceType{"general": {instanceType("m.2x", int64(2+i%2), 0.1+float64(i%7)/100), instanceType("m.4x", 4, 0.2)}}
		s.SetInstanceTypes(its)
	}
	s.SetPDBs([]*policyv1.PodDisruptionBudget{pdb(c.next(), int32(i%2))})
	if i%6 == 0 {
		ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("agent-%d", i), Namespace: "kube-system"}}
		ds.Spec.Template.Spec.Containers = []corev1.Container{{Name: "a", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m")}}}}
		s.SetDaemonSets([]*appsv1.DaemonSet{ds})
	}
	if i%2 == 0 {
		s.SetPersistentVolumeClaim(claim("data", volumeName("pv-data")))
	} else {
		s.SetPersistentVolumeClaim(claim("data", className("wait")))
	}
	s.SetPod(pod("pending", "", strconv.Itoa(2+i%3), withRV(c.next())))
	// What decisions take, so every view is rebuilt.
	_ = take(s)
}

// TestHeldSnapshotsDoNotChange: what a Store hands out (a provisioning
// snapshot, a disruption cluster and its candidates, the nodes, a view,
// the pending pods, volumes, an Objects) reads the same for as long as it
// is held, while the Store goes on changing and rebuilding its views. A
// disruption pass holds its candidates, and provisioning its snapshot,
// for the whole decision. Under -race this also fails if a rebuild writes
// into anything a held snapshot shares.
func TestHeldSnapshotsDoNotChange(t *testing.T) {
	c := newChurn(t)
	ctx := context.Background()
	first := take(c.s)
	want, objects := first.describe(), first.objects(t)
	solved := summarizeSolve(provisioning.Solve(ctx, first.snap))
	decided := summarizeCompute(disruption.Compute(ctx, first.dc, disruption.Options{}))

	const rounds = 300
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		for i := 0; i < rounds; i++ {
			c.round(i)
		}
	}()
	// While the Store changes: read the first snapshot, run decisions over
	// it, and take later ones and hold them a while too.
	failed := false
	check := func(what string, h *held, want string) {
		if failed {
			return
		}
		if got := h.describe(); got != want {
			failed = true
			t.Errorf("%s changed while held, at %s", what, firstDifference(want, got))
		}
	}
	var later *held
	var laterWant string
	reads := 0
	for running := true; running; reads++ {
		select {
		case <-done:
			running = false
		default:
		}
		check("the first snapshot", first, want)
		if reads%8 == 0 && !failed {
			if got := summarizeSolve(provisioning.Solve(ctx, first.snap)); got != solved {
				failed = true
				t.Errorf("provisioning over the held snapshot: %s, then %s", solved, got)
			}
			if got := summarizeCompute(disruption.Compute(ctx, first.dc, disruption.Options{})); got != decided {
				failed = true
				t.Errorf("disruption over the held cluster: %s, then %s", decided, got)
			}
		}
		if later != nil {
			check("a snapshot taken mid-churn", later, laterWant)
		}
		if reads%4 == 0 {
			later = take(c.s)
			laterWant = later.describe()
		}
	}
	wg.Wait()
	check("the first snapshot", first, want)
	if later != nil {
		check("a snapshot taken mid-churn", later, laterWant)
	}
	for o, j := range objects {
		if b, _ := json.Marshal(o); string(b) != j {
			t.Errorf("%T %s changed while held", o, objName(o.(metav1.Object)))
		}
	}
	if reads < 2 {
		t.Logf("only %d reads while the Store changed", reads)
	}
	// The Store did change: a snapshot taken now differs.
	if take(c.s).describe() == want {
		t.Error("the churn changed nothing")
	}
}

func summarizeSolve(res *provisioning.Results) string {
	var b strings.Builder
	for _, nc := range res.NewNodeClaims {
		fmt.Fprintf(&b, "new claim of %s for %s; ", nc.NodePool.Name, podNames(nc.Pods))
	}
	for _, e := range res.ExistingNodes {
		fmt.Fprintf(&b, "%s takes %s; ", e.Node.Name, podNames(e.Pods))
	}
	for _, u := range res.Unschedulable {
		fmt.Fprintf(&b, "%s unschedulable; ", u.Pod.Name)
	}
	return b.String()
}

func summarizeCompute(d *disruption.Decision) string {
	var b strings.Builder
	for _, cmd := range d.Commands {
		fmt.Fprintf(&b, "%s:", cmd.Method)
		for _, c := range cmd.Candidates {
			fmt.Fprintf(&b, " %s", c.Node.Name)
		}
		b.WriteString("; ")
	}
	return b.String()
}

// TestCallersOwnWhatACallMakes: what the Store doc lets a caller change —
// the structs a call returns and the lists it makes — a caller may change
// without touching the Store or what anyone else took.
func TestCallersOwnWhatACallMakes(t *testing.T) {
	c := newChurn(t)
	first := take(c.s)
	want := first.describe()
	mine := take(c.s)
	mine.snap.Policy.Decisions, mine.snap.IgnorePreferences = provisioning.DecisionsKarpenter, true
	mine.dc.Memo, mine.dc.Policy.Decisions = disruption.NewMemo(), provisioning.DecisionsKarpenter
	for _, cand := range mine.dc.Nodes {
		cand.Price, cand.Disrupting, cand.NodeClassDrift = 99, true, "Mine"
	}
	for _, n := range mine.nodes {
		n.Node, n.NodeClaim = nil, nil
	}
	slices.Reverse(mine.snap.Nodes)
	mine.snap.Pods = slices.DeleteFunc(mine.snap.Pods, func(p *corev1.Pod) bool { return p.Name == "pending" })
	slices.Reverse(mine.dc.Nodes)
	slices.Reverse(mine.dc.Unmanaged)
	slices.Reverse(mine.dc.Pending)
	slices.Reverse(mine.nodes)
	slices.Reverse(mine.pending)
	slices.Reverse(mine.cluster.Pods)
	slices.Reverse(mine.cluster.Nodes)
	slices.Reverse(mine.cluster.NodeClaims)
	slices.Reverse(mine.cluster.PersistentVolumeClaims)
	if got := first.describe(); got != want {
		t.Errorf("what another caller took changed, at %s", firstDifference(want, got))
	}
	if got := take(c.s).describe(); got != want {
		t.Errorf("the Store changed, at %s", firstDifference(want, got))
	}
}
