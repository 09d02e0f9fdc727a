// Package kwok is a cloud provider for real API servers without real
// machines: it chooses instance types and offerings as the simulated EC2
// does (from the same catalog), and "launches" an instance by creating the
// Node a kubelet would register, annotated for kwok's controller, which
// makes it Ready and runs its pods.
//
// With Options.Boot it is the simulator's EC2 in a controller (joiner
// controller --cloud-provider sim): each instance's boot is drawn from the
// simulator's model on an injected clock — its Node registers only after
// the launch and registration latencies and is made Ready by the provider
// (as its kubelet, and the node lifecycle controller lifting the not-ready
// taint, would) after the initialization latency — and launches fail at
// the scenario's API error rate and in its insufficient-capacity windows.
// One provider, two timings: the Node a kubelet registers is the same.
package kwok

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	simcloud "github.com/joiner-autoscaler/joiner/pkg/cloudprovider/sim"
)

// AnnotationNode marks the Nodes kwok's controller manages (its default
// manageNodesWithAnnotationSelector).
const AnnotationNode = "kwok.x-k8s.io/node"

// Options configure a provider beyond New's instant Nodes.
type Options struct {
	// Name identifies the provider in logs and metrics ("kwok" when empty).
	Name string
	// Clock times launches, the insufficient-capacity cache, the capacity
	// windows and the boots. Required.
	Clock clock.WithDelayedExecution
	// Boot, when set, is how instances come up (see the package comment);
	// nil registers each Node at launch, for kwok's controller to make Ready.
	Boot *simcloud.BootModel
	// Rand draws the boots and the API errors; required with Boot or
	// APIErrorRate. Seed it for a reproducible cloud.
	Rand *rand.Rand
	// APIErrorRate is the share of launch calls that fail outright.
	APIErrorRate float64
	// Capacity windows, from the provider's creation on.
	Capacity []simcloud.CapacityWindow
	// OnError is told every error the simulated cloud returns.
	OnError func(operation, code string)
	// SpotInterruptionsPerNodeHour is the rate at which a spot instance is
	// interrupted, as the simulator draws it (simcloud.SpotInterruption):
	// the notice comes on Interruptions (see Interrupt) and the instance is
	// reclaimed — its Node deleted — simcloud.InterruptionNotice later.
	// Requires Rand.
	SpotInterruptionsPerNodeHour float64
}

// Provider is the kwok cloud provider. It is safe for concurrent use.
type Provider struct {
	mu     sync.Mutex // guards sim, simIDs, opts.Rand and booting
	sim    *simcloud.Provider
	simIDs map[string]string // provider ID → the simulated EC2's ID, for what this process launched
	client client.Client
	opts   Options
	// booting are the instances launched whose Node has not registered
	// (or never will), with the timers that bring them up.
	booting map[string]*booting
	// interruptions are the notices Interrupt sends.
	interruptions chan cloudprovider.Interruption
}

type booting struct {
	claim  *v1.NodeClaim
	timers []clock.Timer
}

// ProviderIDPrefix begins every kwok provider ID; the claim's name follows.
// The simulated EC2's IDs count from 1 in every process, so a restarted
// controller would give a new instance the ID of one launched before it
// — two Nodes, one provider ID. A claim's name is unique while it exists
// (and its Node, the instance, is named for it), and naming the instance
// by it makes a launch repeated after a crash find the instance the first
// one made.
const ProviderIDPrefix = "kwok://"

var (
	_ cloudprovider.CloudProvider = (*Provider)(nil)
	_ cloudprovider.Interrupter   = (*Provider)(nil)
)

// New returns a provider launching the catalog's instance types as Nodes
// through c, timed by clk: each Node registers at launch.
func New(c client.Client, types []*cloudprovider.InstanceType, clk clock.WithDelayedExecution) (*Provider, error) {
	return NewWithOptions(c, types, Options{Clock: clk})
}

// NewWithOptions returns a provider launching the catalog's instance types
// as Nodes through c, as opts say.
func NewWithOptions(c client.Client, types []*cloudprovider.InstanceType, opts Options) (*Provider, error) {
	if opts.Clock == nil {
		return nil, fmt.Errorf("kwok provider: Options.Clock is required")
	}
	if (opts.Boot != nil || opts.APIErrorRate > 0 || opts.SpotInterruptionsPerNodeHour > 0) && opts.Rand == nil {
		return nil, fmt.Errorf("kwok provider: Options.Rand is required with Boot, APIErrorRate or SpotInterruptionsPerNodeHour")
	}
	if opts.Name == "" {
		opts.Name = "kwok"
	}
	sim, err := simcloud.New(nil, types, nil, simcloud.Options{Now: opts.Clock.Now, Rand: opts.Rand, APIErrorRate: opts.APIErrorRate, OnError: opts.OnError})
	if err != nil {
		return nil, err
	}
	p := &Provider{sim: sim, simIDs: map[string]string{}, client: c, opts: opts, booting: map[string]*booting{}, interruptions: make(chan cloudprovider.Interruption, 64)}
	for _, w := range opts.Capacity {
		p.capacityAt(w, w.From, false)
		p.capacityAt(w, w.To, true)
	}
	return p, nil
}

// capacityAt sets the window's capacity after d (at once when d <= 0).
func (p *Provider) capacityAt(w simcloud.CapacityWindow, d time.Duration, available bool) {
	set := func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.sim.SetCapacity(w.InstanceType, w.Zone, w.CapacityType, available)
	}
	if d <= 0 {
		set()
		return
	}
	// A fake clock runs AfterFunc's function while it holds its lock, and
	// p.mu is held around calls that read the clock: not here, then.
	p.opts.Clock.AfterFunc(d, func() { go set() })
}

// Name identifies the provider.
func (p *Provider) Name() string { return p.opts.Name }

// SetNodePools tells the provider the NodePools there are (see
// simcloud.Provider.SetNodePools).
func (p *Provider) SetNodePools(pools []*v1.NodePool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sim.SetNodePools(pools)
}

// Create chooses the offering and registers the claim's Node: at once, or
// after the boot drawn for it. It is idempotent: when the claim's Node
// exists already — launched by a controller killed before it recorded the
// launch on the claim — that is the instance, and the claim is launched as
// it.
func (p *Provider) Create(ctx context.Context, nc *v1.NodeClaim) (*v1.NodeClaim, error) {
	p.mu.Lock()
	launched, err := p.sim.Create(ctx, nc)
	if err != nil {
		p.mu.Unlock()
		return nil, err
	}
	simID := launched.Status.ProviderID
	launched.Status.ProviderID = ProviderIDPrefix + nc.Name
	p.simIDs[launched.Status.ProviderID] = simID
	interruptAfter := time.Duration(-1)
	if p.opts.SpotInterruptionsPerNodeHour > 0 && launched.Labels[v1.LabelCapacityType] == v1.CapacityTypeSpot {
		interruptAfter = simcloud.SpotInterruption(p.opts.Rand, p.opts.SpotInterruptionsPerNodeHour)
	}
	if p.opts.Boot != nil {
		b := p.opts.Boot.Draw(p.opts.Rand)
		p.mu.Unlock()
		p.boot(launched, b)
		p.interruptAfter(launched.Status.ProviderID, b.Launch, interruptAfter)
		return launched, nil
	}
	p.mu.Unlock()
	p.interruptAfter(launched.Status.ProviderID, 0, interruptAfter)
	err = p.client.Create(ctx, nodeFor(launched))
	if err == nil {
		return launched, nil
	}
	p.mu.Lock()
	_ = p.sim.Delete(ctx, withProviderID(launched, simID))
	delete(p.simIDs, launched.Status.ProviderID)
	p.mu.Unlock()
	if !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	existing := &corev1.Node{}
	if err := p.client.Get(ctx, client.ObjectKey{Name: nc.Name}, existing); err != nil {
		return nil, fmt.Errorf("reading the Node of NodeClaim %s, launched before: %w", nc.Name, err)
	}
	if existing.Spec.ProviderID != launched.Status.ProviderID {
		return nil, fmt.Errorf("launching NodeClaim %s: Node %s exists with provider ID %q, not %q", nc.Name, existing.Name, existing.Spec.ProviderID, launched.Status.ProviderID)
	}
	// What the earlier launch chose, as its Node says: the offering's
	// labels, capacity and allocatable.
	for k := range launched.Labels {
		if v, ok := existing.Labels[k]; ok {
			launched.Labels[k] = v
		}
	}
	launched.Status.Capacity, launched.Status.Allocatable = existing.Status.Capacity, existing.Status.Allocatable
	return launched, nil
}

// boot schedules the instance's Node: registered, then Ready.
func (p *Provider) boot(launched *v1.NodeClaim, b simcloud.Boot) {
	id := launched.Status.ProviderID
	bt := &booting{claim: launched}
	p.mu.Lock()
	p.booting[id] = bt
	p.mu.Unlock()
	if b.NeverRegisters {
		return // the registration TTL deletes its claim, and the claim's deletion the instance
	}
	// Not under p.mu (see capacityAt); the steps run off the clock's
	// goroutine, as they write to the API server. Ready is timed from the
	// launch but follows the registration: a clock that jumps past both
	// still registers the Node first.
	readyAt := p.opts.Clock.Now().Add(b.Ready())
	timer := p.opts.Clock.AfterFunc(b.Registered(), func() { go p.register(id, readyAt) })
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.booting[id] != bt { // deleted meanwhile
		timer.Stop()
		return
	}
	bt.timers = []clock.Timer{timer}
}

// register is the instance's kubelet registering its Node, and then, at
// readyAt, reporting it Ready.
func (p *Provider) register(id string, readyAt time.Time) {
	p.mu.Lock()
	bt := p.booting[id]
	p.mu.Unlock()
	if bt == nil {
		return // deleted while it booted
	}
	ctx := context.Background()
	if err := p.client.Create(ctx, nodeFor(bt.claim)); err != nil && !apierrors.IsAlreadyExists(err) {
		log.FromContext(ctx).Error(err, "registering the Node of a simulated instance", "providerID", id)
		return
	}
	p.mu.Lock()
	deleted := p.booting[id] != bt
	delete(p.booting, id)
	p.mu.Unlock()
	if deleted { // while it registered: the Node goes with the instance
		_ = client.IgnoreNotFound(p.client.Delete(ctx, nodeFor(bt.claim)))
		return
	}
	if d := readyAt.Sub(p.opts.Clock.Now()); d > 0 {
		p.opts.Clock.AfterFunc(d, func() { go p.ready(id, bt.claim.Name) })
		return
	}
	p.ready(id, bt.claim.Name)
}

// ready is the instance's kubelet reporting its Node Ready, and the node
// lifecycle controller then lifting the not-ready taint the API server put
// on it at registration.
func (p *Provider) ready(id, name string) {
	p.mu.Lock()
	simID, ok := p.simIDs[id]
	gone := !ok || p.sim.Instance(simID) == nil
	p.mu.Unlock()
	if gone {
		return
	}
	ctx := context.Background()
	// The client may read from a cache that has not seen the Node it just
	// registered, or an older version of it: read again.
	stale := func(err error) bool { return apierrors.IsConflict(err) || apierrors.IsNotFound(err) }
	err := retry.OnError(retry.DefaultBackoff, stale, func() error {
		node := &corev1.Node{}
		if err := p.client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
			return err
		}
		if node.Spec.ProviderID != id {
			return nil // another instance's Node by now
		}
		orig := node.DeepCopy()
		now := metav1.NewTime(p.opts.Clock.Now())
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: now, LastTransitionTime: now}}
		if err := p.client.Status().Patch(ctx, node, client.MergeFrom(orig)); err != nil {
			return err
		}
		var kept []corev1.Taint
		for _, t := range node.Spec.Taints {
			if t.Key != corev1.TaintNodeNotReady {
				kept = append(kept, t)
			}
		}
		if len(kept) == len(node.Spec.Taints) {
			return nil
		}
		node.Spec.Taints = kept
		return p.client.Update(ctx, node)
	})
	if err != nil {
		log.FromContext(ctx).Error(err, "making the Node of a simulated instance Ready", "providerID", id)
	}
}

func withProviderID(nc *v1.NodeClaim, id string) *v1.NodeClaim {
	out := nc.DeepCopy()
	out.Status.ProviderID = id
	return out
}

// nodeFor is the Node a kubelet on the claim's instance would register:
// named for the claim, its labels, taints (startup ones and Joiner's
// unregistered taint too, until the claim registers it), capacity and
// allocatable.
func nodeFor(nc *v1.NodeClaim) *corev1.Node {
	labels := map[string]string{v1.LabelHostname: nc.Name, "type": "kwok"}
	for k, v := range nc.Labels {
		labels[k] = v
	}
	taints := append(append(append([]corev1.Taint(nil), nc.Spec.Taints...), nc.Spec.StartupTaints...), v1.UnregisteredTaint)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: nc.Name, Labels: labels, Annotations: map[string]string{AnnotationNode: "fake"}},
		Spec:       corev1.NodeSpec{ProviderID: nc.Status.ProviderID, Taints: taints},
		Status:     corev1.NodeStatus{Capacity: nc.Status.Capacity, Allocatable: nc.Status.Allocatable},
	}
}

// Delete removes the claim's instance: its Node (the simulated EC2's
// record of it too, when this process launched it, and its boot).
func (p *Provider) Delete(ctx context.Context, nc *v1.NodeClaim) error {
	in, err := p.Get(ctx, nc.Status.ProviderID)
	if err != nil {
		return err
	}
	p.mu.Lock()
	if simID, ok := p.simIDs[in.Status.ProviderID]; ok { // unknown to a restarted process: fine
		_ = p.sim.Delete(ctx, withProviderID(nc, simID))
		delete(p.simIDs, in.Status.ProviderID)
	}
	if bt := p.booting[nc.Status.ProviderID]; bt != nil {
		for _, t := range bt.timers {
			t.Stop()
		}
		delete(p.booting, nc.Status.ProviderID)
	}
	p.mu.Unlock()
	return client.IgnoreNotFound(p.client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: in.Name}}))
}

// Get returns the claim of an instance: its Node, read from the API
// server (what the provider chose when it launched is kept nowhere else,
// so a restarted controller finds the same instances).
func (p *Provider) Get(ctx context.Context, providerID string) (*v1.NodeClaim, error) {
	all, err := p.List(ctx)
	if err != nil {
		return nil, err
	}
	for _, nc := range all {
		if nc.Status.ProviderID == providerID {
			return nc, nil
		}
	}
	return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("no kwok instance %s", providerID))
}

// List returns a claim for every instance: every Node annotated for kwok,
// and the instances this process launched whose Node has not registered.
func (p *Provider) List(ctx context.Context) ([]*v1.NodeClaim, error) {
	p.mu.Lock()
	var out []*v1.NodeClaim
	for _, bt := range p.booting {
		out = append(out, bt.claim.DeepCopy())
	}
	p.mu.Unlock()
	var nodes corev1.NodeList
	if err := p.client.List(ctx, &nodes); err != nil {
		return nil, err
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if _, ok := n.Annotations[AnnotationNode]; !ok || n.Spec.ProviderID == "" || p.isBooting(n.Spec.ProviderID) {
			continue
		}
		nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels, CreationTimestamp: n.CreationTimestamp}}
		nc.Status.ProviderID = n.Spec.ProviderID
		nc.Status.Capacity, nc.Status.Allocatable = n.Status.Capacity, n.Status.Allocatable
		out = append(out, nc)
	}
	return out, nil
}

func (p *Provider) isBooting(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.booting[id] != nil
}

// GetInstanceTypes returns what a NodePool may launch.
func (p *Provider) GetInstanceTypes(ctx context.Context, np *v1.NodePool) ([]*cloudprovider.InstanceType, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sim.GetInstanceTypes(ctx, np)
}

// Version changes whenever the offerings' availability does (an
// insufficient-capacity error learned, or forgotten after 3 minutes).
func (p *Provider) Version() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sim.Version()
}

// SetCapacity says whether the cloud has capacity for an offering (for
// tests and fault injection: a launch that needs it fails as EC2 would).
func (p *Provider) SetCapacity(instanceType, zone, capacityType string, available bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sim.SetCapacity(instanceType, zone, capacityType, available)
}

// Interruptions are the notices Interrupt sends.
func (p *Provider) Interruptions() <-chan cloudprovider.Interruption { return p.interruptions }

// Interrupt sends a spot interruption notice for an instance, as EC2 does
// two minutes before it reclaims one, and marks its offering unavailable
// for a while, as the AWS provider does, so replacements go elsewhere.
// kwok's instances stay until their claim is deleted.
func (p *Provider) Interrupt(ctx context.Context, providerID string) error {
	in, err := p.Get(ctx, providerID)
	if err != nil {
		return err
	}
	if ct := in.Labels[v1.LabelCapacityType]; ct != v1.CapacityTypeSpot {
		return fmt.Errorf("instance %s is %s: only spot instances are interrupted", providerID, ct)
	}
	p.mu.Lock()
	p.sim.MarkUnavailable(in.Labels[v1.LabelInstanceType], in.Labels[v1.LabelZone], v1.CapacityTypeSpot)
	p.mu.Unlock()
	select {
	case p.interruptions <- cloudprovider.Interruption{ProviderID: providerID, Kind: cloudprovider.SpotInterruption}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// interruptAfter sends the instance a spot interruption notice wait after
// it runs (launch after now), and reclaims it simcloud.InterruptionNotice
// later — unless it is gone by then. A negative wait: never.
func (p *Provider) interruptAfter(id string, launch, wait time.Duration) {
	if wait < 0 {
		return
	}
	// Off the clock's goroutine (see capacityAt): both write to the API.
	p.opts.Clock.AfterFunc(launch+wait, func() {
		go func() {
			if !p.running(id) {
				return
			}
			ctx := context.Background()
			if err := p.Interrupt(ctx, id); err != nil {
				log.FromContext(ctx).Error(err, "interrupting a simulated spot instance", "providerID", id)
				return
			}
			p.opts.Clock.AfterFunc(simcloud.InterruptionNotice, func() { go p.reclaim(id) })
		}()
	})
}

// running reports whether this process's simulated EC2 still runs the
// instance.
func (p *Provider) running(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	simID, ok := p.simIDs[id]
	return ok && p.sim.Instance(simID) != nil
}

// reclaim is EC2 taking an interrupted spot instance back: it and its Node
// are gone, drained or not (the controller deleted its claim at the
// notice, and has drained it as far as it got).
func (p *Provider) reclaim(id string) {
	if !p.running(id) {
		return
	}
	ctx := context.Background()
	in, err := p.Get(ctx, id)
	if err == nil {
		err = p.Delete(ctx, in)
	}
	if err != nil && !cloudprovider.IsNodeClaimNotFoundError(err) {
		log.FromContext(ctx).Error(err, "reclaiming a simulated spot instance", "providerID", id)
	}
}

// IsDrifted: kwok instances have no image to drift from.
func (p *Provider) IsDrifted(context.Context, *v1.NodeClaim) (cloudprovider.DriftReason, error) {
	return "", nil
}

// RepairPolicies are upstream's AWS provider's (see
// cloudprovider.AWSRepairPolicies): kwok's nodes stand in for EC2's.
func (p *Provider) RepairPolicies() []cloudprovider.RepairPolicy {
	return cloudprovider.AWSRepairPolicies()
}
