//go:build integration

package integration

import (
	"context"
	"fmt"
	"math/rand"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/joiner-autoscaler/joiner/examples"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/kwok"
	"github.com/joiner-autoscaler/joiner/pkg/controller"
	"github.com/joiner-autoscaler/joiner/pkg/podutil"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/scenario"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
	"github.com/joiner-autoscaler/joiner/pkg/sim"
)

// TestSimulatorAndControllerAgree replays the bundled scenario's first hour
// through the simulator and through the controller (the sim provider, the
// scenario's seed and cloud faults, a fake clock set to the simulator's
// time) and compares every provisioning pass's NodeClaims: pool,
// instance-type options, zone and capacity-type requirements, then what
// the simulated EC2 launched for each (instance type, capacity type, zone).
//
// The replay: the simulator's OnProvision trace gives each pass's time,
// the pods it planned for and the cluster it planned over (which pods ran
// on which node). For each pass the test makes the real API server hold the
// same: it sets the fake clock to the pass's time, creates the pending pods
// (kube-scheduler's Unschedulable verdict on them), puts the pods the
// simulator had bound (DaemonSet pods too) on the controller's counterpart
// of each node — the claim paired with the simulator's when the pass that
// created them was compared — and, once the controller's Store shows all
// that, runs the controller's provisioning pass (Controller.Provision, what
// its batch loop calls) and compares what it created.
//
// Tolerances, each inherent to two hosts rather than to their decisions:
//   - Batch windows: the passes are the simulator's; the controller's batch
//     loop is parked (windows longer than the run) and its pass is run at
//     each of the simulator's. Both batch by upstream's 1 s idle / 10 s max
//     rule, but which pods share a batch then depends on API and informer
//     latency, not on the engine.
//   - Boot times: each host draws them from the scenario's distributions
//     with its own seeded stream (the simulator's one source also feeds its
//     binder and HPA), so the same node is Ready at other times. Where the
//     simulator had a node Ready at a pass and the controller's counterpart
//     is still booting, the fake clock runs on, a second at a time, until it
//     is Ready; how far is logged. The insufficient-capacity cache (3 min) is
//     the only clocked input of a provisioning pass, and the run's passes
//     stay inside one window of it.
//   - Launched zone: among zones whose offering has the same price, the
//     simulated EC2 picks by a hash of the claim's name, and the names differ
//     (the simulator's pool-NNNNN, the API server's generateName). A claim
//     pinned to one zone must launch there; otherwise the zone may differ,
//     but must cost what the simulator's did (a tie, not another choice).
//
// Not compared: disruption. The first hour has one consolidation (an
// underutilized general node replaced near minute 8); its decision depends
// on where kube-scheduler put each pod after the last provisioning pass and
// on the consolidation pass timing (the simulator backs off, 10 s doubling
// to 5 min), which this replay of provisioning passes does not reproduce.
//
// Both hosts decide under each Policy — Joiner's decisions and upstream's —
// built the one way every host builds it.
func TestSimulatorAndControllerAgree(t *testing.T) {
	for _, d := range []provisioning.Decisions{provisioning.DecisionsJoiner, provisioning.DecisionsKarpenter} {
		t.Run(string(d), func(t *testing.T) { agreeUnder(t, provisioning.Policy{Decisions: d}) })
	}
}

func agreeUnder(t *testing.T, policy provisioning.Policy) {
	ctx := context.Background()
	in, err := scenario.Load(examples.Scenarios, "scenarios/default", "default")
	if err != nil {
		t.Fatal(err)
	}
	spec := &in.Scenario.Spec
	spec.Duration = metav1.Duration{Duration: time.Hour}
	var passes []recordedPass
	if _, err := sim.Run(context.Background(), in, examples.Scenarios, "scenarios/default", sim.Options{Policy: policy, OnProvision: func(p sim.ProvisioningPass) {
		passes = append(passes, record(p))
	}}); err != nil {
		t.Fatal(err)
	}
	launches := 0
	for _, p := range passes {
		launches += len(p.launches)
	}
	if len(passes) < 2 || launches == 0 {
		t.Fatalf("the first hour has %d provisioning passes and %d launches: nothing to compare", len(passes), launches)
	}

	// An API server of its own: the NodePools are the scenario's, by name.
	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "..", "pkg", "apis", "crds")}, ErrorIfCRDPathMissing: true}
	acfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	}()
	scheme := controllerScheme(t)
	kc, err := client.New(acfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(spec.Start)
	logControllerTo(t)
	mgr, err := manager.New(acfg, manager.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	its := catalogTypes(t, catalog.Options{Region: spec.Region, Zones: spec.Zones})
	boot := spec.Faults.Boot()
	provider, err := kwok.NewWithOptions(mgr.GetClient(), its, kwok.Options{Name: "sim", Clock: clk, Boot: &boot,
		Rand: rand.New(rand.NewSource(spec.Seed)), APIErrorRate: spec.Faults.APIErrorRate, Capacity: spec.Faults.CapacityWindows()})
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	parked := 1000 * time.Hour // the batch loop never fires: the passes are run below
	c, err := controller.New(cctx, mgr, controller.Options{CloudProvider: provider, Clock: clk, BatchIdle: parked, BatchMax: parked, Restartable: true, Policy: policy})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(cctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	if !mgr.GetCache().WaitForCacheSync(cctx) || !c.WaitSynced(cctx) {
		t.Fatal("the controller's caches did not sync")
	}

	for _, np := range in.NodePools {
		np = np.DeepCopy()
		np.ResourceVersion, np.UID = "", ""
		if err := kc.Create(ctx, np); err != nil {
			t.Fatal(err)
		}
	}
	dsUID := map[string]string{}
	for _, ds := range in.DaemonSets {
		ds = ds.DeepCopy()
		ds.Namespace = podutil.Namespace(ds.ObjectMeta)
		if err := kc.Create(ctx, ds); err != nil {
			t.Fatal(err)
		}
		dsUID[ds.Name] = string(ds.UID)
	}
	eventually(t, "the controller's Store knows the NodePools, their offerings and the DaemonSets", func(context.Context) (bool, error) {
		snap := c.Store().ProvisioningSnapshot()
		return len(snap.NodePools) == len(in.NodePools) && len(snap.InstanceTypes) == len(in.NodePools) && len(snap.DaemonSets) == len(in.DaemonSets), nil
	})

	pair := map[string]string{} // the simulator's claim name → the controller's
	var report []string
	for i, pass := range passes {
		if pass.at.After(clk.Now()) {
			clk.SetTime(pass.at)
		}
		// The simulator's Ready nodes: the counterpart must be Ready too.
		for _, n := range pass.nodes {
			if n.inFlight {
				continue
			}
			name, ok := pair[n.name]
			if !ok {
				t.Fatalf("pass %d at %s plans over node %s, which no compared pass launched", i, pass.at.Format(time.TimeOnly), n.name)
			}
			waitInitialized(t, kc, clk, name)
		}
		if ahead := clk.Since(pass.at); ahead > 0 {
			t.Logf("pass %d: the controller's clock ran %s past the simulator's %s for its counterparts to be Ready", i, ahead, pass.at.Format(time.TimeOnly))
		}
		syncPods(t, kc, pass, pair, dsUID)
		waitStoreHolds(t, c, pass, pair)

		created, err := c.Provision(ctx)
		if err != nil {
			t.Fatalf("pass %d: %v", i, err)
		}
		got, want := map[string][]string{}, map[string][]string{}
		for _, nc := range created {
			got[claimKey(nc)] = append(got[claimKey(nc)], nc.Name)
		}
		for _, l := range pass.launches {
			want[claimKey(l.NodeClaim)] = append(want[claimKey(l.NodeClaim)], l.NodeClaim.Name)
		}
		if !sameCounts(got, want) {
			t.Fatalf("pass %d at %s (%d pods pending): the controller created\n%s\nthe simulator\n%s", i, pass.at.Format(time.TimeOnly),
				len(pass.pending), describe(got), describe(want))
		}
		for key, names := range want {
			for j, simName := range names {
				pair[simName] = got[key][j]
			}
		}
		for _, l := range pass.launches {
			if l.Err != nil || l.Launched == nil {
				t.Fatalf("pass %d: the simulator's launch of %s failed (%v): it drops the claim and plans again, the controller retries the launch", i, l.NodeClaim.Name, l.Err)
			}
			nc := waitLaunched(t, kc, pair[l.NodeClaim.Name])
			if msg := compareLaunch(l.Launched, nc, its); msg != "" {
				t.Errorf("pass %d: %s", i, msg)
			}
			report = append(report, fmt.Sprintf("%s %s ↔ %s: %s; launched %s ↔ %s", pass.at.Format(time.TimeOnly), l.Launched.Name, nc.Name,
				claimKey(l.NodeClaim), launchedAs(l.Launched), launchedAs(nc)))
		}
		report = append(report, fmt.Sprintf("%s pass %d: %d pods pending, %d NodeClaims in both", pass.at.Format(time.TimeOnly), i, len(pass.pending), len(created)))
	}
	var all v1.NodeClaimList
	if err := kc.List(ctx, &all); err != nil {
		t.Fatal(err)
	}
	if len(all.Items) != launches {
		t.Errorf("%d NodeClaims on the API server after the replay, the simulator launched %d", len(all.Items), launches)
	}
	t.Logf("agreement over %d provisioning passes, %d NodeClaims:\n%s", len(passes), launches, strings.Join(report, "\n"))
}

// recordedPass is what the test keeps of a simulator pass: the Store's
// views are reused by later passes, so the pods are copied out.
type recordedPass struct {
	at       time.Time
	pending  []*corev1.Pod
	nodes    []recordedNode
	launches []sim.Launch
}

type recordedNode struct {
	name     string
	inFlight bool
	pods     []*corev1.Pod
}

func record(p sim.ProvisioningPass) recordedPass {
	r := recordedPass{at: p.At, pending: append([]*corev1.Pod(nil), p.Snapshot.Pods...), launches: p.Launches}
	for _, n := range p.Snapshot.Nodes {
		r.nodes = append(r.nodes, recordedNode{name: n.Name, inFlight: n.InFlight, pods: append([]*corev1.Pod(nil), n.Pods...)})
	}
	return r
}

// claimKey is what the issue names of a NodeClaim as planned: its pool and
// the instance types, zones and capacity types it allows.
func claimKey(nc *v1.NodeClaim) string {
	reqs := scheduling.FromNodeSelectorRequirements(nc.Spec.Requirements)
	return fmt.Sprintf("pool %s; %s; %s; %s", nc.Labels[v1.LabelNodePool], reqs.Get(v1.LabelInstanceType), reqs.Get(v1.LabelZone), reqs.Get(v1.LabelCapacityType))
}

func sameCounts(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if len(b[k]) != len(v) {
			return false
		}
	}
	return true
}

func describe(m map[string][]string) string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("  %d × %s", len(v), k))
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "  nothing"
	}
	return strings.Join(out, "\n")
}

func launchedAs(nc *v1.NodeClaim) string {
	return nc.Labels[v1.LabelInstanceType] + " " + nc.Labels[v1.LabelZone] + " " + nc.Labels[v1.LabelCapacityType]
}

// compareLaunch compares what the simulated EC2 launched for the
// simulator's claim and for the controller's ("" when they agree; see the
// launched-zone tolerance).
func compareLaunch(simLaunched, nc *v1.NodeClaim, its []*cloudprovider.InstanceType) string {
	it, ct := simLaunched.Labels[v1.LabelInstanceType], simLaunched.Labels[v1.LabelCapacityType]
	if nc.Labels[v1.LabelInstanceType] != it || nc.Labels[v1.LabelCapacityType] != ct {
		return fmt.Sprintf("%s launched %s %s, the simulator's %s %s %s", nc.Name, nc.Labels[v1.LabelInstanceType], nc.Labels[v1.LabelCapacityType],
			simLaunched.Name, it, ct)
	}
	simZone, zone := simLaunched.Labels[v1.LabelZone], nc.Labels[v1.LabelZone]
	if simZone == zone {
		return ""
	}
	if z := scheduling.FromNodeSelectorRequirements(nc.Spec.Requirements).Get(v1.LabelZone); len(z.Values()) == 1 {
		return fmt.Sprintf("%s is pinned to %s but launched in %s", nc.Name, z.Values()[0], zone)
	}
	price := func(zone string) float64 {
		for _, t := range its {
			if t.Name == it {
				for _, o := range t.Offerings {
					if o.Zone == zone && o.CapacityType == ct {
						return o.Price
					}
				}
			}
		}
		return -1
	}
	if price(zone) != price(simZone) {
		return fmt.Sprintf("%s launched %s in %s at %v/h, the simulator's %s in %s at %v/h: not a tie", nc.Name, it, zone, price(zone), simLaunched.Name, simZone, price(simZone))
	}
	return ""
}

// waitInitialized steps the fake clock a second at a time until the claim
// is Initialized (its boot runs on that clock).
func waitInitialized(t *testing.T, kc client.Client, clk *clocktesting.FakeClock, name string) {
	t.Helper()
	nc, node := &v1.NodeClaim{}, &corev1.Node{}
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := kc.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
			return false, err
		}
		if claimCondition(nc, v1.ConditionInitialized) {
			return true, nil
		}
		clk.Step(time.Second)
		return false, nil
	})
	if err != nil {
		nodeErr := kc.Get(context.Background(), client.ObjectKey{Name: name}, node)
		t.Fatalf("NodeClaim %s not initialized by %s: %v; its conditions %+v; its Node (%v): taints %v, conditions %+v", name, clk.Now().Format(time.TimeOnly), err,
			nc.Status.Conditions, nodeErr, node.Spec.Taints, node.Status.Conditions)
	}
}

func waitLaunched(t *testing.T, kc client.Client, name string) *v1.NodeClaim {
	t.Helper()
	nc := &v1.NodeClaim{}
	eventually(t, "NodeClaim "+name+" launched", func(ctx context.Context) (bool, error) {
		if err := kc.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
			return false, err
		}
		return claimCondition(nc, v1.ConditionLaunched), nil
	})
	return nc
}

// syncPods makes the API server's pods the pass's: its pending pods, as
// kube-scheduler leaves them, and the pods of each Ready node on its
// counterpart; any other pod is deleted.
func syncPods(t *testing.T, kc client.Client, pass recordedPass, pair map[string]string, dsUID map[string]string) {
	t.Helper()
	ctx := context.Background()
	want := map[string]string{} // pod → node ("" pending)
	byName := map[string]*corev1.Pod{}
	for _, p := range pass.pending {
		want[p.Name], byName[p.Name] = "", p
	}
	for _, n := range pass.nodes {
		if n.inFlight {
			continue
		}
		for _, p := range n.pods {
			want[p.Name], byName[p.Name] = pair[n.name], p
		}
	}
	var list corev1.PodList
	if err := kc.List(ctx, &list, client.InNamespace(corev1.NamespaceDefault)); err != nil {
		t.Fatal(err)
	}
	have := map[string]*corev1.Pod{}
	for i := range list.Items {
		p := &list.Items[i]
		node, ok := want[p.Name]
		switch {
		case !ok:
			if err := kc.Delete(ctx, p, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
				t.Fatal(err)
			}
		case p.Spec.NodeName == "" && node != "":
			if err := kc.SubResource("binding").Create(ctx, p, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
				Target: corev1.ObjectReference{Kind: "Node", Name: node}}); err != nil {
				t.Fatal(err)
			}
			have[p.Name] = p
		case p.Spec.NodeName != node:
			t.Fatalf("pod %s is on node %q, the simulator has it on the counterpart of %q", p.Name, p.Spec.NodeName, node)
		default:
			have[p.Name] = p
		}
	}
	var names []string
	for name := range want {
		if have[name] == nil {
			names = append(names, name)
		}
	}
	sort.Strings(names) // the simulator's order among pods created together
	for _, name := range names {
		src := byName[name]
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: src.Name, Namespace: corev1.NamespaceDefault, Labels: src.Labels, Annotations: src.Annotations},
			Spec: *src.Spec.DeepCopy()}
		p.Spec.NodeName = want[name]
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
		for _, ref := range src.OwnerReferences {
			if ref.Kind == "DaemonSet" {
				ref.UID = types.UID(dsUID[ref.Name])
				p.OwnerReferences = append(p.OwnerReferences, ref)
			}
		}
		if err := kc.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		if p.Spec.NodeName == "" {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
				Reason: corev1.PodReasonUnschedulable, LastTransitionTime: metav1.Now()}}
			if err := kc.Status().Update(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// waitStoreHolds waits until the controller's Store (fed by its informers)
// shows the pass's pending pods and the pods on each counterpart node.
func waitStoreHolds(t *testing.T, c *controller.Controller, pass recordedPass, pair map[string]string) {
	t.Helper()
	eventually(t, "the controller's Store holding the pass's pods", func(context.Context) (bool, error) {
		snap := c.Store().ProvisioningSnapshot()
		if len(snap.Pods) != len(pass.pending) {
			return false, nil
		}
		on := map[string]int{}
		for _, n := range snap.Nodes {
			on[n.Name] = len(n.Pods)
		}
		for _, n := range pass.nodes {
			if !n.inFlight && on[pair[n.name]] != len(n.pods) {
				return false, nil
			}
		}
		return true, nil
	})
}
