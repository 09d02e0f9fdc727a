//go:build scale

package scale

import (
	"context"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
	"github.com/joiner-autoscaler/joiner/test/harness"
)

// observer watches the cluster as a person would: NodeClaims, Nodes and the
// workload's pods through informers, a snapshot at least every second and
// after every NodeClaim or Node change. It counts what the phases report
// and writes the timeline.
type observer struct {
	cache  cache.Cache
	prices func(map[string]string) (float64, bool)
	t0     time.Time
	poke   chan struct{}

	mu         sync.Mutex
	phase      *phase
	phases     []*phase
	lastChange time.Time // a NodeClaim created, deleting or gone
	claims     map[string]*claimSeen
	claimOf    map[string]string // Node name → NodeClaim name
	podsGoing  map[string]bool   // pods seen with a deletion timestamp
	last       snapshot
	lastRow    snapshot
	lastRowAt  time.Time
	timeline   io.Writer
	csv        io.Writer
}

// claimSeen is what the observer learnt of a NodeClaim as it went.
type claimSeen struct {
	created      time.Time
	instanceType string
	deleting     bool
	disrupted    bool // its Node tainted karpenter.sh/disrupted
}

// phase is what happened during one phase of the benchmark.
type phase struct {
	name  string
	start time.Time
	// NodeClaims created, deletions begun, and gone.
	created, deleting, gone int
	// changes are the times of creations and deletions begun.
	changes []time.Time
	// podDeletions: the workload's pods seen deleting (evicted, or the
	// ReplicaSet's scale-down).
	podDeletions int
	// pendingAfter1m: pods seen Pending a minute or more into the phase.
	pendingAfter1m map[string]bool
	// Budget: moments (snapshots) when more nodes were disrupting than the
	// pool's budgets allow (counted as budgetCount does), episodes of
	// them, and the most disrupting at once.
	overBudget, violations, maxDisrupting, maxOver int
	violating                                      bool
	// costs are the phase's snapshots' $/h, in order (see spend).
	costs []costAt
}

// costAt is the cluster's $/h at a moment.
type costAt struct {
	at      time.Time
	dollars float64
}

// spend is what the phase's NodeClaims cost in the window after it began,
// in dollars: each snapshot's $/h until the next, and the last one's to
// the window's end — a phase that settled ends with no change of
// NodeClaims in its last SCALE_SETTLE, so its cost goes on as it was.
func (ph *phase) spend(window time.Duration) float64 {
	end := ph.start.Add(window)
	total := 0.0
	for i, c := range ph.costs {
		if !c.at.Before(end) {
			break
		}
		to := end
		if i+1 < len(ph.costs) && ph.costs[i+1].at.Before(end) {
			to = ph.costs[i+1].at
		}
		total += c.dollars * to.Sub(later(c.at, ph.start)).Hours()
	}
	return total
}

// snapshot is the cluster at one moment.
type snapshot struct {
	at                            time.Time
	claims, initialized, deleting int
	nodes, readyNodes             int
	// budgetNodes and disrupting count as upstream's budgets do
	// (budgetCount); allowed is what the pool's budgets allow of them.
	budgetNodes, disrupting, allowed int
	dollars                          float64
	unpriced                         int
	running, pending, terminating    int
	// bound counts the pods not being deleted that kube-scheduler has
	// given a node: a pod is bound before kwok (the kubelets) runs it.
	bound         int
	claimsOfRev   map[string]int
	instanceTypes map[string]int
}

func (s snapshot) row() string {
	return fmt.Sprintf("claims=%d init=%d deleting=%d nodes=%d ready=%d $/h=%.3f pods bound=%d run=%d pend=%d term=%d disrupting=%d/%d of %d",
		s.claims, s.initialized, s.deleting, s.nodes, s.readyNodes, s.dollars, s.bound, s.running, s.pending, s.terminating, s.disrupting, s.allowed, s.budgetNodes)
}

func (s snapshot) sameRow(o snapshot) bool {
	return s.claims == o.claims && s.initialized == o.initialized && s.deleting == o.deleting && s.nodes == o.nodes &&
		s.readyNodes == o.readyNodes && s.disrupting == o.disrupting && s.allowed == o.allowed && s.budgetNodes == o.budgetNodes && s.running == o.running && s.bound == o.bound &&
		s.pending == o.pending && s.terminating == o.terminating && math.Abs(s.dollars-o.dollars) < 1e-6
}

// startObserver starts informers on the cluster (the workload's namespace
// for pods) and the sampler; both stop with ctx.
func startObserver(ctx context.Context, c *harness.Cluster, scheme *runtime.Scheme, prices func(map[string]string) (float64, bool),
	timeline, csv io.Writer) (*observer, error) {
	ca, err := cache.New(c.Config, cache.Options{Scheme: scheme,
		ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: {Namespaces: map[string]cache.Config{namespace: {}}}}})
	if err != nil {
		return nil, err
	}
	o := &observer{cache: ca, prices: prices, t0: time.Now(), poke: make(chan struct{}, 1), claims: map[string]*claimSeen{}, claimOf: map[string]string{},
		podsGoing: map[string]bool{}, timeline: timeline, csv: csv}
	o.phase = &phase{name: "setup", start: o.t0, pendingAfter1m: map[string]bool{}}
	o.phases = []*phase{o.phase}
	_, _ = fmt.Fprintln(csv, "seconds,phase,claims,initialized,deleting,nodes,ready_nodes,dollars_per_hour,pods_bound,pods_running,pods_pending,pods_terminating,disrupting,allowed,budget_nodes")
	handlers := []struct {
		obj client.Object
		h   toolscache.ResourceEventHandlerFuncs
	}{
		{&v1.NodeClaim{}, toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { o.claimChanged(obj, false) },
			UpdateFunc: func(_, obj any) { o.claimChanged(obj, false) },
			DeleteFunc: func(obj any) { o.claimChanged(obj, true) },
		}},
		{&corev1.Node{}, toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { o.nodeChanged(obj) },
			UpdateFunc: func(_, obj any) { o.nodeChanged(obj) },
			DeleteFunc: func(any) { o.wake() },
		}},
		{&corev1.Pod{}, toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { o.podChanged(obj) },
			UpdateFunc: func(_, obj any) { o.podChanged(obj) },
		}},
		{&v1.NodePool{}, toolscache.ResourceEventHandlerFuncs{}},
	}
	for _, h := range handlers {
		inf, err := ca.GetInformer(ctx, h.obj)
		if err != nil {
			return nil, err
		}
		if _, err := inf.AddEventHandler(h.h); err != nil {
			return nil, err
		}
	}
	go func() { _ = ca.Start(ctx) }()
	if !ca.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the observer's informers did not sync")
	}
	go o.sample(ctx)
	return o, nil
}

func (o *observer) wake() {
	select {
	case o.poke <- struct{}{}:
	default:
	}
}

// since is the time since the observer started, for the timeline.
func (o *observer) since(t time.Time) string { return fmt.Sprintf("%7.1fs", t.Sub(o.t0).Seconds()) }

// logf writes a line to the timeline; o.mu is held.
func (o *observer) logf(format string, args ...any) {
	_, _ = fmt.Fprintf(o.timeline, "%s %-9s %s\n", o.since(time.Now()), o.phase.name, fmt.Sprintf(format, args...))
}

func (o *observer) claimChanged(obj any, deleted bool) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	nc, ok := obj.(*v1.NodeClaim)
	if !ok {
		return
	}
	now := time.Now()
	o.mu.Lock()
	defer o.wake()
	defer o.mu.Unlock()
	seen := o.claims[nc.Name]
	if seen == nil {
		if deleted {
			return
		}
		seen = &claimSeen{created: now}
		o.claims[nc.Name] = seen
		o.phase.created++
		o.phase.changes = append(o.phase.changes, now)
		o.lastChange = now
		o.logf("+ nodeclaim %s created (%s)", nc.Name, describeRequirements(nc))
	}
	if nc.Status.NodeName != "" {
		o.claimOf[nc.Status.NodeName] = nc.Name
	}
	if it := nc.Labels[v1.LabelInstanceType]; it != "" && seen.instanceType == "" {
		seen.instanceType = it
		price, _ := o.prices(nc.Labels)
		o.logf("  nodeclaim %s launched: %s %s %s $%.4f/h", nc.Name, it, nc.Labels[v1.LabelZone], nc.Labels[v1.LabelCapacityType], price)
	}
	if nc.DeletionTimestamp != nil && !seen.deleting {
		seen.deleting = true
		o.phase.deleting++
		o.phase.changes = append(o.phase.changes, now)
		o.lastChange = now
		o.logf("- nodeclaim %s deleting: %s, age %s%s", nc.Name, seen.instanceType, now.Sub(seen.created).Round(time.Second), disruptionReason(nc))
	}
	if deleted {
		delete(o.claims, nc.Name)
		delete(o.claimOf, nc.Status.NodeName)
		o.phase.gone++
		o.lastChange = now
		o.logf("x nodeclaim %s gone: %s, age %s", nc.Name, seen.instanceType, now.Sub(seen.created).Round(time.Second))
	}
}

// describeRequirements is a short form of what a new claim asks for.
func describeRequirements(nc *v1.NodeClaim) string {
	for _, r := range nc.Spec.Requirements {
		if r.Key == v1.LabelInstanceType && r.Operator == corev1.NodeSelectorOpIn {
			if len(r.Values) > 4 {
				return fmt.Sprintf("%d instance types", len(r.Values))
			}
			return "instance types " + strings.Join(r.Values, ", ")
		}
	}
	return "any instance type"
}

// watchDecisions scrapes the autoscaler's
// karpenter_voluntary_disruption_decisions_total every 5 seconds until ctx
// ends, and writes what it carried out since to the timeline: the reasons
// behind the NodeClaims' deletions, which the claims do not all carry.
func (o *observer) watchDecisions(ctx context.Context, p *harness.Process) {
	seen := map[string]float64{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Second):
		}
		families, err := p.Metrics(ctx)
		if err != nil {
			continue
		}
		now := decisions(families)
		o.mu.Lock()
		for _, k := range sortedKeys(now) {
			if d := now[k] - seen[k]; d > 0 {
				o.logf("  disruption decisions carried out: %s +%g", k, d)
			}
		}
		o.mu.Unlock()
		seen = now
	}
}

// decisions are karpenter_voluntary_disruption_decisions_total's counts by
// reason/decision/consolidation type.
func decisions(families map[string]*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, m := range families["karpenter_voluntary_disruption_decisions_total"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		key := labels["reason"] + "/" + labels["decision"]
		if t := labels["consolidation_type"]; t != "" {
			key += "/" + t
		}
		out[key] += m.GetCounter().GetValue()
	}
	return out
}

// disruptionReason is the claim's Disrupted (Joiner) or DisruptionReason
// (upstream) condition's reason, when it has one.
func disruptionReason(nc *v1.NodeClaim) string {
	for _, c := range nc.Status.Conditions {
		if (c.Type == v1.ConditionDisrupted || c.Type == "DisruptionReason") && c.Status == "True" {
			return ", " + c.Reason
		}
	}
	for _, c := range nc.Status.Conditions {
		if c.Type == v1.ConditionDrifted && c.Status == "True" {
			return ", drifted"
		}
	}
	return ""
}

func (o *observer) nodeChanged(obj any) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	tainted := false
	for _, t := range n.Spec.Taints {
		if t.Key == v1.DisruptedTaint.Key {
			tainted = true
		}
	}
	o.mu.Lock()
	defer o.wake()
	defer o.mu.Unlock()
	seen := o.claims[o.claimOf[n.Name]]
	if seen == nil || seen.disrupted == tainted {
		return
	}
	seen.disrupted = tainted
	if tainted {
		o.logf("  node %s tainted %s", n.Name, v1.DisruptedTaint.Key)
	} else {
		o.logf("  node %s untainted %s", n.Name, v1.DisruptedTaint.Key)
	}
}

func (o *observer) podChanged(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok || p.DeletionTimestamp == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.podsGoing[p.Name] {
		o.podsGoing[p.Name] = true
		o.phase.podDeletions++
	}
}

// sample takes a snapshot every second, and after every poke, until ctx ends.
func (o *observer) sample(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-o.poke:
			// Coalesce a burst of events into one snapshot.
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
		if err := o.snap(ctx); err != nil && ctx.Err() == nil {
			o.mu.Lock()
			o.logf("snapshot: %v", err)
			o.mu.Unlock()
		}
	}
}

func (o *observer) snap(ctx context.Context) error {
	var claims v1.NodeClaimList
	if err := o.cache.List(ctx, &claims); err != nil {
		return err
	}
	var nodes corev1.NodeList
	if err := o.cache.List(ctx, &nodes); err != nil {
		return err
	}
	var pods corev1.PodList
	if err := o.cache.List(ctx, &pods, client.InNamespace(namespace)); err != nil {
		return err
	}
	var pool v1.NodePool
	poolErr := o.cache.Get(ctx, client.ObjectKey{Name: poolName}, &pool)
	now := time.Now()
	s := snapshot{at: now, claimsOfRev: map[string]int{}, instanceTypes: map[string]int{}}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		s.nodes++
		if nodeReady(n) {
			s.readyNodes++
		}
	}
	s.budgetNodes, s.disrupting = budgetCount(claims.Items, nodes.Items)
	for i := range claims.Items {
		nc := &claims.Items[i]
		s.claims++
		initialized := claimCondition(nc, v1.ConditionInitialized)
		if initialized {
			s.initialized++
		}
		if nc.DeletionTimestamp != nil {
			s.deleting++
		} else {
			s.claimsOfRev[nc.Labels[revLabel]]++
		}
		if it := nc.Labels[v1.LabelInstanceType]; it != "" {
			s.instanceTypes[it]++
			if price, ok := o.prices(nc.Labels); ok {
				s.dollars += price
			} else {
				s.unpriced++
			}
		}
	}
	s.allowed = -1
	if poolErr == nil {
		s.allowed = allowedDisruptions(&pool, s.budgetNodes)
	}
	var pending []string
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp == nil && p.Spec.NodeName != "" {
			s.bound++
		}
		switch {
		case p.DeletionTimestamp != nil:
			s.terminating++
		case p.Status.Phase == corev1.PodRunning:
			s.running++
		case p.Status.Phase == corev1.PodPending:
			s.pending++
			pending = append(pending, p.Name)
		}
	}

	o.mu.Lock()
	defer o.mu.Unlock()
	ph := o.phase
	if now.Sub(ph.start) >= time.Minute {
		for _, name := range pending {
			ph.pendingAfter1m[name] = true
		}
	}
	ph.maxDisrupting = max(ph.maxDisrupting, s.disrupting)
	ph.costs = append(ph.costs, costAt{now, s.dollars})
	if s.allowed >= 0 && s.disrupting > s.allowed {
		ph.overBudget++
		ph.maxOver = max(ph.maxOver, s.disrupting-s.allowed)
		if !ph.violating {
			ph.violations++
			o.logf("! BUDGET VIOLATION: %d nodes disrupting, the budget allows %d of %d", s.disrupting, s.allowed, s.budgetNodes)
		}
		ph.violating = true
	} else {
		ph.violating = false
	}
	o.last = s
	if !s.sameRow(o.lastRow) || now.Sub(o.lastRowAt) >= 30*time.Second {
		o.lastRow, o.lastRowAt = s, now
		o.logf("%s", s.row())
		_, _ = fmt.Fprintf(o.csv, "%.1f,%s,%d,%d,%d,%d,%d,%.4f,%d,%d,%d,%d,%d,%d,%d\n", now.Sub(o.t0).Seconds(), ph.name, s.claims, s.initialized,
			s.deleting, s.nodes, s.readyNodes, s.dollars, s.bound, s.running, s.pending, s.terminating, s.disrupting, s.allowed, s.budgetNodes)
	}
	return nil
}

// budgetCount counts a pool's nodes as upstream Karpenter's disruption
// budgets do (BuildDisruptionBudgetMapping in kubernetes-sigs/karpenter's
// pkg/controllers/disruption/helpers.go, v1.14): total are the NodeClaims
// whose Node is there and initialized (the karpenter.sh/initialized label)
// and whose instance is not terminating (InstanceTerminating); disrupting
// are those of them whose Node is not Ready, or that are being deleted or
// tainted karpenter.sh/disrupted. A NodeClaim whose Node is gone counts
// for neither: upstream's StateNode is not Initialized without its Node.
func budgetCount(claims []v1.NodeClaim, nodes []corev1.Node) (total, disrupting int) {
	byName := make(map[string]*corev1.Node, len(nodes))
	for i := range nodes {
		byName[nodes[i].Name] = &nodes[i]
	}
	for i := range claims {
		nc := &claims[i]
		n := byName[nc.Status.NodeName]
		if nc.Status.NodeName == "" || n == nil || n.Labels[v1.LabelNodeInitialized] != "true" || claimCondition(nc, "InstanceTerminating") {
			continue
		}
		total++
		if !nodeReady(n) || nc.DeletionTimestamp != nil || n.DeletionTimestamp != nil || scheduling.HasTaint(n.Spec.Taints, v1.DisruptedTaint) {
			disrupting++
		}
	}
	return total, disrupting
}

// allowedDisruptions is how many of a pool's initialized nodes its budgets
// (those without a schedule: the benchmark's) allow to be disrupting at
// once: the least of them, percentages of the initialized nodes rounded
// up, as upstream Karpenter counts.
func allowedDisruptions(np *v1.NodePool, initialized int) int {
	allowed := -1
	for _, b := range np.Spec.Disruption.Budgets {
		if b.Schedule != nil {
			continue
		}
		var n int
		if pct, ok := strings.CutSuffix(b.Nodes, "%"); ok {
			p, err := strconv.Atoi(pct)
			if err != nil {
				continue
			}
			n = int(math.Ceil(float64(p) * float64(initialized) / 100))
		} else {
			v, err := strconv.Atoi(b.Nodes)
			if err != nil {
				continue
			}
			n = v
		}
		if allowed < 0 || n < allowed {
			allowed = n
		}
	}
	if allowed < 0 { // no budgets: the default, 10 %
		allowed = int(math.Ceil(0.1 * float64(initialized)))
	}
	return allowed
}

func claimCondition(nc *v1.NodeClaim, t string) bool {
	for _, c := range nc.Status.Conditions {
		if c.Type == t {
			return c.Status == "True"
		}
	}
	return false
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// begin starts a phase: what follows is counted to it.
func (o *observer) begin(name, what string) *phase {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.phase = &phase{name: name, start: time.Now(), pendingAfter1m: map[string]bool{}}
	if !o.last.at.IsZero() {
		o.phase.costs = []costAt{{o.phase.start, o.last.dollars}} // until its first snapshot
	}
	o.phases = append(o.phases, o.phase)
	_, _ = fmt.Fprintf(o.timeline, "%s === phase %s: %s\n", o.since(o.phase.start), name, what)
	return o.phase
}

// note writes a line to the timeline.
func (o *observer) note(format string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.logf(format, args...)
}

// now is the latest snapshot and the last node change.
func (o *observer) now() (snapshot, time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.last, o.lastChange
}

// counts reads a phase's counters under the lock.
func (o *observer) counts(ph *phase) phase {
	o.mu.Lock()
	defer o.mu.Unlock()
	c := *ph
	c.changes = append([]time.Time(nil), ph.changes...)
	c.costs = append([]costAt(nil), ph.costs...)
	c.pendingAfter1m = nil
	return c
}

func (o *observer) pendingAfter1m(ph *phase) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(ph.pendingAfter1m)
}

// bursts groups change times into rounds: changes less than gap apart are
// one round.
func bursts(changes []time.Time, gap time.Duration) int {
	sort.Slice(changes, func(i, j int) bool { return changes[i].Before(changes[j]) })
	n := 0
	for i, t := range changes {
		if i == 0 || t.Sub(changes[i-1]) > gap {
			n++
		}
	}
	return n
}

// roundGap: NodeClaims created or deleted less than this apart are one
// round of consolidation (a round's deletions come within a second or
// two; upstream's replacements a few seconds before their candidates'
// deletion; rounds at least a validation, 15 s, apart).
const roundGap = 5 * time.Second

// fewestRounds is how few rounds of disruption the NodePool's budgets
// allow to go from nodes to left, each round taking as many as they allow
// of the nodes then left (-1: they allow none).
func fewestRounds(np *v1.NodePool, nodes, left int) int {
	rounds := 0
	for nodes > left {
		k := allowedDisruptions(np, nodes)
		if k <= 0 {
			return -1
		}
		nodes -= min(k, nodes-left)
		rounds++
	}
	return rounds
}

// waitFor polls the observer's snapshot every second until done says so
// or timeout passes; it returns when that was, and false on timeout.
func (o *observer) waitFor(ctx context.Context, timeout time.Duration, done func(s snapshot, lastChange time.Time) bool) (time.Time, bool) {
	deadline := time.Now().Add(timeout)
	for {
		s, last := o.now()
		if !s.at.IsZero() && done(s, last) {
			return s.at, true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return time.Now(), false
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}
