//go:build integration

package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/joiner-autoscaler/joiner/test/harness"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/kwok"
)

// Crash safety. Joiner runs as a process of its own (`joiner controller
// --cloud-provider kwok`) and is SIGKILLed at kill points of scale-up,
// drift and scale-down, then started again at once. A kill point is a
// condition on what the API server holds (so many claims created,
// launched, registered; a node tainted karpenter.sh/disrupted; a claim
// being deleted; …) and a delay of up to half a second after it is seen;
// both are drawn from a seed, which is logged (JOINER_CRASH_SEED=n repeats
// a run's choices; the timing of what Joiner does around them is the
// machine's).
//
// The workload makes "no duplicate NodeClaims" exact: a Deployment of
// identical pods (1 CPU, 1 GiB) on a NodePool of one instance type
// (m6i.xlarge, on demand), so every node holds the same `slots` pods and
// the plan for n pods is ceil(n/slots) claims whatever the batches were.
// What is checked:
//
//   - at every poll (every 100 ms, through the whole run): no more claims
//     than the phase may have — ceil(n/slots) while scaling up; during
//     drift one more (the replacement in flight: the Drifted budget is 1);
//     while scaling down, no more than when it began — and no two Nodes or
//     two claims with one provider ID;
//   - at the end of every phase, once it converges: exactly ceil(n/slots)
//     claims, every one Initialized, of the NodePool's current template
//     hash; every claim has exactly one kwok Node (by provider ID) and every
//     kwok Node of the pool a claim — for kwok, whose instances are Nodes,
//     that is "no leaked instances"; no node keeps karpenter.sh/disrupted
//     when its claim is not being deleted; and the Deployment's n pods are
//     all bound and Running ("no pod lost"), none Pending or terminating.
//
// Leader election is off here (one replica): with it on, a restarted
// replica would first wait out the killed one's Lease, which
// TestLeaderElectionHandsOver covers.
func TestCrashSafety(t *testing.T) {
	r := newCrashRun(t, "crash", 6)
	// Four kills keep this near two minutes: a kill mid-drift costs about
	// 50 s (the restarted controller first deletes the orphaned
	// replacement, waiting out consolidation's 15 s validation, before it
	// drifts the node again). The soak (-tags soak) makes 100, and scales
	// down halfway too.
	r.cycle(crashPlan{scaleUp: 2, drift: 1, toZero: 1})
	t.Logf("%d kills (seed %d): %s", len(r.kills), r.seed, strings.Join(r.kills, "; "))
}

// crashPlan is how many kills each phase of a cycle gets; halfway adds a
// scale-down to about half before the scale to zero.
type crashPlan struct {
	scaleUp, drift, scaleDown, toZero int
	halfway                           bool
}

type crashRun struct {
	t      *testing.T
	kc     client.Client
	joiner *harness.Process
	seed   uint64
	rng    *rand.Rand
	pool   string
	ns     string
	d      *appsv1.Deployment
	n      int // the Deployment's replicas at full size
	slots  int // pods a node holds
	rev    int // the template revision (drift bumps it)
	kills  []string
	// bound is how many claims may exist at once in the current phase.
	bound int
	phase string
}

// newCrashRun starts kube-scheduler, kube-controller-manager, kwok and a
// Joiner process, and creates the NodePool and an empty Deployment of n
// identical pods.
func newCrashRun(t *testing.T, pool string, n int) *crashRun {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("JOINER_CRASH_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("JOINER_CRASH_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("crash seed %d (JOINER_CRASH_SEED=%d repeats its kill points)", seed, seed)
	bin := buildJoiner(t)
	kubeconfig := startCluster(t)
	_, kc := controllerClient(t)
	r := &crashRun{t: t, kc: kc, seed: seed, rng: rand.New(rand.NewPCG(seed, 0)), pool: pool, n: n, slots: xlargeSlots(t)}
	r.joiner = newJoiner(t, bin, "joiner", kubeconfig)
	start(t, r.joiner)
	createPool(t, kc, pool, func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements[1].Values = []string{"m6i.xlarge"}
		np.Spec.Template.Labels["rev"] = "0"
		np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmptyOrUnderutilized
		// Long enough for a drift replacement to get the drifted node's pods
		// (within a disruption pass of its initialization) before it would
		// count as empty.
		np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("20s")
		np.Spec.Disruption.Budgets = []v1.Budget{
			{Nodes: "1", Reasons: []v1.DisruptionReason{v1.DisruptionReasonDrifted}},
			{Nodes: "100%", Reasons: []v1.DisruptionReason{v1.DisruptionReasonEmpty, v1.DisruptionReasonUnderutilized}},
		}
	})
	r.ns = testNamespace(t, pool)
	r.d = deployment(r.ns, "app", "1", "1Gi", map[string]string{"pool": pool})
	if err := kc.Create(context.Background(), r.d); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removePool(t, kc, pool, r.d) }) // before the Joiner process is killed: it terminates the claims
	return r
}

// xlargeSlots is how many of the crash pods an m6i.xlarge holds, by the
// catalog's allocatable (what the kwok provider registers).
func xlargeSlots(t *testing.T) int {
	t.Helper()
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	types, _, err := cat.InstanceTypes(catalog.Options{Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range types {
		if it.Name != "m6i.xlarge" {
			continue
		}
		a := it.Allocatable()
		cpu, mem, pods := a[corev1.ResourceCPU], a[corev1.ResourceMemory], a[corev1.ResourcePods]
		gi := resource.MustParse("1Gi")
		slots := min(int(cpu.MilliValue()/1000), int(mem.Value()/gi.Value()), int(pods.Value()))
		if slots < 2 {
			t.Fatalf("m6i.xlarge holds %d crash pods: the test needs nodes of several", slots)
		}
		return slots
	}
	t.Fatal("the catalog has no m6i.xlarge")
	return 0
}

// cycle scales the Deployment up to n, drifts every node, scales down to
// about half and then to zero, with the plan's kills in each phase.
func (r *crashRun) cycle(plan crashPlan) {
	r.t.Helper()
	need := func(pods int) int { return (pods + r.slots - 1) / r.slots }
	// Scale-up.
	r.phase, r.bound = "scale-up", need(r.n)
	scale(r.t, r.kc, r.d, int32(r.n))
	r.killDuring(plan.scaleUp, []killPoint{
		r.claimsAtLeast("created", need(r.n), func(*v1.NodeClaim) bool { return true }),
		r.claimsAtLeast("launched", need(r.n), func(nc *v1.NodeClaim) bool { return claimCondition(nc, v1.ConditionLaunched) }),
		r.claimsAtLeast("registered", need(r.n), func(nc *v1.NodeClaim) bool { return claimCondition(nc, v1.ConditionRegistered) }),
		r.claimsAtLeast("initialized", need(r.n), func(nc *v1.NodeClaim) bool { return claimCondition(nc, v1.ConditionInitialized) }),
		r.podsRunningAtLeast(r.n),
	}, r.n, need(r.n))

	// Drift: a new template label; every node is replaced, one at a time.
	r.phase, r.bound = "drift", need(r.n)+1
	r.rev++
	var np v1.NodePool
	if err := r.kc.Get(context.Background(), client.ObjectKey{Name: r.pool}, &np); err != nil {
		r.t.Fatal(err)
	}
	patch := client.MergeFrom(np.DeepCopy())
	np.Spec.Template.Labels["rev"] = strconv.Itoa(r.rev)
	if err := r.kc.Patch(context.Background(), &np, patch); err != nil {
		r.t.Fatal(err)
	}
	r.killDuring(plan.drift, []killPoint{
		r.nodeTainted(),
		r.claimsAtLeast("replacements created", need(r.n), r.ofRevision),
		r.claimsAtLeast("replacements initialized", need(r.n), func(nc *v1.NodeClaim) bool {
			return r.ofRevision(nc) && claimCondition(nc, v1.ConditionInitialized)
		}),
		r.claimDeleting(),
	}, r.n, need(r.n))

	// Scale-down to about half: consolidation deletes nodes, draining the
	// pods left on them onto the others.
	left := r.n
	if plan.halfway {
		left = r.n/2 + 1
		r.phase, r.bound = "scale-down", need(r.n)
		scale(r.t, r.kc, r.d, int32(left))
		r.killDuring(plan.scaleDown, []killPoint{r.nodeTainted(), r.claimDeleting(), r.claimsAtMost(need(r.n) - 1)}, left, need(left))
	}

	// And to zero: every node empty, every node goes.
	r.phase, r.bound = "scale to zero", need(left)
	scale(r.t, r.kc, r.d, 0)
	r.killDuring(plan.toZero, []killPoint{r.nodeTainted(), r.claimDeleting(), r.claimsAtMost(need(left) - 1)}, 0, 0)
}

// crashState is what the API server holds for the run: the pool's claims
// and kwok Nodes, the Deployment's pods, the pool's template hash.
type crashState struct {
	claims []v1.NodeClaim
	nodes  []corev1.Node
	pods   []corev1.Pod
	hash   string
}

func (r *crashRun) observe(ctx context.Context) (*crashState, error) {
	s := &crashState{}
	var claims v1.NodeClaimList
	if err := r.kc.List(ctx, &claims, client.MatchingLabels{v1.LabelNodePool: r.pool}); err != nil {
		return nil, err
	}
	var nodes corev1.NodeList
	if err := r.kc.List(ctx, &nodes, client.MatchingLabels{v1.LabelNodePool: r.pool}); err != nil {
		return nil, err
	}
	for _, n := range nodes.Items {
		if n.Annotations[kwok.AnnotationNode] == "fake" {
			s.nodes = append(s.nodes, n)
		}
	}
	pods, err := podsOf(ctx, r.kc, r.ns)
	if err != nil {
		return nil, err
	}
	var np v1.NodePool
	if err := r.kc.Get(ctx, client.ObjectKey{Name: r.pool}, &np); err != nil {
		return nil, err
	}
	s.claims, s.pods, s.hash = claims.Items, pods, np.Annotations[v1.AnnotationNodePoolHash]
	return s, nil
}

// ofRevision: the claim was made from the pool's current template.
func (r *crashRun) ofRevision(nc *v1.NodeClaim) bool { return nc.Labels["rev"] == strconv.Itoa(r.rev) }

// violation is what breaks the invariants that hold at every moment, or "".
func (r *crashRun) violation(s *crashState) string {
	if len(s.claims) > r.bound {
		var names []string
		for _, nc := range s.claims {
			names = append(names, nc.Name)
		}
		return fmt.Sprintf("%d NodeClaims %v, more than the %d the %s may have", len(s.claims), names, r.bound, r.phase)
	}
	seen := map[string]string{}
	for _, n := range s.nodes {
		if other, ok := seen[n.Spec.ProviderID]; ok {
			return fmt.Sprintf("Nodes %s and %s have one provider ID %s", other, n.Name, n.Spec.ProviderID)
		}
		seen[n.Spec.ProviderID] = n.Name
	}
	seen = map[string]string{}
	for _, nc := range s.claims {
		if id := nc.Status.ProviderID; id != "" {
			if other, ok := seen[id]; ok {
				return fmt.Sprintf("NodeClaims %s and %s have one provider ID %s", other, nc.Name, id)
			}
			seen[id] = nc.Name
		}
	}
	return ""
}

// converged says what still keeps the phase from its end state (pods
// Running, claims), or "" when it is there.
func (r *crashRun) converged(s *crashState, pods, claims int) string {
	running := 0
	for _, p := range s.pods {
		if p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			running++
		}
	}
	if running != pods || len(s.pods) != pods {
		return fmt.Sprintf("%d of %d pods Running (%d pods)", running, pods, len(s.pods))
	}
	if len(s.claims) != claims {
		return fmt.Sprintf("%d NodeClaims, want %d", len(s.claims), claims)
	}
	byID := map[string]*corev1.Node{}
	for i := range s.nodes {
		byID[s.nodes[i].Spec.ProviderID] = &s.nodes[i]
	}
	claimed := map[string]bool{}
	for i := range s.claims {
		nc := &s.claims[i]
		switch {
		case nc.DeletionTimestamp != nil:
			return fmt.Sprintf("NodeClaim %s is being deleted", nc.Name)
		case !claimCondition(nc, v1.ConditionInitialized):
			return fmt.Sprintf("NodeClaim %s is not Initialized", nc.Name)
		case nc.Annotations[v1.AnnotationNodePoolHash] != s.hash || !r.ofRevision(nc):
			return fmt.Sprintf("NodeClaim %s is of an old template (hash %s, want %s)", nc.Name, nc.Annotations[v1.AnnotationNodePoolHash], s.hash)
		case byID[nc.Status.ProviderID] == nil:
			return fmt.Sprintf("NodeClaim %s has no Node with its provider ID %s", nc.Name, nc.Status.ProviderID)
		}
		claimed[nc.Status.ProviderID] = true
	}
	for _, n := range s.nodes {
		if !claimed[n.Spec.ProviderID] {
			return fmt.Sprintf("kwok Node %s (%s) has no NodeClaim", n.Name, n.Spec.ProviderID)
		}
		if hasTaintKey(n.Spec.Taints, v1.DisruptedTaint.Key) {
			return fmt.Sprintf("Node %s keeps %s though its claim is not being deleted", n.Name, v1.DisruptedTaint.Key)
		}
	}
	for _, p := range s.pods {
		if n := byID[podNodeProviderID(s, p.Spec.NodeName)]; n == nil {
			return fmt.Sprintf("pod %s runs on %s, not a Node of a claim", p.Name, p.Spec.NodeName)
		}
	}
	return ""
}

func podNodeProviderID(s *crashState, node string) string {
	for _, n := range s.nodes {
		if n.Name == node {
			return n.Spec.ProviderID
		}
	}
	return ""
}

func hasTaintKey(taints []corev1.Taint, key string) bool {
	for _, t := range taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

// killPoint is a condition on the run's state at which Joiner is killed.
type killPoint struct {
	name string
	at   func(*crashState) bool
}

func (r *crashRun) claimsAtLeast(what string, max int, which func(*v1.NodeClaim) bool) killPoint {
	k := 1 + r.rng.IntN(max)
	return killPoint{fmt.Sprintf("%d claims %s", k, what), func(s *crashState) bool {
		n := 0
		for i := range s.claims {
			if which(&s.claims[i]) {
				n++
			}
		}
		return n >= k
	}}
}

func (r *crashRun) claimsAtMost(k int) killPoint {
	return killPoint{fmt.Sprintf("%d claims or fewer", k), func(s *crashState) bool { return len(s.claims) <= k }}
}

func (r *crashRun) podsRunningAtLeast(max int) killPoint {
	k := 1 + r.rng.IntN(max)
	return killPoint{fmt.Sprintf("%d pods Running", k), func(s *crashState) bool {
		n := 0
		for _, p := range s.pods {
			if p.Status.Phase == corev1.PodRunning {
				n++
			}
		}
		return n >= k
	}}
}

func (r *crashRun) nodeTainted() killPoint {
	return killPoint{"a node tainted " + v1.DisruptedTaint.Key, func(s *crashState) bool {
		for _, n := range s.nodes {
			if hasTaintKey(n.Spec.Taints, v1.DisruptedTaint.Key) {
				return true
			}
		}
		return false
	}}
}

func (r *crashRun) claimDeleting() killPoint {
	return killPoint{"a claim being deleted", func(s *crashState) bool {
		for _, nc := range s.claims {
			if nc.DeletionTimestamp != nil {
				return true
			}
		}
		return false
	}}
}

// phaseTimeout bounds one phase, kills and restarts included: drift
// replaces a node per 10 s disruption pass, consolidation waits 15 s to
// validate, and garbage collection (every 2 minutes) is not needed for any
// of it.
const phaseTimeout = 3 * time.Minute

// killDuring kills Joiner `kills` times at kill points drawn from points,
// restarting it after each, then waits for the phase to end with pods pods
// Running on claims claims, checking the invariants at every poll. A kill
// point the phase ended without reaching is logged, and Joiner is killed
// there (at the end state) instead.
func (r *crashRun) killDuring(kills int, points []killPoint, pods, claims int) {
	r.t.Helper()
	began := time.Now()
	deadline := began.Add(phaseTimeout)
	var last string
	poll := func(cond func(*crashState) bool) bool {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		met := false
		err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			s, err := r.observe(ctx)
			if err != nil {
				return false, nil // the API server is there; a slow List is retried at the next poll
			}
			if v := r.violation(s); v != "" {
				r.t.Fatalf("%s (seed %d, after kills %v): %s", r.phase, r.seed, r.kills, v)
			}
			last = r.converged(s, pods, claims)
			met = cond(s)
			return met || last == "", nil
		})
		if err != nil {
			r.t.Fatalf("%s (seed %d, kills %v): not done after %s: %s", r.phase, r.seed, r.kills, phaseTimeout, last)
		}
		return met
	}
	for range kills {
		p := points[r.rng.IntN(len(points))]
		delay := time.Duration(r.rng.IntN(500)) * time.Millisecond
		reached := poll(p.at)
		where := p.name
		if !reached {
			where += " (not seen: the phase ended first)"
		}
		if delay > 0 {
			timer := time.NewTimer(delay) // part of the kill point: lands between Joiner's writes
			<-timer.C
		}
		r.joiner.Kill()
		r.kills = append(r.kills, fmt.Sprintf("%s: %s +%s", r.phase, where, delay))
		start(r.t, r.joiner)
	}
	poll(func(*crashState) bool { return false })
	r.t.Logf("%s: done in %s", r.phase, time.Since(began).Round(100*time.Millisecond))
}
