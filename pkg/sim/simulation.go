package sim

import (
	"context"
	"fmt"
	"hash/fnv"
	"io/fs"
	"math"
	"math/rand"
	"path"
	"sort"
	"strconv"
	"time"

	"github.com/joiner-autoscaler/joiner/pkg/autoscale"
	"github.com/joiner-autoscaler/joiner/pkg/report"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
	simcloud "github.com/joiner-autoscaler/joiner/pkg/cloudprovider/sim"
	"github.com/joiner-autoscaler/joiner/pkg/decide"
	"github.com/joiner-autoscaler/joiner/pkg/disruption"
	"github.com/joiner-autoscaler/joiner/pkg/kubescheduler"
	"github.com/joiner-autoscaler/joiner/pkg/podutil"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/scenario"
	"github.com/joiner-autoscaler/joiner/pkg/state"
	"github.com/joiner-autoscaler/joiner/pkg/trace"
)

// Provisioning batches like upstream: wait for 1 s without new pending
// pods, at most 10 s from the first.
const (
	batchIdle       = time.Second
	batchMax        = 10 * time.Second
	disruptionEvery = 10 * time.Second
	hpaEvery        = 15 * time.Second
	sampleEvery     = time.Minute
	registrationTTL = 15 * time.Minute
)

// Options tune a run.
type Options struct {
	// Progress, if set, is called with the fraction done as the run goes.
	Progress func(float64)
	// OnProvision, if set, is called after every provisioning pass that
	// planned for pods, with what it planned over and the NodeClaims it
	// created: a trace another host can be fed and compared with (the
	// controller's agreement test replays it).
	OnProvision func(ProvisioningPass)
	// Policy is provisioning's, disruption's and the NodeOverlays' (see
	// provisioning.Policy): decisions karpenter predicts what Karpenter
	// would do with the scenario.
	Policy provisioning.Policy
	// Trace, when set, is written what `joiner record` would have recorded
	// of the simulated cluster (the caller made it, with its header, and
	// closes it): a run a backtest can be held against.
	Trace *trace.Writer
	// NoBufferBaseline skips the second run without the scenario's
	// CapacityBuffers that says what they cost and saved (tune's variants
	// need only their own figures).
	NoBufferBaseline bool
}

// ProvisioningPass is one provisioning pass of a run.
type ProvisioningPass struct {
	At time.Time
	// Snapshot is what the pass planned over: the pending pods (those the
	// launch-loop guard gave up on left out), the nodes and in-flight
	// claims, the NodePools and their offerings. It is the run's: callers
	// must not change it.
	Snapshot *provisioning.Snapshot
	// Launches are the NodeClaims the pass created, in order.
	Launches []Launch
}

// Launch is one NodeClaim and what the simulated cloud made of it.
type Launch struct {
	// NodeClaim is the claim as created, before the cloud launched it.
	NodeClaim *v1.NodeClaim
	// Launched is the claim as the cloud launched it (instance type, zone,
	// capacity type resolved), or nil when Err says why it did not.
	Launched *v1.NodeClaim
	Err      error
}

// simulation is one run: the simulated cluster (its nodes and pods, the
// cloud, the workloads driving it) and the event loop that moves it
// through time, calling the engine (provisioning and disruption, through
// pkg/decide) as a controller would.
type simulation struct {
	// buf is the scenario's CapacityBuffers as last resolved.
	buf buffers
	// resizes are the scenario's resize events, their targets found;
	// deferred the pods whose resize waits for room on their node.
	resizes  []*resizeTarget
	deferred []deferredResize

	in    *scenario.Input
	opts  Options
	fsys  fs.FS
	dir   string
	clk   *clock
	start time.Time
	end   time.Time
	rng   *rand.Rand

	pools      []*v1.NodePool
	cloud      *simcloud.Provider
	daemonSets []*appsv1.DaemonSet
	dsPods     []*corev1.Pod

	workloads []*workload
	bare      []*simPod
	pending   map[*simPod]bool
	// queued counts the pods made pending: each one's turn in
	// kube-scheduler's queue among pods created at the same instant.
	queued uint64
	// pods are the simulator's facts about each pod the Store holds (its
	// owner, when it was made and started), by the Store's key; bound
	// counts the binds (simPod.bound).
	pods     map[podKey]*simPod
	bound    uint64
	nodes    []*simNode // live nodes, in launch order
	allNodes []*simNode // every node ever launched, for cost
	byName   map[string]*simNode
	nodeSeq  int
	// cohortSeq numbers the launch cohorts.
	cohortSeq int
	queue     disruption.Queue

	batchFirst, batchLast time.Time
	batchArmed            bool
	queueArmed            bool
	wakeArmed             bool // a disruption pass is due because a node went
	held                  bool // the last decision left a candidate to a budget
	// leaving: the nodes of the consolidation commands carried out since
	// the last decision (see holding).
	leaving           []*simNode
	batchTimer        time.Time
	nextConsolidation time.Time
	// nextConsolidatable: when the next node's consolidateAfter ends (a
	// pass runs then even when nothing else changed).
	nextConsolidatable   time.Time
	consolidationBackoff time.Duration
	bindArmed            bool
	dirty                bool
	// schedTokens are the pods kube-scheduler may still try now, as of
	// schedAt; schedArmed: it looks again in a second (see paced).
	schedTokens float64
	schedAt     time.Time
	schedArmed  bool

	rep *recorder
	// st is the cluster as the engine reads it, fed like informers feed a
	// controller; rv is the last resourceVersion given out.
	st *state.Store
	rv uint64
	// storeCloudAt: the cloud version whose instance types st holds.
	storeCloudAt int
	// binder places pods as kube-scheduler would; bindPods maps the pods
	// of its current call back to the simulation's.
	binder   *kubescheduler.Binder
	bindPods map[*corev1.Pod]*simPod
	// decider is the engine under the run's policy (see package decide).
	decider *decide.Decider
	// launches collects a provisioning pass's launches for OnProvision.
	launches []Launch
	// vol is the cluster's storage.
	vol volumeModel
	// repairAt is when node repair runs next (zero: not armed).
	repairAt time.Time
	// tracer writes the run as a trace (Options.Trace; nil: none).
	tracer *tracer
}

// syncOfferings gives the Store the simulated cloud's instance types when
// they changed, and returns their version (the Decider's configuration
// version: the NodePools and DaemonSets of a run never change).
func (e *simulation) syncOfferings() uint64 {
	if v := e.cloud.Version(); v != e.storeCloudAt {
		e.st.SetInstanceTypes(e.cloud.InstanceTypes())
		e.storeCloudAt = v
	}
	return uint64(e.storeCloudAt)
}

// Run simulates a loaded scenario and returns its report, or ctx's error
// if ctx ends first.
//
// A run allocates many short-lived scheduling states: a command that runs
// long simulations may trade memory for less GC work (joiner's raise the
// GC percentage to 400); Run leaves process-wide settings alone.
func Run(ctx context.Context, in *scenario.Input, fsys fs.FS, dir string, opts Options) (*report.Report, error) {
	e, err := newSimulation(in, fsys, dir, opts)
	if err != nil {
		return nil, err
	}
	for _, n := range opts.Policy.Notes() {
		e.rep.note(n)
	}
	for _, n := range in.Notes { // what loading assumed (default settings, fields not modelled)
		e.rep.note(n)
	}
	if len(in.NodeClasses) == 0 {
		e.rep.note("the scenario has no EC2NodeClass: the node classes its NodePools name are taken to exist, with one image each (no AMI drift)")
	}
	if in.Replay == nil && len(e.workloads) == 0 && len(e.bare) == 0 && len(in.CronJobs) == 0 {
		e.rep.note("the scenario has no workloads, so nothing asks for nodes: add Deployments, StatefulSets, Jobs, CronJobs or Pods beside the NodePools")
	}
	e.schedule()
	total := e.end.Sub(e.start)
	var lastPct float64 = -1
	err = e.clk.run(ctx, e.end, func(now time.Time) {
		if opts.Progress == nil {
			return
		}
		pct := math.Floor(float64(now.Sub(e.start)) / float64(total) * 100)
		if pct != lastPct {
			lastPct = pct
			opts.Progress(pct / 100)
		}
	})
	if err != nil {
		return nil, err
	}
	if e.tracer != nil && e.tracer.err != nil {
		return nil, fmt.Errorf("writing the run's trace: %w", e.tracer.err)
	}
	rep := e.finish()
	if rep.Buffers != nil && !opts.NoBufferBaseline {
		if err := withoutBuffers(ctx, in, fsys, dir, opts, rep); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// newSimulation builds a run; everything that depends on opts (the
// overlays' merge) is set from them here, before anything reads them.
func newSimulation(in *scenario.Input, fsys fs.FS, dir string, opts Options) (*simulation, error) {
	s := in.Scenario.Spec
	e := &simulation{in: in, fsys: fsys, dir: dir, opts: opts, clk: &clock{now: s.Start}, start: s.Start.UTC(), end: s.Start.UTC().Add(s.Duration.Duration),
		rng: rand.New(rand.NewSource(s.Seed)), pending: map[*simPod]bool{}, pods: map[podKey]*simPod{}, byName: map[string]*simNode{}, decider: decide.New(opts.Policy, decide.Options{}),
		st: state.NewStore(state.AssumeUnschedulable), storeCloudAt: -1}
	e.clk.now = e.start
	e.st.SetPinLaunchedPods(opts.Policy.PinsLaunchedPods())
	if opts.Trace != nil {
		e.tracer = &tracer{w: opts.Trace, scaled: map[*workload]int{}, created: map[*simPod]string{}, nodes: map[*simNode]string{}, claims: map[*simNode]bool{}, registered: map[*simNode]metav1.Time{}}
	}
	e.queue.Options = disruption.Options{SpotToSpot: s.ConsolidationSpotToSpot}
	all, assumptions, err := InstanceTypes(in, fsys, dir)
	if err != nil {
		return nil, err
	}
	e.pools = append(e.pools, in.NodePools...)
	sort.Slice(e.pools, func(i, j int) bool { return e.pools[i].Name < e.pools[j].Name })
	e.st.SetNodePools(e.pools)
	images := map[string]string{}
	for _, nc := range in.NodeClasses {
		images[nc.Name] = amiOf(nc)
	}
	e.rep = newRecorder(e)
	for _, a := range assumptions {
		e.rep.note("catalog: " + a)
	}
	e.cloud, err = simcloud.New(e.pools, all, images, simcloud.Options{Now: func() time.Time { return e.clk.now }, Rand: e.rng,
		APIErrorRate: s.Faults.APIErrorRate, OnError: e.rep.cloudError, Overlays: in.NodeOverlays, OverlayMode: opts.Policy.OverlayMode(),
		Reservations: s.Reservations(), ReservationTerms: reservationTerms(in)})
	if err != nil {
		return nil, fmt.Errorf("scenario.yaml: spec.capacityReservations: %w", err)
	}
	e.rep.overlays(e.cloud.Overlays())
	e.traceConfig()
	if err := e.buildWorkloads(); err != nil {
		return nil, err
	}
	e.setSpreadDefaults()
	return e, nil
}

// InstanceTypes are the instance types a run of in offers, with their
// prices: its catalog (spec.catalog, read from fsys at dir, or the
// embedded one) for its region and zones, and what the catalog assumed.
func InstanceTypes(in *scenario.Input, fsys fs.FS, dir string) ([]*cloudprovider.InstanceType, []string, error) {
	s := in.Scenario.Spec
	var cat *catalog.Catalog
	var err error
	if s.Catalog != "" {
		b, rerr := fs.ReadFile(fsys, path.Join(dir, s.Catalog))
		if rerr != nil {
			return nil, nil, fmt.Errorf("scenario.yaml: spec.catalog %q: %w (the path is relative to the scenario directory)", s.Catalog, rerr)
		}
		cat, err = catalog.Parse(b, s.Catalog)
	} else {
		cat, err = catalog.Default()
	}
	if err != nil {
		return nil, nil, err
	}
	all, assumptions, err := cat.InstanceTypes(catalog.Options{Region: s.Region, Zones: s.Zones})
	if err != nil {
		return nil, nil, fmt.Errorf("scenario.yaml: spec.region/spec.zones: %w", err)
	}
	return all, assumptions, nil
}

// Offerings are the instance types a run of in under policy offers each
// NodePool, by NodePool name, priced as the run prices them (NodeOverlays
// applied): what a backtest prices recorded nodes with.
func Offerings(in *scenario.Input, fsys fs.FS, dir string, policy provisioning.Policy) (map[string][]*cloudprovider.InstanceType, error) {
	all, _, err := InstanceTypes(in, fsys, dir)
	if err != nil {
		return nil, err
	}
	start := in.Scenario.Spec.Start
	cloud, err := simcloud.New(in.NodePools, all, nil, simcloud.Options{Now: func() time.Time { return start }, Rand: rand.New(rand.NewSource(in.Scenario.Spec.Seed)),
		Overlays: in.NodeOverlays, OverlayMode: policy.OverlayMode(), Reservations: in.Scenario.Spec.Reservations(), ReservationTerms: reservationTerms(in)})
	if err != nil {
		return nil, err
	}
	return cloud.InstanceTypes(), nil
}

// nodeClassWithImage is the scenario's EC2NodeClass of that name (a bare
// one when it has none) selecting the image alias.
func (e *simulation) nodeClassWithImage(name, alias string) *awsv1.EC2NodeClass {
	nc := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, c := range e.in.NodeClasses {
		if c.Name == name {
			nc = c.DeepCopy()
		}
	}
	nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: alias}}
	return nc
}

func amiOf(nc *awsv1.EC2NodeClass) string {
	for _, t := range nc.Spec.AMISelectorTerms {
		switch {
		case t.Alias != "":
			return t.Alias
		case t.ID != "":
			return t.ID
		case t.Name != "":
			return t.Name
		}
	}
	return "default"
}

// autoscaled finds an autoscaler's target workload and the load that
// drives it, or says what to add to the scenario.
func (e *simulation) autoscaled(kind, namespace, name, targetKey, example string, byName map[string]*workload, loads map[string]*scenario.LoadSpec) (*workload, *scenario.LoadSpec, *autoscale.Load, error) {
	target, ok := byName[targetKey]
	if !ok {
		return nil, nil, nil, fmt.Errorf("%s %s: scaleTargetRef %s is not in the scenario", kind, name, targetKey)
	}
	spec, ok := loads[kind+"/"+namespace+"/"+name]
	if !ok {
		return nil, nil, nil, fmt.Errorf("%s %s: scenario.yaml has no load for it; add spec.loads: [{target: {kind: %s, name: %s}, %s}]", kind, name, kind, name, example)
	}
	lf, err := autoscale.NewLoad(*spec, e.fsys, e.dir)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("scenario.yaml: the load of %s %s: %w", kind, name, err)
	}
	return target, spec, lf, nil
}

func jobWorkload(name, ns string, tmpl corev1.PodTemplateSpec, completions, parallelism *int32, runtimes map[string]time.Duration) *workload {
	c, p := 1, 1
	if completions != nil {
		c = int(*completions)
	}
	if parallelism != nil {
		p = int(*parallelism)
	}
	rt, ok := runtimes[ns+"/"+name]
	if !ok {
		rt = 5 * time.Minute
	}
	return &workload{kind: "Job", namespace: ns, name: name, template: tmpl, replicas: p, job: true, completions: c, runtime: rt}
}

func (e *simulation) scheduleCron(cm *cronModel, completions, parallelism *int32, runtimes map[string]time.Duration) {
	next := cm.schedule.Next(e.clk.now)
	if next.After(e.end) {
		return
	}
	e.clk.at(next, func() {
		jobName := fmt.Sprintf("%s-%d", cm.name, next.Unix()/60)
		rt, ok := runtimes[cm.namespace+"/"+cm.name]
		if ok {
			runtimes[cm.namespace+"/"+jobName] = rt
		}
		w := jobWorkload(jobName, cm.namespace, cm.template, completions, parallelism, runtimes)
		w.cron = cm.name
		w.spread = defaultSpreadSelector(cm.namespace, cm.template.Labels, e.in.Services, nil)
		e.workloads = append(e.workloads, w)
		e.reconcile(w)
		e.scheduleCron(cm, completions, parallelism, runtimes)
	})
}

// schedule puts the run's initial and periodic work on the agenda.
func (e *simulation) schedule() {
	e.clk.at(e.start, func() {
		for _, w := range e.workloads {
			e.reconcile(w)
		}
		for _, p := range e.bare {
			e.addPending(p)
		}
	})
	if len(e.in.CapacityBuffers) > 0 {
		e.clk.every(e.start, bufferResync, e.end, e.armBatch)
	}
	e.clk.every(e.start.Add(disruptionEvery), disruptionEvery, e.end, e.disrupt)
	e.clk.every(e.start, sampleEvery, e.end.Add(time.Nanosecond), e.rep.sample)
	for _, ev := range e.in.Scenario.Spec.Events {
		ev := ev
		e.clk.at(e.start.Add(ev.At.Duration), func() {
			if a := ev.NodeClassAMI; a != nil {
				e.setNodeClass(e.nodeClassWithImage(a.Name, a.Alias))
			}
			for _, t := range e.resizes {
				if t.r == ev.Resize {
					e.resize(t)
				}
			}
			if ri := ev.ReservationInterruption; ri != nil {
				e.reclaimReservation(ri.ID)
			}
		})
	}
	if len(e.resizes) > 0 {
		e.clk.every(e.start.Add(resizeEvery), resizeEvery, e.end, e.retryResizes)
	}
	e.scheduleReservations()
	for _, w := range e.in.Scenario.Spec.Faults.CapacityWindows() {
		e.clk.at(e.start.Add(w.From), func() { e.setCapacity(w, false) })
		e.clk.at(e.start.Add(w.To), func() { e.setCapacity(w, true) })
	}
}

func (e *simulation) setCapacity(w simcloud.CapacityWindow, available bool) {
	// The cloud knows; Joiner learns only by launching and failing.
	e.cloud.SetCapacity(w.InstanceType, w.Zone, w.CapacityType, available)
	e.dirty = true
	e.armBatch()
}

// reconcile brings a workload to its wanted pod count: new pods are
// pending; surplus pods go in the order its controller deletes them
// (scaleDownOrder).
func (e *simulation) reconcile(w *workload) {
	e.traceWorkload(w)
	want := w.wanted()
	for len(w.pods) < want {
		p := w.newPod(e.clk.now)
		if w.claimTemplates != nil {
			e.claimPod(w, p.pod)
		}
		w.pods = append(w.pods, p)
		e.rep.podCreated(p)
		e.addPending(p)
	}
	if len(w.pods) > want {
		e.scaleDownOrder(w)
		for len(w.pods) > want {
			p := w.pods[len(w.pods)-1]
			w.pods = w.pods[:len(w.pods)-1]
			e.removePod(p, podFinished)
		}
	}
}

// scaleDownOrder sorts a workload's pods so that those its controller
// deletes first come last. A ReplicaSet's (kube-controller-manager's
// ActivePodsWithRanks, LogarithmicScaleDown on, as it is by default):
// unbound pods first, then those not yet running, then those of the lower
// controller.kubernetes.io/pod-deletion-cost, then those on the nodes
// that run the most of the workload's pods (a scale-down evens the nodes
// out rather than emptying one), then those running for less time, counted
// in powers of two of it, then at random (upstream compares the pods'
// UIDs: here a hash of the name, the same for a seed), then the newest.
// Other kinds: unbound first, then the newest.
func (e *simulation) scaleDownOrder(w *workload) {
	type facts struct {
		node           *simNode
		bound, running bool
		deletionCost   int32
		colocated      int
		runLog         int
		hash           uint64
	}
	byPod := make(map[*simPod]*facts, len(w.pods))
	onNode := map[*simNode]int{}
	for _, p := range w.pods {
		f := &facts{node: e.nodeOf(p)}
		if f.node != nil {
			f.bound = true
			onNode[f.node]++
		}
		byPod[p] = f
	}
	replicaSet := w.kind == "Deployment" || w.kind == "ReplicaSet"
	if replicaSet {
		for _, p := range w.pods {
			f := byPod[p]
			if f.bound {
				f.colocated = onNode[f.node]
			}
			f.running = f.bound && !p.running.IsZero()
			if v, err := strconv.ParseInt(p.pod.Annotations[corev1.PodDeletionCost], 10, 32); err == nil {
				f.deletionCost = int32(v) // unset or not an int32: 0, as upstream reads it
			}
			f.runLog = -1
			if d := e.clk.now.Sub(p.running); f.running && d > 0 {
				f.runLog = int(math.Log2(float64(d)))
			}
			h := fnv.New64a()
			h.Write([]byte(p.pod.Name))
			f.hash = h.Sum64()
		}
	}
	// keep reports whether a is kept longer than b: sorted by it, the
	// pods deleted first are last.
	keep := func(a, b *simPod) bool {
		fa, fb := byPod[a], byPod[b]
		if fa.bound != fb.bound {
			return fa.bound
		}
		if replicaSet {
			switch {
			case fa.running != fb.running:
				return fa.running
			case fa.deletionCost != fb.deletionCost:
				return fa.deletionCost > fb.deletionCost
			case fa.colocated != fb.colocated:
				return fa.colocated < fb.colocated
			case fa.running && !a.running.Equal(b.running) && fa.runLog != fb.runLog:
				return fa.runLog > fb.runLog
			case fa.running && !a.running.Equal(b.running):
				return fa.hash > fb.hash
			}
		}
		return a.created.Before(b.created)
	}
	sort.SliceStable(w.pods, func(i, j int) bool { return keep(w.pods[i], w.pods[j]) })
}

func (e *simulation) addPending(p *simPod) {
	e.pending[p] = true
	e.queued++
	p.queued = e.queued
	var claims []corev1.PodResourceClaimStatus
	if len(p.pod.Spec.ResourceClaims) > 0 && e.modelDRA() {
		claims = e.makeClaims(p.pod)
	}
	e.setPod(p, func(cp *corev1.Pod) {
		cp.CreationTimestamp = metav1.NewTime(p.created)
		cp.Status.NominatedNodeName = ""
		if claims != nil {
			cp.Status.ResourceClaimStatuses = claims
		}
	})
	e.armBind()
}

// podEnd is how a pod leaves the cluster.
type podEnd int

const (
	podFinished podEnd = iota // it completed, or its owner deleted it
	podEvicted                // evicted: its controller makes another
)

// removePod deletes a pod; an evicted one its controller replaces.
func (e *simulation) removePod(p *simPod, end podEnd) {
	evicted := end == podEvicted
	delete(e.pending, p)
	e.unbind(p)
	if len(p.pod.Spec.ResourceClaims) > 0 && e.modelDRA() {
		e.releaseClaims(p.pod)
	}
	e.tracePodGone(p)
	e.deletePod(p)
	p.finished = true
	if evicted {
		e.replace(p)
	}
}

// unbind is a pod leaving its node, if it is on one: the node's last pod
// event (the pod's deletion takes it off).
func (e *simulation) unbind(p *simPod) {
	n := e.nodeOf(p)
	if n == nil {
		return
	}
	e.podEvent(n)
	e.dirty = true
}

// replace is a controller noticing its pod is gone: it makes another. A
// DaemonSet's pod belongs to its node (bindDaemons starts them); a bare pod
// has no controller: it is gone for good.
func (e *simulation) replace(p *simPod) {
	switch w := p.owner; {
	case w != nil:
		w.forget(p)
		e.reconcile(w)
	case !podutil.IsDaemonSetPod(p.pod):
		e.rep.barePodLost(p)
	}
}

// runHPA is one sync of the workload's HPA.
func (e *simulation) runHPA(w *workload) {
	ready := 0
	for _, p := range w.pods {
		if !p.running.IsZero() {
			ready++
		}
	}
	r := w.hpa.Evaluate(e.clk.now, e.start, w.replicas, ready, len(w.pods)-ready)
	if r != w.replicas {
		w.replicas = r
		e.rep.scaled(w, r)
		e.reconcile(w)
	}
}

func (e *simulation) armBind() {
	if e.bindArmed {
		return
	}
	e.bindArmed = true
	e.clk.after(0, func() {
		e.bindArmed = false
		e.bind()
	})
}

// bind places pending pods on ready nodes as kube-scheduler's default
// profile would; what stays pending starts a provisioning batch.
func (e *simulation) bind() {
	if len(e.pending) == 0 {
		return
	}
	var nodes []*provisioning.Node
	byName := map[string]*simNode{}
	for _, n := range e.nodes {
		if n.state == nodeReady || n.state == nodeDraining {
			nodes = append(nodes, e.view(n))
			byName[n.name] = n
		}
	}
	pods, byPod := e.pendingPods()
	pods = e.paced(pods, byPod)
	for _, p := range pods {
		byPod[p].tried = true
	}
	if len(nodes) > 0 {
		if e.binder == nil {
			listed := len(e.in.Scenario.Spec.SchedulerConfig.DefaultConstraints()) > 0
			opts := kubescheduler.BindOptions{Rand: e.rng, SpreadSelector: func(p *corev1.Pod) k8slabels.Selector {
				switch sp := e.bindPods[p]; {
				case sp == nil, listed: // configured defaults replace the system's (defaultingType List); the pods carry them
					return nil
				case sp.owner != nil:
					return sp.owner.spread
				default:
					return sp.spread
				}
			}, PDBs: e.pdbs, Volumes: e.st.Volumes}
			if e.modelDRA() {
				opts.DRA = e.st.DRA
			}
			e.binder = kubescheduler.NewBinder(opts)
		}
		e.bindPods = byPod
		res := e.binder.Bind(nodes, pods)
		for _, plan := range res.ExistingNodes {
			n := byName[plan.Node.Name]
			for _, p := range plan.Pods {
				if a, ok := res.Devices[p]; ok {
					e.allocateClaims(p, a)
				}
				e.bindPod(byPod[p], n)
			}
		}
		for _, pre := range res.Preemptions {
			e.preempt(byPod[pre.Pod], byName[pre.Node.Name], pre.Victims)
		}
	}
	if len(e.pending) > 0 {
		e.armBatch()
	}
}

// paced are the pending pods kube-scheduler gets to now: those it has
// tried before (it tries them again as the cluster changes) and, at the
// scenario's spec.kubeScheduler.podsPerSecond, the first of the others in
// the order they came (all of them without a pace); when it leaves some,
// it looks again a second later.
func (e *simulation) paced(pods []*corev1.Pod, byPod map[*corev1.Pod]*simPod) []*corev1.Pod {
	k := e.in.Scenario.Spec.KubeScheduler
	if k == nil || k.PodsPerSecond <= 0 {
		return pods
	}
	rate := k.PodsPerSecond
	if e.schedAt.IsZero() {
		e.schedTokens = rate
	} else {
		e.schedTokens = min(rate, e.schedTokens+rate*e.clk.now.Sub(e.schedAt).Seconds())
	}
	e.schedAt = e.clk.now
	out := make([]*corev1.Pod, 0, len(pods))
	left := false
	for _, p := range pods {
		switch {
		case byPod[p].tried:
			out = append(out, p)
		case e.schedTokens >= 1:
			e.schedTokens--
			out = append(out, p)
		default:
			left = true
		}
	}
	if left && !e.schedArmed {
		e.schedArmed = true
		e.clk.after(time.Second, func() {
			e.schedArmed = false
			e.bind()
		})
	}
	return out
}

func (e *simulation) pendingPods() ([]*corev1.Pod, map[*corev1.Pod]*simPod) {
	list := make([]*simPod, 0, len(e.pending))
	for p := range e.pending {
		list = append(list, p)
	}
	sort.Slice(list, func(i, j int) bool {
		if !list[i].created.Equal(list[j].created) {
			return list[i].created.Before(list[j].created)
		}
		return list[i].queued < list[j].queued
	})
	pods := make([]*corev1.Pod, len(list))
	byPod := make(map[*corev1.Pod]*simPod, len(list))
	for i, p := range list {
		pods[i] = e.scheduled(p)
		byPod[pods[i]] = p
	}
	return pods, byPod
}

// scheduled is the pod as kube-scheduler schedules it: the Store's, with
// the default spread constraints when the scenario has them.
func (e *simulation) scheduled(p *simPod) *corev1.Pod {
	if sp := e.st.Pod(p.pod.Namespace, p.pod.Name); sp != nil {
		return sp
	}
	return p.pod
}

func (e *simulation) bindPod(p *simPod, n *simNode) {
	delete(e.pending, p)
	e.bound++
	p.bound = e.bound
	p.running = e.clk.now
	start := metav1.NewTime(e.clk.now)
	e.setPod(p, func(cp *corev1.Pod) {
		cp.Spec.NodeName = n.name
		cp.Status.NominatedNodeName = ""
		cp.Status.StartTime = &start
	})
	e.bindVolumes(p.pod, n)
	e.podEvent(n)
	e.dirty = true
	e.rep.podRunning(p)
	if p.owner != nil && p.owner.job {
		w := p.owner
		e.clk.after(w.runtime, func() {
			if p.finished || e.nodeOf(p) == nil {
				return
			}
			w.succeeded++
			e.traceSucceeded(p)
			w.forget(p)
			e.removePod(p, podFinished)
			e.reconcile(w)
		})
	}
}
